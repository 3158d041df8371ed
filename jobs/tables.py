"""The lakehouse's tables: where each lives, how it is partitioned, and its columns.

Every job names tables through here, so a table's layout is stated once.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, timedelta

from windowing_core.aggregations import Aggregation
from windowing_core.config import PipelineConfig
from windowing_core.field_types import declared_name


@dataclass(frozen=True)
class Table:
    name: str
    partition_by: tuple[str, ...]

    def path(self, lakehouse: str) -> str:
        return f"{lakehouse.rstrip('/')}/{self.name}"


EVENTS = Table("events", ("arrival_date",))
QUARANTINE = Table("quarantine", ("arrival_date",))
# Two writers share late_events: ingest (reason beyond_allowed_lateness, a slice of arrival
# days) and the minute-partials job (reason behind_watermark, a slice of event days).
# Partitioning by the reason and both dates lets each replace exactly its own slice atomically.
LATE_EVENTS = Table("late_events", ("event_date", "arrival_date", "reason"))
MINUTE_PARTIALS = Table("minute_partials", ("event_date",))
DAILY_PARTIALS = Table("daily_partials", ("event_date",))  # per key and day: the coarser tiles
WINDOW_CHANGES = Table("window_changes", ("date",))
WINDOW_SNAPSHOT = Table("window_snapshot", ("date",))
SESSION_STATE = Table("session_state", ("date",))  # open sessions carried to the next day
COUNT_STATE = Table("count_state", ("date",))  # each key's events count windows still to fire hold
# A windows run below a day: the state at its last end of the keys it changed, for the next run
# of the day to continue from (jobs.windows.window_inputs.carried_state).
INTERVAL_STATE = Table("interval_state", ("date",))
# Frames by arrival time, for ``time: arrival`` windows: written by the partials job of the
# events' event days (so partitioned by it), and read by the day of the arrival frame.
ARRIVAL_PARTIALS = Table("arrival_partials", ("event_date", "frame_date"))
# A configured spine's rows with each window's values as of their ts (jobs.point_in_time_join),
# by the UTC date of ts. Its columns are the spine's own and the join's: not declared here.
SPINE_VALUES = Table("spine_values", ("date",))

ALL_TABLES = (EVENTS, QUARANTINE, LATE_EVENTS, MINUTE_PARTIALS, DAILY_PARTIALS, WINDOW_CHANGES, WINDOW_SNAPSHOT,
              SESSION_STATE, COUNT_STATE, INTERVAL_STATE, ARRIVAL_PARTIALS, SPINE_VALUES)
SOURCE_ASSET = "event_source"
"""The asset of a table source (``source:``): upstream of ``events`` in Dagster's lineage."""
INGEST_ASSETS = frozenset({EVENTS.name, QUARANTINE.name, SOURCE_ASSET})
"""What a source's ingest holds, shared by the groups over it; every other table is a group's own."""
GROUP_TABLES = frozenset(t.name for t in ALL_TABLES) - INGEST_ASSETS


def root(lakehouse: str, config: PipelineConfig) -> str:
    """Where ``config``'s tables live under the lakehouse root: a group's folder, a named
    source's shared ingest folder (``windowing_core.deployment``), or the root itself."""
    folder = config.group or config.ingest_at
    return f"{lakehouse.rstrip('/')}/{folder}" if folder else lakehouse


def ingest_root(group_root: str, config: PipelineConfig) -> str:
    """Where the events a group reads are, from the group's own root: its source's ingest
    folder (the lakehouse root for the landing folders'); the same root without groups."""
    if config.group is None:
        return group_root
    lakehouse = group_root.rstrip("/").removesuffix(f"/{config.group}")
    return f"{lakehouse}/{config.ingest_at}" if config.ingest_at else lakehouse


def asset_key(name: str, config: PipelineConfig) -> list[str]:
    """The Dagster asset key of a table (or of the source): prefixed by its group, or for the
    ingest's, by its named source's; bare without groups and for the default landing folders."""
    prefix = config.ingest_at if name in INGEST_ASSETS else config.group
    return [prefix, name] if prefix else [name]


def op_name(name: str, config: PipelineConfig) -> str:
    """An op's (or a check step's) name, unique among every group's: Dagster has one namespace."""
    prefix = config.group or config.ingest_at
    return f"{prefix}__{name}" if prefix else name


def asset_group(name: str, default: str, config: PipelineConfig) -> str:
    """The Dagster asset group of a table: its configuration's group, or ``default`` for the
    shared ingest's and without groups."""
    return default if name in INGEST_ASSETS or config.group is None else config.group


def written_together(table: Table, config: PipelineConfig) -> tuple[Table, ...]:
    """The tables one run of ``table``'s job commits one after the other, all carrying its write
    id (``commits.unfinished_write`` tells a run stopped between them): ingest's events and
    quarantine (late_events has a second writer, the partials job), the windows job's change
    points, snapshot and, with session or count windows, session_state or count_state, and a run
    below a day's interval_state (each write names which of them it commits)."""
    if table in (EVENTS, QUARANTINE):
        return EVENTS, QUARANTINE
    if table in (WINDOW_CHANGES, WINDOW_SNAPSHOT, SESSION_STATE, COUNT_STATE, INTERVAL_STATE):
        return (*window_tables(config), INTERVAL_STATE)
    return (table,)


def window_tables(config: PipelineConfig) -> tuple[Table, ...]:
    """What the windows job writes under ``config``: the change points, the snapshot, and the
    state its session and count windows carry from day to day."""
    return (WINDOW_CHANGES, WINDOW_SNAPSHOT, *((SESSION_STATE,) if config.sessions else ()),
            *((COUNT_STATE,) if config.counts else ()))


def event_fields(config: PipelineConfig) -> list[tuple[str, str]]:
    """An event's columns: key and time, one typed column per field read from the source (the one
    ``value`` without declared fields, where it always stood), and where the record came from."""
    return [("key", "string"), ("event_time", "timestamp"), *config.source_fields, ("event_id", "string"),
            ("arrival_time", "timestamp"), ("arrival_part", "timestamp"), ("source_file", "string"), ("line", "int")]


def event_columns(config: PipelineConfig) -> list[str]:
    return [c for c, _ in event_fields(config)]


EVENT_COLUMNS = event_columns(PipelineConfig())
"""The events' columns under the default configuration (benchmarks and tests of it)."""
TABLE_COLUMN = "table"  # in a job's one write to several tables: which table a row goes to


def read_fields(config: PipelineConfig) -> list[str]:
    """The fields the aggregations read (their ``reads``), in order: all an event needs to be folded."""
    return sorted({r for a in config.aggregations for r in a.reads})


def partial_columns(config: PipelineConfig, *, invertible: bool | None = None) -> list[str]:
    """The partial fields of every aggregation (or only the (non-)invertible ones), in order."""
    return [c for a in config.aggregations if invertible in (None, a.invertible) for c in a.field_columns()]


def frame_times(config: PipelineConfig, clock: str = "event") -> list[str]:
    """The frame's first and last event time, kept in minute_partials only where a session
    window by event time is configured: sessions need them, nothing else reads them, and leaving
    them out elsewhere keeps the table (and every table already written) as it was. With
    ``clock="arrival"``: the first and last arrival time of an arrival frame, kept in
    arrival_partials where a session window by arrival time is configured."""
    if clock == "arrival":
        return ["first_arrival_time", "last_arrival_time"] if config.arrival_sessions else []
    return ["first_event_time", "last_event_time"] if any(s.time == "event" for s in config.sessions) else []


def frame_stamp(config: PipelineConfig) -> dict[str, str]:
    """What every row of minute_partials must share, stamped on each of its writes: the frames'
    bucket. A frame of another bucket would enter and leave the windows at the wrong ends, with
    no error, so the partials job refuses to add frames of another bucket to the table, and the
    sliding job to read them (``commits.require_stamp``)."""
    return {"bucketSeconds": str(config.bucket)}


def days(first: date, last: date) -> list[date]:
    """Every day from ``first`` to ``last``, both included."""
    if last < first:
        raise ValueError(f"empty date range: {first} .. {last}")
    return [first + timedelta(days=i) for i in range((last - first).days + 1)]


def day_filter(column: str, first: date, last: date) -> list[tuple[str, str, object]]:
    """A partition filter selecting ``first .. last`` (both included) of a date column."""
    return [(column, "in", [d.isoformat() for d in days(first, last)])]


def _fields(aggregations: Iterable[Aggregation]) -> list[tuple[str, str]]:
    return [(c, f.spark_type) for a in aggregations for c, f in zip(a.field_columns(), a.fields)]


def key_columns(config: PipelineConfig) -> list[tuple[str, str]]:
    """A composite key's fields as columns of the window tables, beside ``key`` (their values as
    a JSON array), so that a reader filters on each; none for a key of one field."""
    return [(name, "string") for name in config.key_fields]


def _outputs(config: PipelineConfig) -> list[tuple[str, str]]:
    return [(a.name, a.output_type) for a in config.aggregations]


def declared_columns(table: str, config: PipelineConfig) -> list[tuple[str, str]]:
    """The columns the docs' tables reference promises (generated from here), with Spark DDL types, in stored order
    (partition columns last): what the jobs write and the schema checks hold the tables to."""
    if table == EVENTS.name:
        return [*event_fields(config), ("arrival_date", "date")]
    if table == QUARANTINE.name:
        return [("source_file", "string"), ("raw", "string"), ("reason", "string"), ("arrival_part", "timestamp"),
                ("arrival_date", "date")]
    if table == LATE_EVENTS.name:
        return [*event_fields(config), ("event_date", "date"), ("arrival_date", "date"), ("reason", "string")]
    if table == MINUTE_PARTIALS.name:
        return [("key", "string"), ("frame_start", "timestamp"), *[(c, "timestamp") for c in frame_times(config)],
                ("event_count", "bigint"), *_fields(config.aggregations), ("event_date", "date")]
    if table == DAILY_PARTIALS.name:
        return [("key", "string"), ("event_count", "bigint"), *_fields(config.aggregations),
                ("event_date", "date")]
    if table == WINDOW_CHANGES.name:
        return [("key", "string"), *key_columns(config), ("window", "string"), ("window_start", "timestamp"),
                ("window_end", "timestamp"), ("event_count", "bigint"), *_outputs(config), ("date", "date")]
    if table == WINDOW_SNAPSHOT.name:
        # The carried state: event_count and the partials a running sum can carry (invertible),
        # over [window_start, as_of): which window it is the state of, whatever its name.
        return [("key", "string"), *key_columns(config), ("window", "string"), ("window_start", "timestamp"),
                ("as_of", "timestamp"), ("event_count", "bigint"),
                *_fields(a for a in config.aggregations if a.invertible), *_outputs(config), ("date", "date")]
    if table == INTERVAL_STATE.name:
        # Per sliding window and day: the state at a run's last end of the keys it changed, and
        # one row with a null key per window and run saying which end it reached.
        return [("key", "string"), ("window", "string"), ("window_start", "timestamp"), ("as_of", "timestamp"),
                ("event_count", "bigint"), *_fields(a for a in config.aggregations if a.invertible), ("date", "date")]
    if table == ARRIVAL_PARTIALS.name:
        return [("key", "string"), ("frame_start", "timestamp"),
                *[(c, "timestamp") for c in frame_times(config, "arrival")], ("event_count", "bigint"),
                *_fields(config.aggregations), ("event_date", "date"), ("frame_date", "date")]
    if table == SESSION_STATE.name:
        # Per session window and day: each key's session still open at the day's end (its
        # running partials, every aggregation's), and one row with a null key saying the day
        # was materialised under this gap, max_length and time, so that the next day continues.
        return [("key", "string"), ("window", "string"), ("window_start", "timestamp"),
                ("last_event_time", "timestamp"), ("event_count", "bigint"), *_fields(config.aggregations),
                ("gap_seconds", "bigint"), ("max_length_seconds", "bigint"), ("time", "string"), ("date", "date")]
    if table == COUNT_STATE.name:
        # Per count window and day: each key's events a window still to fire holds (their
        # numbers among the key's events and the fields the aggregations read), and one row with
        # a null key saying the day was materialised under this count and slide.
        measured = dict(config.measured_fields)
        return [("key", "string"), ("window", "string"), ("position", "bigint"), ("event_time", "timestamp"),
                ("event_id", "string"), *[(name, measured[name]) for name in read_fields(config)],
                ("count_size", "bigint"), ("count_slide", "bigint"), ("date", "date")]
    raise ValueError(f"no declared schema for table {table!r}")


_NOTES = {
    "key": "the events' key (the configuration's key_field)",
    "event_time": "when the event happened (UTC)",
    "value": "the event's integer value; 1 where the record has none",
    # a declared field's column: see column_notes
    "event_id": "the record's id; a hash of its line where it has none",
    "arrival_time": "when the record landed: its own field, else its file's time",
    "arrival_part": "the arrival part it landed in: its `<HH>` or `<HHMM>` folder's time under the day's folder; "
                    "the next midnight for a file elsewhere in the day's folder",
    "source_file": "the landing file the record came from",
    "line": "the record's line number in its file",
    "raw": "the rejected line as read (null where the whole file was unreadable)",
    "reason": "why the record is here (a partition of late_events)",
    "frame_start": "the frame is [frame_start, frame_start + bucket)",
    "event_count": "events in the frame, the day or the window the row is of",
    "window": "the window's name in the configuration",
    "window_start": "the window covers [window_start, window_end) in window_changes, "
                    "[window_start, as_of) in window_snapshot; a session's first event time, "
                    "a count window's first event's",
    "window_end": "the window covers [window_start, window_end); the value holds until the key's next change; "
                  "a count window's last event's time (inside it)",
    "first_event_time": "the frame's first event time (kept where a session window is configured)",
    "last_event_time": "the frame's (or open session's) last event time",
    "position": "the event's number among its key's events, in (event_time, event_id) order, from 1",
    "count_size": "the count window's count the row was made with",
    "count_slide": "the count window's slide the row was made with",
    "gap_seconds": "the session window's gap the row was made with",
    "max_length_seconds": "the session window's max_length the row was made with (null: none)",
    "time": "the session window's time the row was made with: event, or arrival (its times are arrival times)",
    "first_arrival_time": "the arrival frame's first arrival time (kept where a session window by arrival time is configured)",
    "last_arrival_time": "the arrival frame's last arrival time (kept where a session window by arrival time is configured)",
    "frame_date": "partition: the day of frame_start (UTC); in arrival_partials the frame is of arrival time",
    "as_of": "the state is of [window_start, as_of): the day's last window end",
    "arrival_date": "partition: the day the record landed (UTC)",
    "event_date": "partition: the day of event_time (UTC)",
    "date": "partition: the day of window_end, or of the snapshot or carried state (UTC)",
}

_FIELD_NOTES = {"n": "number of (non-null) values", "s": "sum of the values",
                "sa": "sum of the high 32-bit limbs a of the unscaled values u = a * 2**32 + b",
                "sb": "sum of the low 32-bit limbs b", "aa": "sum of a * a", "ab": "sum of a * b",
                "bb": "sum of b * b", "mean": "mean of the values", "m2": "sum of squared deviations from the mean",
                "m": "the extreme value", "at": "event time of the value kept", "v": "the value kept",
                "sketch": "HyperLogLog sketch of the values", "s3": "sum of the cubed values",
                "s4": "sum of the values to the fourth power", "kll": "KLL quantile sketch of the values",
                "list": "the k values kept, in the list's order (with their event times for first_k, last_k)",
                "values": "the distinct values", "counts": "how many events hold each value",
                "ss": "sum of the squared values", "m3": "sum of cubed deviations from the mean",
                "m4": "sum of fourth powers of the deviations from the mean",
                "wide": "values whose fourth power leaves 38 digits (their windows' moments are null)"}


def column_notes(table: str, config: PipelineConfig) -> dict[str, str]:
    """What each declared column of ``table`` holds, for catalogs and the Dagster UI."""
    notes = dict(_NOTES)
    computed = dict(config.columns)
    for name, ddl in config.fields:
        notes[name] = (f"the computed field {name} ({declared_name(ddl)}): {computed[name]}" if name in computed else
                       f"the declared field {name} ({declared_name(ddl)}); null where the record has none")
    for i, name in enumerate(config.key_fields):
        notes[name] = f"the key's field {name} (item {i + 1} of key; null in a non-keyed window's rows)"
    if config.key_fields:
        notes["key"] = f"the key: the values of {', '.join(config.key_fields)} as a JSON array of strings"
    if table == INTERVAL_STATE.name:
        notes["as_of"] = ("the state is of [window_start, as_of): the last end a run below a day reached, of "
                          "each key it changed since its baseline (a marker row: of the run)")
    for a in config.aggregations:
        notes[a.name] = a.description
        own = a.partial_notes()
        for column, f in zip(a.field_columns(), a.fields):
            notes[column] = f"partial of {a.name} ({a.kind}): {own.get(f.name) or _FIELD_NOTES[f.name]}"
    return {c: notes[c] for c, _ in declared_columns(table, config)}
