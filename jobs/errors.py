"""Every error a job reports as one line with its own exit code (``jobs.cli``), in one place.

They live in a module of their own, never run as ``__main__``: ``python -m jobs.ingest_events``
runs that file as ``__main__``, and a class defined there is not the class ``jobs.cli`` imports
from ``jobs.ingest_events``, so a missing landing folder escaped as a traceback.
"""

from __future__ import annotations

import os


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


class MissingJarsError(RuntimeError):
    """The jars are not in the local Maven repository: the setup did not run, or failed."""
