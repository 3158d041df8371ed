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

import sys
from dataclasses import dataclass, field
from datetime import date
from typing import Any

import psycopg2
from psycopg2 import sql

from jobs.cli import EXIT_BAD_ARGUMENTS, EXIT_MISSING_INPUT, documented_parser, group_arguments, parsed
from jobs.errors import MissingInputError, MissingTableError, OnlineStoreError, StoreMismatchError
from jobs.online.day_snapshot import (
    DaySnapshot, copy_csv, jsonb_text, read_snapshot, served_windows, stored_key, value_columns,
)
from jobs.online.postgres import (
    connected, ensure_tables, first_line, held_marks, identifiers, marks_identifier, store_columns, store_name,
    table_identifier,
)
from windowing_core.config import PipelineConfig
from windowing_core.online import OnlineSpec


# -- the day's rows, as PostgreSQL's COPY reads them ----------------------------------------------


# -- the database ---------------------------------------------------------------------------------


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
        sql.Identifier(name), columns, table_identifier(spec)))
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
    target = table_identifier(spec)
    with connected(spec, password) as connection:
        try:
            with connection, connection.cursor() as cursor:  # one transaction: committed whole or rolled back
                # Loads of one store take turns: each may create the tables, and reads and moves the
                # marks; so the update and the insert below need no ON CONFLICT.
                cursor.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [f"panes.online:{spec.table}"])
                ensure_tables(cursor, spec, config)
                marks = held_marks(cursor, spec)
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
                    "loaded_at = now()").format(marks=marks_identifier(spec), day=sql.Literal(day),
                                                ends=_day_ends(loading)))
        except psycopg2.Error as err:
            raise OnlineStoreError(f"loading {day} into the online store {store_name(spec)} failed: "
                                   f"{first_line(err)} (a load is one transaction: the store holds the day "
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
                identifiers(columns), table_identifier(spec), where), [keys, *([window] if window is not None else [])])
        except psycopg2.errors.UndefinedTable:
            raise OnlineStoreError(f"the online store {store_name(spec)} has no table yet: load a day first") from None
        except psycopg2.Error as err:
            raise OnlineStoreError(f"reading the online store {store_name(spec)} failed: {first_line(err)}") from None
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
                marks = held_marks(cursor, spec)
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
                        target=table_identifier(spec), ends=_day_ends(expected), shown=sql.Literal(shown)))
                    found = {how: (count, samples) for how, count, samples in cursor.fetchall()}
                connection.rollback()  # nothing to keep: the staged rows go
        except psycopg2.Error as err:
            raise OnlineStoreError(f"comparing the online store {store_name(spec)} with {day}'s snapshot failed: "
                                   f"{first_line(err)}") from None
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
                print(jsonb_text(row))
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
