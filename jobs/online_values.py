"""Keep the online store fresh: each key's latest window values in PostgreSQL, one row per (key, window).

    python -m jobs.online_values --lakehouse lakehouse --date 2025-01-27 --config pipeline.yaml
    python -m jobs.online_values --get user-17 [--get user-18 ...] [--window 7d] --config pipeline.yaml
    python -m jobs.online_values --get '["u00042","DE"]' --config pipeline.yaml   # a composite key

A load makes a day's ``window_snapshot`` (each key's state at the day's last window end) the
store's rows: COPY into a temporary table, one ``UPDATE`` of the keys the store holds, one
``INSERT`` of the others, one ``DELETE`` of the keys whose window emptied, in one transaction, so a reader sees a day whole or not at all. The
store moves only forward in time: ``<table>_as_of`` holds each window's latest day loaded, and a
load of an older day leaves that window alone (re-running an older day is harmless); the same
day replaces it (a late firing's new values). No row means no events in the window. Under a
composite key, ``key`` is its JSON array and each of its fields has a column of its own. Session
and count windows are not served: their values at an instant are their carried state's (open
sessions, a key's last events), which no snapshot holds.

The load needs no Spark: a day's snapshot is one columnar read with delta-rs, and COPY is
PostgreSQL's bulk path. The password comes from ``PANES_ONLINE_PASSWORD``, never from the
configuration or the command line.
"""

from __future__ import annotations

import io
import json
import math
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any
from urllib.parse import urlsplit

import psycopg2
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
from psycopg2 import sql

from jobs.cli import EXIT_BAD_ARGUMENTS, EXIT_MISSING_INPUT, documented_parser, group_arguments, parsed
from jobs.errors import MissingInputError, MissingTableError
from jobs.storage import commits, delta_io
from jobs.tables import WINDOW_SNAPSHOT
from windowing_core.config import PipelineConfig
from windowing_core.online import PASSWORD_VARIABLE, OnlineSpec
from windowing_core.window_spec import WindowSpec, from_epoch_seconds, to_epoch_seconds

DAY = timedelta(days=1)
_POSTGRES_TYPES = {"bigint": "bigint", "int": "integer", "double": "double precision", "float": "real",
                   "string": "text", "boolean": "boolean", "timestamp": "timestamp with time zone", "date": "date",
                   "binary": "bytea"}


class OnlineStoreError(Exception):
    """The online store cannot be reached, or a statement failed: one line, no credential."""


class StoreMismatchError(OnlineStoreError):
    """The store's table has columns this configuration does not write (another configuration's)."""


def postgres_type(ddl: str) -> str:
    """The PostgreSQL type of a Spark DDL type: decimals keep their precision and scale, arrays
    and maps are ``jsonb`` (an application reads them as JSON)."""
    if ddl.startswith("decimal"):
        return ddl.replace("decimal", "numeric").replace(" ", "")
    if ddl.startswith(("array<", "map<", "struct<")):
        return "jsonb"
    return _POSTGRES_TYPES[ddl]


def store_columns(config: PipelineConfig) -> list[tuple[str, str]]:
    """The store's columns with their PostgreSQL types, in stored order: (key, window) is the
    primary key; a composite key's fields follow ``key`` (its JSON array), one column each, for
    an application's ``WHERE user_id = ... AND country = ...``."""
    return [("key", "text"), *[(f, "text") for f in config.key_fields], ("window", "text"),
            ("window_start", "timestamp with time zone"),
            ("window_end", "timestamp with time zone"), ("as_of", "timestamp with time zone"),
            ("event_count", "bigint"), *[(a.name, postgres_type(a.output_type)) for a in config.aggregations]]


def served_windows(config: PipelineConfig) -> tuple[WindowSpec, ...]:
    """The windows the store holds: every one with a snapshot (sliding, tumbling, cumulating)."""
    return config.windows


def day_as_of(spec: WindowSpec, day: date) -> datetime:
    """The instant ``window_snapshot`` of ``day`` is of for this window: the day's last window end."""
    midnight = to_epoch_seconds(datetime(day.year, day.month, day.day, tzinfo=timezone.utc) + DAY)
    return from_epoch_seconds(spec.end_at_or_after(midnight) - spec.every)


# -- the day's rows, as PostgreSQL's COPY reads them ----------------------------------------------


@dataclass
class DaySnapshot:
    """A day's ``window_snapshot`` of the served windows: each row's key, window and values, and
    per window the one window ``[window_start, as_of)`` every row of it is of (the day's last
    window end: ``ends``). The times are per window, not per row, so they are not copied per row."""

    day: date
    rows: pa.Table
    ends: dict[str, tuple[datetime, datetime]]

    def of(self, windows: list[WindowSpec]) -> DaySnapshot:
        names = pa.array([w.name for w in windows], pa.string())
        return DaySnapshot(self.day, self.rows.filter(pc.is_in(self.rows["window"], value_set=names)),
                           {w.name: self.ends[w.name] for w in windows})


def value_columns(config: PipelineConfig) -> list[str]:
    """The columns copied per row: the key, the window, a composite key's fields and the values."""
    return ["key", "window", *config.key_fields, "event_count", *[a.name for a in config.aggregations]]


def stored_key(config: PipelineConfig, text: str) -> str:
    """A key as the store holds it: itself, or for a composite key its JSON array, as ingest
    writes it (``["u00042","DE"]``, whatever spacing it is given in); a one-line ``ValueError``
    for anything else."""
    if not config.key_fields:
        return text
    fields = ", ".join(config.key_fields)
    try:
        values = json.loads(text)
    except ValueError:
        values = None
    if not isinstance(values, list) or len(values) != len(config.key_fields) or not all(
            isinstance(v, str) for v in values):
        example = json.dumps([f"<{f}>" for f in config.key_fields], separators=(",", ":"))
        raise ValueError(f"the key is {fields}: give it as a JSON array of {len(config.key_fields)} strings "
                         f"({example}), got {text!r}")
    return json.dumps(values, separators=(",", ":"), ensure_ascii=False)


def read_snapshot(lakehouse: str, day: date, config: PipelineConfig) -> DaySnapshot:
    """``window_snapshot`` of ``day``; a window with more than one ``(window_start, as_of)`` in
    it is refused (panes writes one per window and day)."""
    path = WINDOW_SNAPSHOT.path(lakehouse)
    rows = delta_io.read_arrow(path, partition_filters=[("date", "=", day.isoformat())],
                               columns=[*value_columns(config), "window_start", "as_of"])
    if rows.num_rows == 0 and not commits.wrote_day(path, day):
        # Loading a day never materialised would empty the store and mark it as of that day.
        raise MissingInputError(f"window_snapshot holds no rows of {day} and no run wrote {day}: materialise the "
                                f"windows of {day} first")
    found = {r["window"]: r for r in rows.group_by("window").aggregate(
        [(c, f) for c in ("window_start", "as_of") for f in ("min", "max")]).to_pylist()}
    ends = {}
    for w in served_windows(config):
        if w.name not in found:  # no key holds events: the day's end all the same
            as_of = day_as_of(w, day)
            ends[w.name] = (from_epoch_seconds(w.window_start(to_epoch_seconds(as_of))), as_of)
            continue
        r = found[w.name]
        if (r["window_start_min"], r["as_of_min"]) != (r["window_start_max"], r["as_of_max"]):
            raise OnlineStoreError(f"window_snapshot of {day} holds rows of window {w.name} as of "
                                   f"{r['as_of_min']} .. {r['as_of_max']}: not one day's snapshot as panes writes it")
        ends[w.name] = (r["window_start_min"], r["as_of_min"])
    return DaySnapshot(day, rows.select(value_columns(config)), ends).of(list(served_windows(config)))


def _json(value: Any) -> str:
    """JSON for jsonb: decimals as exact numbers, non-finite doubles as PostgreSQL's to_jsonb
    spells them (``"NaN"``), times in ISO 8601, a map's keys as text."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, Decimal)):
        return str(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else json.dumps("NaN" if math.isnan(value) else
                                                                   ("Infinity" if value > 0 else "-Infinity"))
    if isinstance(value, (datetime, date)):
        return json.dumps(value.isoformat())
    if isinstance(value, bytes):
        return json.dumps(value.hex())
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(_text(k))}:{_json(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_json(v) for v in value) + "]"
    return json.dumps(value)


def _text(key: Any) -> str:
    """A map's key as a JSON object's: text (times in ISO 8601)."""
    return key.isoformat() if isinstance(key, (datetime, date)) else str(key)


def _copy_text(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """A column as COPY's CSV reads it: nested values as JSON, bytes as bytea's hex; the rest as
    Arrow writes them (doubles in their shortest exact spelling, times with their zone)."""
    kind = column.type
    if pa.types.is_map(kind):  # Arrow gives a map as its (key, value) pairs
        return pa.chunked_array([pa.array([None if v is None else _json({_text(k): x for k, x in v})
                                           for v in column.to_pylist()], pa.string())])
    if pa.types.is_list(kind) or pa.types.is_struct(kind) or pa.types.is_large_list(kind):
        return pa.chunked_array([pa.array([None if v is None else _json(v) for v in column.to_pylist()],
                                          pa.string())])
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
        return pa.chunked_array([pa.array([None if v is None else "\\x" + v.hex() for v in column.to_pylist()],
                                          pa.string())])
    return column


def copy_csv(rows: pa.Table) -> io.BytesIO:
    converted = pa.table({name: _copy_text(rows[name]) for name in rows.column_names})
    buffer = io.BytesIO()
    pacsv.write_csv(converted, buffer, pacsv.WriteOptions(include_header=False))
    buffer.seek(0)
    return buffer


# -- the database ---------------------------------------------------------------------------------


@contextmanager
def connected(spec: OnlineSpec, password: str | None = None) -> Iterator[Any]:
    """A connection to the store, with the password from ``PANES_ONLINE_PASSWORD``; an error
    that cannot connect is one line without any credential."""
    password = os.environ.get(PASSWORD_VARIABLE) if password is None else password
    try:
        connection = psycopg2.connect(spec.url, password=password or None, connect_timeout=10,
                                      application_name="panes")
    except psycopg2.OperationalError as err:
        raise OnlineStoreError(f"cannot connect to the online store {store_name(spec)}: {_first_line(err)}") from None
    try:
        yield connection
    finally:
        connection.close()


def store_name(spec: OnlineSpec) -> str:
    """The store as messages and metadata name it: host, port, database and table; no user or password."""
    parts = urlsplit(spec.url)
    return f"{parts.hostname or 'localhost'}:{parts.port or 5432}{parts.path or '/'} table {spec.table}"


def _first_line(err: Exception) -> str:
    return str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__


def _table(spec: OnlineSpec) -> sql.Composed:
    schema, table = spec.schema_and_table
    return sql.SQL(".").join([sql.Identifier(schema), sql.Identifier(table)]) if schema else sql.Identifier(table)


def _names(columns: list[tuple[str, str]]) -> sql.Composed:
    return sql.SQL(", ").join(sql.Identifier(c) for c, _ in columns)


def marks_table(spec: OnlineSpec) -> str:
    """The table beside the store that says, per window, the latest day loaded (its ``as_of``)."""
    return f"{spec.table}_as_of"


def _marks(spec: OnlineSpec) -> sql.Composed:
    return _table(OnlineSpec(spec.url, marks_table(spec)))


def ensure_tables(cursor: Any, spec: OnlineSpec, config: PipelineConfig) -> None:
    """Create the store's tables where they are missing; refuse a store whose columns this
    configuration does not write (another configuration's), before anything is written."""
    columns = store_columns(config)
    # Only where missing: CREATE, even IF NOT EXISTS, needs the right to create in the schema,
    # which a user of tables an administrator made need not have.
    cursor.execute("SELECT to_regclass(%s), to_regclass(%s)", [_table(spec).as_string(cursor),
                                                               _marks(spec).as_string(cursor)])
    table, marks = cursor.fetchone()
    if table is None:
        # Every row changes every day (its as_of at least): with half of each page free, the
        # update of a row finds room beside it and leaves the index alone (a HOT update).
        # Measured at 673,074 rows, four daily loads: the upsert took 4.6, 7.4, 9.0, 9.1 s at
        # PostgreSQL's default fill and 3.1, 2.1, 2.2, 2.3 s at half (/work/scratch/prof_online2.py).
        cursor.execute(sql.SQL("CREATE TABLE {} ({}, PRIMARY KEY (key, \"window\")) WITH (fillfactor = 50)").format(
            _table(spec), sql.SQL(", ").join(sql.SQL("{} {}").format(sql.Identifier(c), sql.SQL(t))
                                             for c, t in columns)))
    if marks is None:
        cursor.execute(sql.SQL("CREATE TABLE {} (\"window\" text PRIMARY KEY, "
                               "as_of timestamp with time zone NOT NULL, day date NOT NULL, "
                               "loaded_at timestamp with time zone NOT NULL DEFAULT now())").format(_marks(spec)))
    cursor.execute("SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute "
                   "WHERE attrelid = %s::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
                   [_table(spec).as_string(cursor)])
    held = [tuple(row) for row in cursor.fetchall()]
    if sorted(held) != sorted(columns):
        def spelled(cs: list[tuple[str, str]]) -> str:
            return ", ".join(f"{c} {t}" for c, t in cs)
        raise StoreMismatchError(f"online table {spec.table} has columns ({spelled(held)}) but this configuration "
                                 f"writes ({spelled(columns)}): drop the table, or name another online.table, "
                                 "and load the days again")


def _held_marks(cursor: Any, spec: OnlineSpec) -> dict[str, datetime]:
    cursor.execute(sql.SQL("SELECT \"window\", as_of FROM {}").format(_marks(spec)))
    return dict(cursor.fetchall())


@dataclass
class Loaded:
    day: date
    rows: int            # the day's snapshot rows of the windows loaded
    written: int         # rows inserted or replaced
    removed: int         # rows of keys whose window emptied
    windows: list[str] = field(default_factory=list)   # the windows loaded
    skipped: list[str] = field(default_factory=list)   # the windows whose store holds a later day

    def summary(self) -> str:
        later = f"; {', '.join(self.skipped)} left: the store holds a later day" if self.skipped else ""
        return (f"online_values {self.day}: {self.rows} snapshot rows, {self.written} written, "
                f"{self.removed} removed ({', '.join(self.windows) or 'no window'}){later}")


def _day_ends(snapshot: DaySnapshot) -> sql.Composed:
    """``(VALUES (window, window_start, as_of), ...) AS e``: each window's instants of the day."""
    return sql.SQL("(VALUES {}) AS e(\"window\", window_start, as_of)").format(sql.SQL(", ").join(
        sql.SQL("({}, {}::timestamptz, {}::timestamptz)").format(sql.Literal(name), sql.Literal(start),
                                                                 sql.Literal(as_of))
        for name, (start, as_of) in snapshot.ends.items()))


def _staged(cursor: Any, name: str, spec: OnlineSpec, config: PipelineConfig, snapshot: DaySnapshot) -> None:
    """A temporary table (dropped at commit) holding the snapshot's rows, loaded by COPY."""
    columns = sql.SQL(", ").join(sql.Identifier(c) for c in value_columns(config))
    cursor.execute(sql.SQL("CREATE TEMPORARY TABLE {} ON COMMIT DROP AS SELECT {} FROM {} WITH NO DATA").format(
        sql.Identifier(name), columns, _table(spec)))
    cursor.copy_expert(sql.SQL("COPY {} ({}) FROM STDIN WITH (FORMAT csv)").format(
        sql.Identifier(name), columns).as_string(cursor), copy_csv(snapshot.rows))
    cursor.execute(sql.SQL("ANALYZE {}").format(sql.Identifier(name)))


def load(lakehouse: str, day: date, config: PipelineConfig, spec: OnlineSpec, *,
         password: str | None = None) -> Loaded:
    """Make ``day``'s snapshot the store's rows, in one transaction, for every window whose store
    holds no later day. A window's rows all share the as_of of its latest day loaded, so a key
    missing from that day is empty there, and an older day has nothing to add."""
    if not served_windows(config):
        raise OnlineStoreError("the online store serves sliding, tumbling and cumulating windows: none is configured")
    snapshot = read_snapshot(lakehouse, day, config)
    values = [c for c in value_columns(config) if c not in ("key", "window")]
    target = _table(spec)
    with connected(spec, password) as connection:
        try:
            with connection, connection.cursor() as cursor:  # one transaction: committed whole or rolled back
                # Loads of one store take turns: each may create the tables, and reads and moves the
                # marks; so the update and the insert below need no ON CONFLICT.
                cursor.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [f"panes.online:{spec.table}"])
                ensure_tables(cursor, spec, config)
                marks = _held_marks(cursor, spec)
                windows = [w for w in served_windows(config)
                           if w.name not in marks or snapshot.ends[w.name][1] >= marks[w.name]]
                skipped = [w.name for w in served_windows(config) if w not in windows]
                if not windows:
                    return Loaded(day, 0, 0, 0, [], skipped)
                loading = snapshot.of(windows)
                _staged(cursor, "panes_day", spec, config, loading)
                times = sql.SQL("window_start = e.window_start, window_end = e.as_of, as_of = e.as_of")
                # Updating the keys the store holds by a join, then inserting the others, took 2.2 s
                # at 673,074 rows where INSERT ... ON CONFLICT took 4.2 s (prof_online2.py).
                cursor.execute(sql.SQL(
                    "UPDATE {target} AS t SET {times}, {values} FROM panes_day d JOIN {ends} USING (\"window\") "
                    "WHERE t.key = d.key AND t.\"window\" = d.\"window\" AND t.as_of <= e.as_of").format(
                    target=target, times=times, ends=_day_ends(loading),
                    values=sql.SQL(", ").join(sql.SQL("{0} = d.{0}").format(sql.Identifier(c)) for c in values)))
                written = cursor.rowcount
                cursor.execute(sql.SQL(
                    "INSERT INTO {target} (key, \"window\", window_start, window_end, as_of, {names}) "
                    "SELECT d.key, d.\"window\", e.window_start, e.as_of, e.as_of, {d_values} "
                    "FROM panes_day d JOIN {ends} USING (\"window\") WHERE NOT EXISTS "
                    "(SELECT 1 FROM {target} t WHERE t.key = d.key AND t.\"window\" = d.\"window\")").format(
                    target=target, ends=_day_ends(loading), names=sql.SQL(", ").join(map(sql.Identifier, values)),
                    d_values=sql.SQL(", ").join(sql.SQL("d.{}").format(sql.Identifier(c)) for c in values)))
                written += cursor.rowcount
                cursor.execute(sql.SQL(
                    "DELETE FROM {target} AS t USING {ends} WHERE t.\"window\" = e.\"window\" "
                    "AND t.as_of <= e.as_of AND NOT EXISTS "
                    "(SELECT 1 FROM panes_day d WHERE d.key = t.key AND d.\"window\" = t.\"window\")").format(
                    target=target, ends=_day_ends(loading)))
                removed = cursor.rowcount
                cursor.execute(sql.SQL(
                    "INSERT INTO {marks} (\"window\", as_of, day) SELECT \"window\", as_of, {day} FROM {ends} "
                    "ON CONFLICT (\"window\") DO UPDATE SET as_of = EXCLUDED.as_of, day = EXCLUDED.day, "
                    "loaded_at = now()").format(marks=_marks(spec), day=sql.Literal(day), ends=_day_ends(loading)))
        except psycopg2.Error as err:
            raise OnlineStoreError(f"loading {day} into the online store {store_name(spec)} failed: "
                                   f"{_first_line(err)} (a load is one transaction: the store holds the day "
                                   "whole or not at all, and running it again converges)") from None
    return Loaded(day, loading.rows.num_rows, written, removed, [w.name for w in windows], skipped)


def lookup(spec: OnlineSpec, config: PipelineConfig, key: str | list[str], window: str | None = None, *,
           password: str | None = None) -> list[dict[str, Any]]:
    """The current values of a key (or of several, in one query), one dict per key and window
    (every served window, or ``window``), with their ``as_of``: what an application reads with
    ``SELECT * FROM window_values WHERE key = ANY(%s)``. A key without events in a window has no row."""
    columns = store_columns(config)
    keys = [key] if isinstance(key, str) else list(key)
    where = sql.SQL("key = ANY(%s)") + (sql.SQL(" AND \"window\" = %s") if window is not None else sql.SQL(""))
    with connected(spec, password) as connection, connection.cursor() as cursor:
        try:
            cursor.execute(sql.SQL("SELECT {} FROM {} WHERE {} ORDER BY key, \"window\"").format(
                _names(columns), _table(spec), where), [keys, *([window] if window is not None else [])])
        except psycopg2.errors.UndefinedTable:
            raise OnlineStoreError(f"the online store {store_name(spec)} has no table yet: load a day first") from None
        except psycopg2.Error as err:
            raise OnlineStoreError(f"reading the online store {store_name(spec)} failed: {_first_line(err)}") from None
        return [dict(zip([c for c, _ in columns], row)) for row in cursor.fetchall()]


@dataclass
class Comparison:
    """How the store's rows compare with ``window_snapshot`` of one day."""

    day: date
    snapshot_rows: int
    equal: int
    superseded: int      # rows of windows whose store holds a later day: not differences
    differing: list[tuple[str, str, str]]   # (key, window, how), a few
    differing_count: int

    @property
    def ok(self) -> bool:
        return self.differing_count == 0


def compare(lakehouse: str, day: date, config: PipelineConfig, spec: OnlineSpec, *, shown: int = 5,
            password: str | None = None) -> Comparison:
    """Compare the store with ``day``'s snapshot, value by value, for each window whose latest
    day loaded is ``day``: every snapshot row must be the store's row of its key, and every
    store row of the window a snapshot row. A window the store holds a later day of is
    superseded; one it holds an earlier day of (or none) differs in every row."""
    snapshot = read_snapshot(lakehouse, day, config)
    compared = [c for c in value_columns(config) if c not in ("key", "window")]
    with connected(spec, password) as connection:
        try:
            with connection, connection.cursor() as cursor:
                ensure_tables(cursor, spec, config)
                marks = _held_marks(cursor, spec)
                later = [w for w in served_windows(config)
                         if w.name in marks and marks[w.name] > snapshot.ends[w.name][1]]
                windows = [w for w in served_windows(config) if w not in later]
                superseded = snapshot.of(later).rows.num_rows if later else 0
                found: dict[str, tuple[int, list]] = {}
                if windows:
                    expected = snapshot.of(windows)
                    _staged(cursor, "panes_expected", spec, config, expected)
                    cursor.execute(sql.SQL(
                        "WITH states AS ("
                        " SELECT d.key, d.\"window\", CASE WHEN t.key IS NULL THEN 'missing'"
                        "  WHEN t.as_of <> e.as_of THEN 'of another day'"
                        "  WHEN ROW(t.window_start, t.window_end, {t_values}) IS DISTINCT FROM"
                        "   ROW(e.window_start, e.as_of, {d_values}) THEN 'different values'"
                        "  ELSE 'equal' END AS how"
                        " FROM panes_expected d JOIN {ends} USING (\"window\")"
                        " LEFT JOIN {target} t ON t.key = d.key AND t.\"window\" = d.\"window\""
                        " UNION ALL"
                        " SELECT t.key, t.\"window\", 'not in the snapshot' FROM {target} t"
                        " JOIN {ends} ON t.\"window\" = e.\"window\" WHERE NOT EXISTS"
                        "  (SELECT 1 FROM panes_expected d WHERE d.key = t.key AND d.\"window\" = t.\"window\"))"
                        " SELECT how, count(*), (array_agg(ARRAY[key, \"window\"] ORDER BY key, \"window\"))[1:{shown}]"
                        " FROM states GROUP BY how").format(
                        t_values=sql.SQL(", ").join(sql.SQL("t.{}").format(sql.Identifier(c)) for c in compared),
                        d_values=sql.SQL(", ").join(sql.SQL("d.{}").format(sql.Identifier(c)) for c in compared),
                        target=_table(spec), ends=_day_ends(expected), shown=sql.Literal(shown)))
                    found = {how: (count, samples) for how, count, samples in cursor.fetchall()}
                connection.rollback()  # nothing to keep: the staged rows go
        except psycopg2.Error as err:
            raise OnlineStoreError(f"comparing the online store {store_name(spec)} with {day}'s snapshot failed: "
                                   f"{_first_line(err)}") from None
    bad = {how: v for how, v in found.items() if how != "equal"}
    differing = [(key, window, how) for how, (_, samples) in sorted(bad.items()) for key, window in samples][:shown]
    return Comparison(day, snapshot.rows.num_rows, found.get("equal", (0, []))[0], superseded, differing,
                      sum(count for count, _ in bad.values()))


def main(argv: list[str] | None = None) -> int:
    parser = documented_parser(__doc__, prog="python -m jobs.online_values")
    parser.add_argument("--config", required=True, help="pipeline configuration YAML with an online: section")
    parser.add_argument("--lakehouse", help="root folder (or URI) of the Delta tables (for a load)")
    parser.add_argument("--date", help="load this day's snapshot (YYYY-MM-DD)")
    parser.add_argument("--until", help="last day of a range: its snapshot is loaded, the latest of the range")
    parser.add_argument("--get", metavar="KEY", action="append",
                        help="print a key's current values as JSON lines (repeat for several keys)")
    parser.add_argument("--window", help="with --get: only this window")
    group_arguments(parser)
    args, config = parsed(parser, argv)
    if config.online is None:
        parser.error(f"{args.config} has no online: section naming the store (online: {{url: postgresql://...}})")
    if (args.get is None) == (args.date is None):
        parser.error("give --date (with --lakehouse) to load, or --get KEY to read")
    try:
        if args.get is not None:
            if args.window is not None and args.window not in [w.name for w in served_windows(config)]:
                parser.error(f"--window {args.window} is not a served window: "
                             f"{', '.join(w.name for w in served_windows(config))}")
            try:
                keys = [stored_key(config, k) for k in args.get]
            except ValueError as err:
                parser.error(f"--get: {err}")
            for row in lookup(config.online, config, keys, args.window):
                print(_json(row))
            return 0
        if args.lakehouse is None:
            parser.error("--date needs --lakehouse")
        try:
            first, day = date.fromisoformat(args.date), date.fromisoformat(args.until or args.date)
        except ValueError:
            parser.error(f"not a date (YYYY-MM-DD): --date {args.date!r} --until {args.until!r}")
        if day < first:
            parser.error(f"--until {day} is before --date {first}")
        print(load(args.lakehouse, day, config, config.online).summary())
        return 0
    except StoreMismatchError as err:
        print(f"{parser.prog}: error: bad configuration for this store: {err}", file=sys.stderr)
        return EXIT_BAD_ARGUMENTS
    except (OnlineStoreError, MissingInputError, MissingTableError) as err:
        print(f"{parser.prog}: error: {err}", file=sys.stderr)
        return EXIT_MISSING_INPUT


if __name__ == "__main__":
    sys.exit(main())
