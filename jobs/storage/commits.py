"""What the log's commit entries say about the writes that made a table, with no data read:
the stamp a job's configuration left (``Target.stamp``), the days a routed write covered, and
a write that committed some of its tables and not the others (a run killed between commits).

A job writing several tables commits them one after the other, each with the same write id in
its user metadata, so the newest ids of tables written together agree unless a run stopped
between them."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import date

from jobs.errors import IncompleteWriteError, StampMismatchError
from jobs.storage.delta_io import open_table, table_exists


def commit_stamp(path: str, key: str) -> str | None:
    """The value of ``key`` in the stamp of the table's newest write that carries one
    (``Target.stamp``), among its last 50 commits; None where none does (a table written before
    stamps, or by another tool)."""
    for commit in open_table(path).history(limit=50):
        user = user_metadata(commit)
        if key in user:
            return str(user[key])
    return None


def require_stamp(path: str, stamp: dict[str, str]) -> None:
    """Refuse a table whose newest stamp differs from ``stamp`` (keys it lacks pass)."""
    for key, value in stamp.items():
        held = commit_stamp(path, key)
        if held is not None and held != str(value):
            raise StampMismatchError(
                f"{path} holds rows made with {key} {held}, and this job's is {value}: a table holds "
                f"rows of one {key}. To change it, move the table (and the tables made from it) aside "
                f"and materialise every partition again (a backfill)")


def wrote_day(path: str, day: date) -> bool:
    """Whether a routed write of the table's history says it wrote ``day`` (its run's days,
    ``first`` .. ``last``): a day that holds no rows is told apart from a day never written.
    Reads the whole log's commit entries (the data is not read); a day whose commits the log's
    retention dropped is not found."""
    return any(m.get("first", "9") <= day.isoformat() <= m.get("last", "")
               for m in map(user_metadata, open_table(path).history()))


@dataclass(frozen=True)
class UnfinishedWrite:
    """A routed write that committed some of its tables and not the others: ``reached`` hold
    its rows of days ``first .. last`` (of ``interval`` within them, for a run below a day),
    ``missed`` an earlier run's (table names)."""

    reached: tuple[str, ...]
    missed: tuple[str, ...]
    first: str | None
    last: str | None
    interval: str | None = None

    def covered_by(self, first: date, last: date, interval: str | None = None) -> bool:
        """Whether a run of ``first .. last`` (of ``interval`` within them) rewrites every row of
        this write, in every table: a run of its days, or of its own interval."""
        if interval is not None:
            return interval == self.interval
        return bool(self.first and self.last and first.isoformat() <= self.first and self.last <= last.isoformat())

    def holds(self, day: date) -> bool:
        """Whether ``day``'s partitions are torn (all days, where the write did not say its days)."""
        return not (self.first and self.last) or self.first <= day.isoformat() <= self.last

    def __str__(self) -> str:
        days = f"days {self.first} .. {self.last}" if self.first else "its days"
        if self.interval:
            days = f"{self.interval} (or its day)"
        return (f"{', '.join(self.reached)} holds a write whose {', '.join(self.missed)} commit never landed (a run "
                f"stopped between its commits): run {days} again, alone or in a range that covers them, before "
                "other days")


def unfinished_write(paths: list[str]) -> UnfinishedWrite | None:
    """The write that reached only some of the tables at ``paths``, or None where every write
    newest in one of them reached all of its tables (or a table carries no write id).

    A job writing several tables commits each on its own (side by side); killed before all have
    committed, it leaves them from different runs, whichever committed first. A write names the
    tables it commits (``tables``; a run below a day leaves the day's snapshot alone): it is
    unfinished where one of those holds an older write than it, or none. A write naming none (an
    older layout) is judged against every table made. Answered from the last 50 commits of each
    log: no data is read.
    """
    newest = {}
    for path in paths:
        if not table_exists(path):
            continue
        for commit in open_table(path).history(limit=50):
            meta = user_metadata(commit)
            if "writeId" in meta:
                newest[table_name(path)] = (commit.get("timestamp") or 0, meta)
                break
        else:
            return None
    held = {name: meta["writeId"] for name, (_, meta) in newest.items()}

    def missed(at: int, meta: dict) -> tuple[str, ...]:
        tables = meta.get("tables", list(newest))
        return tuple(sorted(t for t in tables if t in map(table_name, paths) and (
            t not in newest or held[t] != meta["writeId"] and newest[t][0] < at)))

    torn = [(at, meta) for at, meta in newest.values() if missed(at, meta)]
    if not torn:
        return None
    at, unfinished = max(torn, key=lambda pair: pair[0])
    reached = tuple(sorted(t for t, write in held.items() if write == unfinished["writeId"]))
    return UnfinishedWrite(reached, missed(at, unfinished), unfinished.get("first"), unfinished.get("last"),
                           unfinished.get("interval"))


def table_name(path: str) -> str:
    """A table's name as a routed write's commits list it (``tables``): the last part of its path."""
    return os.path.basename(path.rstrip("/"))


def require_whole_writes(paths: list[str], first: date, last: date, interval: str | None = None) -> None:
    """Refuse to run days ``first .. last`` over tables one routed write reached only in part
    (``unfinished_write``): a next run reading them would continue from stale state (the window
    changes of a day beside the day before's snapshot) with exit 0. Only a run whose days cover
    the unfinished write's days (or, below a day, its interval), which rewrites them all, may go on."""
    torn = unfinished_write(paths)
    if torn is not None and not torn.covered_by(first, last, interval):
        raise IncompleteWriteError(str(torn))


def user_metadata(commit: dict) -> dict:
    try:
        user = json.loads(commit.get("userMetadata") or "null")
    except ValueError:
        return {}
    return user if isinstance(user, dict) else {}
