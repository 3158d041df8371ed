"""Ingest's parts: where events come from (landing folders by arrival day, or a table with an
arrival column), how a line becomes a typed event, and why a record is quarantined."""
