"""Errors a job reports as one line with its own exit code (``jobs.cli``).

They live in a module of their own, never run as ``__main__``: ``python -m jobs.ingest_events``
runs that file as ``__main__``, and a class defined there is not the class ``jobs.cli`` imports
from ``jobs.ingest_events``, so a missing landing folder escaped as a traceback.
"""


class MissingInputError(Exception):
    """An input of the day (a landing folder, a day's partials) that should exist does not."""
