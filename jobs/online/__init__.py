"""The online store: a day's window snapshot as PostgreSQL rows (``day_snapshot``) and the store's
tables (``postgres``); ``jobs.online_values`` loads, reads and compares."""
