"""Where events come from: landing folders of files by arrival day, or a table with an
arrival column."""
