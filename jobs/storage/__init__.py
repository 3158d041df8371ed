"""Delta tables: reading the log, replacing partitions in one commit, locks and the protocol
that finds a write a killed job left unfinished."""
