"""Writes for every panes job: delta-spark's own writer, one atomic commit per table.

A partition replace is ``mode("overwrite")`` with ``replaceWhere`` on the partition predicate, so
re-running a partition gives the same contents and a run killed part-way leaves the previous
version readable; a run below a day narrows it to its interval of a time column (``row_filters``).
Where no file of the partitions can hold a replaced row (a day's first run, an hour's first run
after the earlier hours of its day), it is an append, which gives the same table without Delta's
search for files to remove (``_appends``). On a file
system each write holds an exclusive lock on its table for its whole length (``_locked``; why,
in ``jobs.storage.delta_io``'s docstring: delta-spark's log stores are atomic only inside one driver).
What the log answers without Spark is ``jobs.storage.delta_io``'s; the locations, partition
filters and schemas reads and writes share are in ``locations``, ``filters`` and ``schemas``.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from deltalake import DeltaTable
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from jobs.errors import ConcurrentWriteError
from jobs.runtime.computed_once import computed_once
from jobs.runtime.side_by_side import side_by_side
from jobs.storage.commits import require_stamp, table_name
from jobs.storage.delta_io import file_ranges, open_table, table_exists, table_version
from jobs.storage.filters import Filter, check_filter_columns, conjunction, sql_predicate
from jobs.storage.locations import is_local, spark_path
from jobs.storage.schemas import check_compatible
from windowing_core.run_interval import as_utc

WRITER = "delta-spark"

SMALL_WRITE_ROWS = 250_000
"""A routed write of at most this many rows to a table gathers each partition's rows in one task
first (``repartition`` by the partition columns), so a day is one file, not one per task of the
computation: the demo's ingest (160,327 events over 13 days) wrote 80, 16 and 91 files and
took 4.9 s in its three writes, 10, 8 and 18 files in 1.4 s with the shuffle. Writing from one
task with no shuffle (``coalesce(1)`` of the computed rows) was measured too, in one session
(``bench.pipeline``'s jobs on one day, best of 2 or 3): faster on a day of 2,000 events (windows
2.4 s against 3.4 s), slower from 20,000 on (windows 5.2 against 3.5 s; at 150,000, 5.6 against
4.5 s). Above the limit, a partition's rows stay spread over the tasks that made them (one task
writing a day of 10^7 rows would leave every other core idle)."""


def replace_partitions(df: DataFrame, path: str, *, partition_by: list[str],
                       partition_filters: list[Filter], row_filters: list[Filter] = ()) -> dict:
    """Replace every row matching ``partition_filters`` (and ``row_filters``) with ``df``, in one
    atomic commit.

    Every row of ``df`` must fall inside the filters (an AND of partition-column filters; an
    empty list replaces the whole table): Delta checks each row against ``replaceWhere`` and
    a row outside aborts the write, committing nothing. An empty ``df`` empties the matching
    partitions. ``row_filters`` narrow the replace to rows of data columns inside those
    partitions (an hour's interval of a time column: ``filters.interval``); Delta then rewrites
    the files that hold rows on both sides. The table is created, partitioned by
    ``partition_by``, if it does not exist.
    """
    target = _Target.of(None, path, df.columns, partition_by, partition_filters, df.columns, row_filters=row_filters)
    with _locked([target.path]):
        _check_table(target, df.select(*target.columns).schema)
        return _write(df.select(*target.columns), target, {"writeId": uuid.uuid4().hex})


@dataclass(frozen=True)
class Target:
    """One table of a routed write: its path and columns, and the partitions it replaces."""

    path: str
    columns: list[str]
    partition_by: list[str]
    partition_filters: list[Filter]
    # What the rows were made with that every row of the table must share (the frames' bucket):
    # each commit carries it, and a write whose stamp differs from the table's is refused.
    stamp: dict[str, str] = field(default_factory=dict)
    # Filters on data columns narrowing the replace inside the partitions (``replace_partitions``).
    row_filters: list[Filter] = field(default_factory=list)


def replace_partitions_routed(df: DataFrame, route: str, targets: dict[str, Target], *,
                              days: tuple[date, date] | None = None, interval: str | None = None) -> dict[str, dict]:
    """``replace_partitions`` of several tables, each row to the target its ``route`` column names.

    A job whose tables are all cut from one expensive result writes them this way: ``df`` is
    computed once (``computed_once``) and each table gets its own atomic commit, side by side. One
    pass over those rows first checks that every row goes to a target and falls inside
    its partitions, so a bad row commits no table. A target no row reaches has its matching
    partitions emptied. Every commit of one call carries the same ``writeId`` in its
    ``userMetadata`` (the tables it commits, the run's ``days``, first and last, and the
    ``interval`` of a run below a day), so the tables of one run are
    recognisable as such, and a run killed between two commits shows (``require_whole_writes``).
    """
    resolved = [_Target.of(name, t.path, t.columns, t.partition_by, t.partition_filters, df.columns, t.stamp,
                           row_filters=t.row_filters)
                for name, t in targets.items()]
    write = {"writeId": uuid.uuid4().hex, "tables": [table_name(t.path) for t in resolved],
             **({"first": days[0].isoformat(), "last": days[1].isoformat()} if days else {}),
             **({"interval": interval} if interval else {})}
    with _locked([t.path for t in resolved]):
        fields = {f.name: f for f in df.schema.fields}
        opened = [_check_table(t, StructType([fields[c] for c in t.columns])) for t in resolved]
        computed = computed_once(df)
        try:
            rows = _check_routes(computed, route, resolved)
            writes = {f"write {t.name}": functools.partial(
                          _write, _gathered(computed.where(computed[route] == t.name).select(*t.columns), t,
                                            rows[t.name]), t, write, append=_appends(t, table))
                      for t, table in zip(resolved, opened, strict=True)}
            # The writes side by side: in one session, best of 4, ingest of a 2,000-event day (three
            # tables) took 2.5 and 2.7 s instead of 2.9 and 3.2 s, its windows (two) 1.9 s, not 2.1 s.
            # rows_written: the rows routed to each table; Delta's numOutputRows also counts the rows
            # outside a row filter that a rewritten file kept
            return {t.name: {**done, "rows_written": rows[t.name]}
                    for t, done in zip(resolved, side_by_side(computed.sparkSession, writes), strict=True)}
        finally:
            computed.unpersist()


@dataclass(frozen=True)
class _Target:
    """A table one write replaces partitions of, validated: ``columns`` with partitions last;
    ``filters`` what the write replaces, of which ``partitions`` are on partition columns."""

    name: str | None
    path: str
    columns: list[str]
    partition_by: list[str]
    filters: list[tuple]
    partitions: list[tuple]
    stamp: dict[str, str] = field(default_factory=dict)
    rows: list[Filter] = field(default_factory=list)  # the row filters as given (values not made text)

    @classmethod
    def of(cls, name: str | None, path: str, columns: list[str], partition_by: list[str],
           partition_filters: list[Filter], available: list[str], stamp: dict[str, str] | None = None, *,
           row_filters: list[Filter] = ()) -> _Target:
        missing = [c for c in [*columns, *partition_by] if c not in available]
        if missing:
            raise ValueError(f"columns {missing} of {path} are not columns of the data written")
        partitions, rows = conjunction(partition_filters), conjunction(list(row_filters))
        check_filter_columns(partitions, partition_by, path)
        on_partitions = sorted({c for c, _, _ in rows} & set(partition_by))
        if on_partitions:
            raise ValueError(f"row filters on {on_partitions} for {path}: these are partition columns, "
                             "filter them in partition_filters")
        unknown = sorted({c for c, _, _ in rows} - set(columns))
        if unknown:
            raise ValueError(f"row filters on {unknown} for {path}, which are not columns it writes")
        # Spark puts partition columns last when it reads; writing them last keeps one column order.
        ordered = [c for c in columns if c not in partition_by] + list(partition_by)
        return cls(name, path, ordered, list(partition_by), partitions + rows, partitions,
                   {k: str(v) for k, v in (stamp or {}).items()}, list(row_filters))


def _check_table(target: _Target, schema: StructType) -> DeltaTable | None:
    """Refuse, before anything is written, a table of other columns, partitioning or stamp; the
    table's log as opened for the check (None: no table yet)."""
    if not table_exists(target.path):
        return None
    table = open_table(target.path)
    check_compatible(table, schema, target.partition_by, target.path)
    if target.stamp:
        require_stamp(target.path, target.stamp)
    return table


def _check_routes(df: DataFrame, route: str, targets: list[_Target]) -> dict[str, int]:
    """One pass: every row goes to a target, and lies inside that target's partitions; the rows
    of each target."""
    names = [t.name for t in targets]
    outside = [F.sum(((F.col(route) == t.name) & ~F.coalesce(F.expr(sql_predicate([t.filters])), F.lit(False))
                      ).cast("long")).alias(str(i)) for i, t in enumerate(targets) if t.filters]
    counts = [F.count(F.when(F.col(route) == t.name, F.lit(1))).alias(f"rows{i}") for i, t in enumerate(targets)]
    stray = F.collect_set(F.when(~F.col(route).isin(names) | F.col(route).isNull(),
                                 F.coalesce(F.col(route), F.lit("null"))))
    result = df.agg(stray.alias("stray"), *outside, *counts).first()
    if result["stray"]:
        raise ValueError(f"rows routed by {route!r} to {sorted(result['stray'])[:5]}, which is no target of "
                         f"{names}: nothing was written")
    for i, t in enumerate(targets):
        if t.filters and result[str(i)]:
            raise ValueError(f"{result[str(i)]} rows for {t.path} fall outside the filters {t.filters}: "
                             "nothing was written")
    return {t.name: result[f"rows{i}"] for i, t in enumerate(targets)}


def _gathered(rows: DataFrame, target: _Target, count: int) -> DataFrame:
    """A small write's rows with each partition's in one task (``SMALL_WRITE_ROWS``)."""
    return rows.repartition(*target.partition_by) if target.partition_by and count <= SMALL_WRITE_ROWS else rows


def _appends(target: _Target, table: DeltaTable | None) -> bool:
    """Whether replacing ``target``'s rows may append: no file of its partitions can hold one of
    them, so the two give the same table. A replace first rebuilds the table's state with Spark
    to find the files it removes (Delta's ``replaceWhere`` runs a delete, which counts the
    table's files): a replaced day took 1.02 s, a first write 0.33 s (``python -m
    bench.first_write``, 200 rows in a table of ten days); the log answers here without Spark in
    7 to 25 ms. A replace narrowed by row filters (a run below a day) appends where the log's
    statistics put every file of its partitions outside them: an hour run for the first time,
    whose day's earlier hours all lie before it.
    Only under ``_locked`` (a local table): no other panes writer can add a file between this
    look and the commit, so ``table``, its log as ``_check_table`` opened it, is still current.
    The routed write has checked every row against the filters already (``_check_routes``), as
    ``replaceWhere`` would."""
    if table is None or not is_local(target.path):
        return False
    if target.rows:
        ranges = file_ranges(target.path, sorted({c for c, _, _ in target.rows}), partition_filters=target.partitions)
        return not any(r is None or _may_hold(r, target.rows) for r in ranges)
    return not table.file_uris(file_pruning_predicate=[target.partitions] if target.partitions else None)


_STATISTICS_SLACK = timedelta(milliseconds=1)
"""Delta keeps a timestamp column's statistics in milliseconds: a file's greatest value may lie up
to this much above the one its log says."""


def _may_hold(ranges: dict[str, tuple], filters: list[Filter]) -> bool:
    """Whether a file whose columns lie in ``ranges`` (``(least, greatest)``, from the log) may
    hold a row inside every one of ``filters``; yes where it cannot be told."""
    def utc(value):
        return as_utc(value) if isinstance(value, datetime) else value

    for column, op, value in filters:
        low, high = (utc(v) for v in ranges[column])
        value = utc(value)
        if isinstance(high, datetime):
            high += _STATISTICS_SLACK
        try:
            outside = {">=": high < value, ">": high <= value, "<": low >= value, "<=": low > value,
                       "=": not low <= value <= high}.get(op)
        except TypeError:  # a value of another type than the column's statistics
            return True
        if outside is None:  # an operator not judged here
            return True
        if outside:
            return False
    return True


def _write(df: DataFrame, target: _Target, write: dict, *, append: bool = False) -> dict:
    user_metadata = json.dumps({**write, **target.stamp})  # finds the commit, and stamps it
    writer = (df.write.format("delta").mode("append" if append else "overwrite")
              .option("userMetadata", user_metadata))
    if target.filters and not append:
        writer = writer.option("replaceWhere", sql_predicate([target.filters]))
    try:
        writer.partitionBy(*target.partition_by).save(spark_path(target.path))
    except Exception as err:  # pyspark's captured JVM errors: match on Delta's names, not classes
        text = f"{type(err).__name__}: {err}"
        if "DELTA_REPLACE_WHERE_MISMATCH" in text:
            raise ValueError(f"rows written to {target.path} fall outside the filters {target.filters}: "
                             "nothing was written") from None
        if "Concurrent" in type(err).__name__ or "DELTA_CONCURRENT" in text:
            raise ConcurrentWriteError(f"{target.path}: another write changed the partitions this one replaces "
                                       f"while it ran; nothing of this write was committed ({_first_line(err)})"
                                       ) from None
        raise
    return _written(target.path, user_metadata)


def _first_line(err: Exception) -> str:
    return (str(err).strip().splitlines() or [type(err).__name__])[0][:300]


def _written(path: str, user_metadata: str) -> dict:
    """The write's own commit, found by its userMetadata: what it wrote, at which version."""
    for commit in open_table(path).history(limit=50):
        if commit.get("userMetadata") == user_metadata:
            metrics = commit.get("operationMetrics") or {}
            return {"rows_written": int(metrics.get("numOutputRows", 0)),
                    "files_written": int(metrics.get("numFiles", 0)),
                    "writer": WRITER, "table_version": int(commit["version"])}
    # A session without panes' ``skipRecordingEmptyCommits=false`` records no commit for an
    # overwrite that neither removes nor adds a file: the partitions were empty and stay so.
    return {"rows_written": 0, "files_written": 0, "writer": WRITER, "table_version": table_version(path)}


@contextlib.contextmanager
def _locked(paths: list[str]) -> Iterator[None]:
    """Exclusive locks on the tables at ``paths`` (in one order, so two writers never deadlock),
    held until the block ends. Only file systems have them; see the module's docstring."""
    import fcntl

    with contextlib.ExitStack() as stack:
        for path in sorted({os.path.abspath(p) for p in paths if is_local(p)}):
            lock_file = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.lock")
            os.makedirs(os.path.dirname(lock_file), exist_ok=True)
            handle = stack.enter_context(open(lock_file, "a+"))
            try:
                fcntl.lockf(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                print(f"[panes] {path}: waiting for another run's write to finish", file=sys.stderr, flush=True)
                fcntl.lockf(handle, fcntl.LOCK_EX)
        yield
