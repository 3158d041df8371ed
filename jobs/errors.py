"""Every error a job reports as one line with its own exit code (``jobs.cli``), in one place.

They live in a module of their own, never run as ``__main__``: ``python -m jobs.ingest_events``
runs that file as ``__main__``, and a class defined there is not the class ``jobs.cli`` imports
from ``jobs.ingest_events``, so a missing landing folder escaped as a traceback.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager


class MissingInputError(Exception):
    """An input of the day (a landing folder, a day's partials) that should exist does not."""


class MissingTableError(Exception):
    """A job's input has not been materialised yet: a clear, one-line operator error."""

    def __init__(self, path: str):
        name = os.path.basename(str(path).rstrip("/")) or str(path)
        super().__init__(f"no Delta table at {path}: materialise {name} first")
        self.path = str(path)


class ConcurrentWriteError(Exception):
    """Another write changed what this one replaces while this one ran (Delta's conflict check)."""


class DamagedTableError(Exception):
    """A table folder whose Delta log is damaged or gone: no job may read or write it as it is."""


class IncompleteWriteError(Exception):
    """A run's routed write reached some of its tables and not the rest (killed between commits)."""


class StampMismatchError(ValueError):
    """A write or read of a table whose rows were made under another stamp (``Target.stamp``)."""


class SpineError(ValueError):
    """A spine the join cannot read as configured: one line naming the column or the field."""


class SourceError(ValueError):
    """A table source of events the ingest cannot read as configured: one line naming the column."""


class MissingJarsError(RuntimeError):
    """The jars are not in the local Maven repository: the setup did not run, or failed."""


class OnlineStoreError(Exception):
    """The online store cannot be reached, or a statement failed: one line, no credential."""


class StoreMismatchError(OnlineStoreError):
    """The store's table has columns this configuration does not write (another configuration's)."""


# Spark's words for a data file it could not read: a file that is gone, or not Parquet any more.
_FAILED_READ = re.compile(r"\[FAILED_READ_FILE\.(\w+)\] Encountered error while reading file (\S+?)\.(?=\s)")


def unreadable_table_file(err: BaseException) -> DamagedTableError | None:
    """Spark's failure to read one data file of a partitioned table, as one line naming the
    table, the partition and what to do; None for any other error.

    Delta's log lists every file of a table, so a file it lists and Spark cannot read was
    removed or changed outside Delta: nothing a rerun fixes, and 300 lines of stack trace say
    less than the table and the days to make again."""
    found = _FAILED_READ.search(str(err))
    if not found:
        return None
    condition, path = found.groups()
    parts = path.rstrip("/").split("/")
    partitions = [i for i, part in enumerate(parts) if "=" in part]
    if not partitions:  # not a table's file (a landing file, say): the error says it best
        return None
    table, partition = parts[partitions[0] - 1], "/".join(parts[partitions[0]:-1])
    state = "is missing" if condition == "FILE_NOT_EXIST" else "is damaged (Spark cannot read it as Parquet)"
    return DamagedTableError(
        f"{table}: the file {partition}/{parts[-1]} that its Delta log lists {state}: the table's "
        f"files were changed outside Delta. Materialise {table} again for {partition} (or restore the "
        f"file, or the table with Delta's RESTORE), then run this again")


@contextmanager
def table_files_checked() -> Iterator[None]:
    """Raise ``unreadable_table_file``'s one line in place of Spark's error where it applies."""
    try:
        yield
    except Exception as err:
        damaged = unreadable_table_file(err)
        if damaged is None:
            raise
        raise damaged from None

