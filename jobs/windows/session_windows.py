"""Session windows: one final row per closed session, from the minute frames, exactly.

The rules are ``windowing_core.sessions``'s. With ``gap >= bucket`` no session boundary falls
inside a frame, so a session is a run of a key's frames, and each frame's first and last event
time (kept in ``minute_partials`` where a session window is configured) decide the runs:

    starts  = the previous piece's last event is gap or more before this piece's first
              (or in another max_length cell)
    session = running sum of ``starts`` over the key's pieces in time order

two Spark window functions (``lag`` and a running ``sum``) over the key's pieces, never a loop.
A session is then one ``groupBy`` merging its frames' partials: every aggregation's ``spark_merge``,
invertible or not, since a session is folded once and never slides.

Sessions cross midnight and can outlast any number of days, so a run does not read back to a
session's start: ``session_state`` carries, per window and day, each key's session still open
at the day's end (its first and last event time and running partials, a running merge over the
session's pieces). A run over days ``first .. last`` reads the frames of those days and the
state of ``first - 1``, and writes the state of each of its days. A row with a null key marks a
day as materialised under the window's gap and max_length; where the day before has no such
mark (the first run, a day skipped, a window redefined) the state is bootstrapped once from
every earlier frame, which is exact either way.

Emission ``final``: a session's row goes to the partition of its ``window_end``'s date once the
watermark has passed its end (``window_end <= watermark``), the watermark being the newest
frame's last event time in ``minute_partials`` minus ``max_out_of_orderness``. The same sessions
are closed in a daily run and in a range run over the same tables. A late event re-materialises
its event day and the window days after it (late firing): sessions it bridges are merged into
one row, a session it extends moves its end, and the replaced days lose the rows that no longer
exist.

Emission ``changes``: each piece is a change point at the end of its last frame (the session
so far: the same running merge that makes the carried state), and each session steps back to
empty at the first bucket end after its end, unless the key's next session's first change
falls on that same bucket end (``windowing_core.sessions`` states the rule). A session whose
step back falls on a later day than its end is carried into the state of its end's day too,
so that day's run still writes it; the state is the same under both emissions.

Sessions by arrival time (``time: arrival``) run the same way over the frames by arrival time
(``arrival_partials``, with each frame's first and last arrival time), with the newest arrival
time as their watermark: processing time runs in order.

All session windows of a run go through one plan, their rows told apart by ``window``
(``jobs.windows.window_grid``).
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from functools import reduce

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from jobs.runtime.computed_once import computed_once
from jobs.storage import delta_io, delta_write
from jobs.tables import (
    ARRIVAL_PARTIALS, MINUTE_PARTIALS, SESSION_STATE, TABLE_COLUMN, WINDOW_CHANGES, day_filter,
    frame_times, partial_columns,
)
from jobs.windows import arrival_frames, carried_state
from jobs.windows.partial_merges import (
    element_merges, element_position, exploded, first_element, last_element, merged_by_element, merged_in_passes,
    merges, most_rows_of, prefix_merged, running_counts, with_finished_values,
)
from jobs.windows.window_grid import Windows
from windowing_core.config import PipelineConfig
from windowing_core.run_interval import RunInterval, as_utc
from windowing_core.sessions import SessionSpec

MICROS = 1_000_000
DAY_MICROS = 86400 * MICROS
PIECE = "piece"  # a piece's place in its session, from 1


DEFINITION: carried_state.Definition = {
    "gap_seconds": lambda s: s.gap, "max_length_seconds": lambda s: s.max_length, "time": lambda s: s.time}
"""What a ``session_state`` row says of its window's definition."""


def _micros(column: str) -> Column:
    return F.unix_micros(F.col(column))


def _date(micros: Column) -> Column:
    """The UTC date of an instant in epoch microseconds."""
    return F.date_from_unix_date(((micros - F.pmod(micros, F.lit(DAY_MICROS))) / DAY_MICROS).cast("int"))


def _cut(spec: SessionSpec) -> bool:
    return spec.max_length is not None


def _cell_end(micros: Column, sessions: Windows) -> Column:
    """The end of the ``max_length`` cell holding an instant (for the sessions that are cut)."""
    size = sessions.param(lambda s: (s.max_length or s.gap) * MICROS)
    return micros - F.pmod(micros, size) + size


def session_end(start: Column, last: Column, sessions: Windows) -> Column:
    """``SessionSpec``'s window end: ``last + gap``, cut at the end of ``start``'s cell."""
    end = last + sessions.param(lambda s: s.gap * MICROS)
    return sessions.choose(_cut, lambda: F.least(end, _cell_end(start, sessions)), lambda: end)


def _bucket_end(micros: Column, sessions: Windows) -> Column:
    """The first bucket end after an instant: the end of the frame holding it."""
    size = sessions.param(lambda s: s.bucket * MICROS)
    return micros - F.pmod(micros, size) + size


def frame_pieces(frames: DataFrame, config: PipelineConfig, clock: str = "event") -> DataFrame:
    """A frame as a piece of a session: its first and last event (or arrival) time in microseconds."""
    first, last = frame_times(config, clock)
    return frames.select("key", _micros(first).alias("first"), _micros(last).alias("last"),
                         "event_count", *partial_columns(config))


def state_pieces(state: DataFrame, config: PipelineConfig) -> DataFrame:
    """A carried open session as one piece of its window: from its first event to its last."""
    return state.select("window", "key", _micros("window_start").alias("first"),
                        _micros("last_event_time").alias("last"), "event_count", *partial_columns(config))


def pieces_of(frames: dict[str, DataFrame], sessions: Windows) -> DataFrame:
    """Each session window's pieces: the frame pieces of its clock (``frames`` by ``time``),
    tagged with its name."""
    return reduce(DataFrame.unionByName, [frames[s.time].select(F.lit(s.name).alias("window"), "*")
                                          for s in sessions.specs])


def with_session_numbers(pieces: DataFrame, sessions: Windows) -> DataFrame:
    """Number each key's sessions: ``session`` is the running count of pieces that start one.

    A key's pieces never overlap in time (frames are disjoint; a carried session ends before
    the run's first day), so ordering by ``first`` orders them by ``last`` too. ``next_first``
    is the first event time of the session's next piece, for the state's last day.
    """
    by_key = Window.partitionBy("window", "key").orderBy("first")
    # the lag once, as a column: each of its occurrences would be a window expression of its own
    pieces, previous = pieces.withColumn("__previous", F.lag("last").over(by_key)), F.col("__previous")
    apart = previous.isNull() | (F.col("first") - previous >= sessions.param(lambda s: s.gap * MICROS))
    starts = sessions.choose(_cut, lambda: apart | (_cell_end(F.col("first"), sessions) != _cell_end(previous, sessions)),
                             lambda: apart)
    numbered = (pieces.withColumn("starts", starts.cast("long"))
                .withColumn("session", F.sum("starts").over(by_key.rowsBetween(Window.unboundedPreceding, 0))))
    next_first = F.lead("first").over(Window.partitionBy("window", "key", "session").orderBy("first"))
    return numbered.withColumn("next_first", next_first).drop("starts", "__previous")


def with_sessions_so_far(numbered: DataFrame, config: PipelineConfig) -> DataFrame:
    """Each piece with its session's ``start`` and the partials of the session up to and
    including the piece: a running merge over the session's pieces in time order.

    A partial with no incremental window aggregate (``spark_combine``: moments of doubles) is
    merged in log2 passes (``partial_merges.prefix_merged``) rather than refolded at every
    piece; a session's pieces have no bound known before the run (a bootstrap reads every
    earlier day), so the largest session's is counted first, one more job only for those
    partials. A histogram is summed entry by entry (``partial_merges.running_counts``), and a
    list or set partial element by element (``partial_merges.merged_by_element``), as the
    sliding windows' exact values are."""
    by = ["window", "key", "session"]
    scanned = merged_in_passes(config.aggregations)
    if scanned:
        numbered = prefix_merged(numbered, scanned, by, [F.col("first")], most_rows_of(numbered, *by))
    maps = [a for a in config.aggregations if a.counts_by_entry]
    if maps:  # each piece's place in its session, which a histogram's running counts are gathered by
        numbered = numbered.withColumn(PIECE, F.row_number().over(Window.partitionBy(*by).orderBy("first")))
    listed = merged_by_element(config.aggregations)
    pieces, order, last_row = numbered, [F.col("first")], F.lit(True)
    if listed:  # an empty piece keeps one row; the piece's other partials ride on its first
        numbered, last_row = exploded(numbered, listed), last_element()
        order.append(element_position())

    def once(c: Column) -> Column:  # a piece's partial, on the first of its rows
        return F.when(first_element(), c) if listed else c

    running = Window.partitionBy(*by).orderBy(*order).rowsBetween(Window.unboundedPreceding, 0)
    merged = [F.sum(once(F.col("event_count"))).over(running).alias("event_count")]
    for agg in config.aggregations:
        columns = agg.field_columns()
        if agg in scanned or agg in maps:
            merged += [F.col(c) for c in columns]
        elif agg in listed:
            merged += element_merges(agg, running)
        else:
            merged += [c.alias(n) for c, n in zip(agg.spark_merge([once(F.col(c)) for c in columns], running), columns)]
    so_far = numbered.select("window", "key", "session", *([PIECE] if maps else []), last_row.alias("__last"),
                             F.min("first").over(running).alias("start"), "last", "next_first", *merged)
    so_far = so_far.where("__last").drop("__last")
    for agg in maps:
        (counts,) = agg.field_columns()
        so_far = (so_far.drop(counts).join(running_counts(pieces, counts, by, PIECE), [*by, PIECE], "left")
                  .withColumn(counts, F.coalesce(F.col(counts), agg.spark_empty_value())))
    return so_far.select("window", "key", "start", "last", "next_first", "event_count",
                         *[c for a in config.aggregations for c in a.field_columns()])


def _change_rows(rows: DataFrame, config: PipelineConfig, end: str) -> DataFrame:
    """``window_changes`` rows from ``start``, ``end`` (microseconds) and finished values."""
    return rows.select(
        "key", "window", F.timestamp_micros("start").alias("window_start"),
        F.timestamp_micros(end).alias("window_end"), "event_count", *[a.name for a in config.aggregations],
        _date(F.col(end)).alias("date"), F.lit(WINDOW_CHANGES.name).alias(TABLE_COLUMN))


def _in_run(micros: Column, first: date, last: date, interval: RunInterval | None) -> Column:
    """Whether an instant (epoch microseconds) is the run's to write: on days ``first .. last``, or
    below a day within its interval."""
    if interval is None:
        return (_date(micros) >= F.lit(first)) & (_date(micros) <= F.lit(last))
    start, until = (seconds * MICROS for seconds in interval.seconds)
    return (micros >= F.lit(start)) & (micros < F.lit(until))


def _sessions(numbered: DataFrame, config: PipelineConfig) -> DataFrame:
    return numbered.groupBy("window", "key", "session").agg(F.min("first").alias("start"), F.max("last").alias("last"),
                                                  *merges(config))


def closed_sessions(numbered: DataFrame, sessions: Windows, config: PipelineConfig, first: date, last: date,
                    watermarks: dict[str, int | None], interval: RunInterval | None = None) -> DataFrame:
    """``emit: final`` rows: each session whose end lies on ``first .. last`` (or in ``interval``)
    and is at or behind the watermark of its clock (microseconds; None: no events, nothing closed)."""
    end = session_end(F.col("start"), F.col("last"), sessions)
    watermark = sessions.param(lambda s: watermarks[s.time] if watermarks[s.time] is not None else -(2 ** 62))
    closed = (_sessions(numbered, config).withColumn("end", end)
              .where(_in_run(F.col("end"), first, last, interval) & (F.col("end") <= watermark)))
    return _change_rows(with_finished_values(closed, config), config, "end")


def session_changes(numbered: DataFrame, so_far: DataFrame, sessions: Windows, config: PipelineConfig,
                    first: date, last: date, interval: RunInterval | None = None) -> DataFrame:
    """``emit: changes`` rows on days ``first .. last`` (or in ``interval``): the session so far
    (``with_sessions_so_far`` of ``numbered``) at the end of each piece's last frame, as the
    carried state is, and the step back to empty at the first bucket end after each session's end, unless the
    key's next session starts in the frame holding that end (its first change is then there)."""
    so_far = so_far.select("window", "key", "start", _bucket_end(F.col("last"), sessions).alias("at"),
                           "event_count", *partial_columns(config))
    joins = with_finished_values(so_far.where(_in_run(F.col("at"), first, last, interval)), config)
    spans = numbered.groupBy("window", "key", "session").agg(F.min("first").alias("start"), F.max("last").alias("last"))
    step_back = _bucket_end(session_end(F.col("start"), F.col("last"), sessions), sessions)
    next_start = F.lead("start").over(Window.partitionBy("window", "key").orderBy("start"))
    empty = [a.spark_empty_value().alias(a.name) for a in config.aggregations]
    closes = (spans.select("window", "key", "start", step_back.alias("at"), next_start.alias("next_start"))
              .where(_in_run(F.col("at"), first, last, interval)
                     & (F.col("next_start").isNull() | (_bucket_end(F.col("next_start"), sessions) != F.col("at"))))
              .select("window", "key", "start", "at", F.lit(0).cast("long").alias("event_count"), *empty))
    return _change_rows(joins, config, "at").unionByName(_change_rows(closes, config, "at"))


def open_sessions(states: DataFrame, sessions: Windows, config: PipelineConfig, first: date,
                  last: date) -> DataFrame:
    """``session_state`` rows: per key and day of ``first .. last``, its sessions not yet
    emitted at the day's end, with their partials so far (``states``: ``with_sessions_so_far``).

    Each piece carries the running merge of its session up to itself. It stands for the days
    from its own day to the day before its session's next piece, and for no day from the date
    of the first bucket end after its session's end on (where ``emit: changes`` steps back to
    empty; ``final`` emits at the end itself, a day earlier at most, and the extra day's state
    is then read and not emitted again). A session ending exactly at midnight is carried into
    the day it ends on: its row belongs to that day's partition, which reads none of its frames.
    """
    end = session_end(F.col("start"), F.col("last"), sessions)
    since = F.greatest(_date(F.col("last")), F.lit(first))
    until = F.least(F.lit(last), F.date_sub(_date(_bucket_end(end, sessions)), 1),
                    F.date_sub(_date(F.col("next_first")), 1))
    return states.where(since <= until).select(
        "key", "window", F.timestamp_micros("start").alias("window_start"),
        F.timestamp_micros("last").alias("last_event_time"), "event_count", *partial_columns(config),
        *carried_state.definition_columns(sessions, DEFINITION), F.explode(F.sequence(since, until)).alias("date"),
        F.lit(SESSION_STATE.name).alias(TABLE_COLUMN))


def day_marks(spark: SparkSession, sessions: Windows, first: date, last: date) -> DataFrame:
    """``session_state``'s marks (``jobs.windows.carried_state``), of zero events."""
    return carried_state.day_marks(spark, SESSION_STATE, sessions, DEFINITION, first, last,
                                   F.lit(0).cast("long").alias("event_count"))


# -- reading ----------------------------------------------------------------------------------------


def _frames(spark: SparkSession, lakehouse: str, first: date | None, last: date, config: PipelineConfig,
            clock: str) -> DataFrame:
    """The frames of days ``first .. last`` (``first`` None: every day up to ``last``) as
    pieces: of event time from ``minute_partials``, or of arrival time merged over the event
    days holding them (``jobs.windows.arrival_frames``)."""
    column = "event_date" if clock == "event" else "frame_date"
    filters = (day_filter(column, first, last) if first is not None
               else [(column, "<=", last.isoformat())])
    if clock == "arrival":
        return frame_pieces(arrival_frames.read_session_frames(spark, lakehouse, filters, config), config, clock)
    path = MINUTE_PARTIALS.path(lakehouse)
    missing = set(frame_times(config)) - set(delta_io.table_columns(path))
    if missing:
        raise ValueError(f"{path} has no {', '.join(sorted(missing))}: it was written before a session window "
                         "was configured; materialise minute_partials again (a backfill) first")
    return frame_pieces(delta_io.read_table(spark, path, partition_filters=filters), config, clock)


def watermark(spark: SparkSession, lakehouse: str, config: PipelineConfig, clock: str = "event") -> int | None:
    """The newest last event time in ``minute_partials`` minus ``max_out_of_orderness``, in
    microseconds; by arrival time the newest last arrival time in ``arrival_partials`` (processing
    time is in order: nothing is subtracted). The Delta log's statistics say which day holds it
    (they are widened to whole milliseconds, so both days around the widened value are read);
    that day's frames give it exactly."""
    table, column, partition = ((MINUTE_PARTIALS, "last_event_time", "event_date") if clock == "event"
                                else (ARRIVAL_PARTIALS, "last_arrival_time", "frame_date"))
    path = table.path(lakehouse)
    if not delta_io.table_exists(path):
        return None
    widened = delta_io.column_max(path, column)
    filters = None
    if isinstance(widened, datetime):
        widened = as_utc(widened)
        around = {(widened - timedelta(milliseconds=d)).date().isoformat() for d in (-1, 1)}
        filters = [(partition, "in", sorted(around))]
    newest = delta_io.read_table(spark, path, partition_filters=filters).agg(F.max(_micros(column))).first()[0]
    if newest is None:
        return None
    return newest - config.max_out_of_orderness * MICROS if clock == "event" else newest


def carried_sessions(spark: SparkSession, lakehouse: str, sessions: Windows, config: PipelineConfig,
                     first: date) -> tuple[DataFrame | None, dict[str, str]]:
    """The open sessions of every window at the end of ``first - 1`` as pieces, and per window
    where they came from: its state of that day, where the day's mark says it was materialised
    under the window's definition, else a bootstrap from every earlier frame."""
    day = first - timedelta(days=1)
    state, continued = carried_state.continued_state(spark, lakehouse, SESSION_STATE, sessions, DEFINITION, first)
    pieces = [state_pieces(state, config)] if continued else []
    bootstrapped = sessions.where(lambda s: s.name not in continued)
    if bootstrapped:
        frames = {clock: _frames(spark, lakehouse, None, day, config, clock)
                  for clock in sorted({s.time for s in bootstrapped.specs})}
        numbered = with_session_numbers(pieces_of(frames, bootstrapped), bootstrapped)
        states = with_sessions_so_far(numbered, config)
        pieces.append(state_pieces(open_sessions(states, bootstrapped, config, day, day), config))
    return reduce(DataFrame.unionByName, pieces), {s.name: "state" if s.name in continued else "bootstrap"
                                                   for s in sessions.specs}


# -- the job ----------------------------------------------------------------------------------------


def session_windows(spark: SparkSession, lakehouse: str, first: date, last: date, config: PipelineConfig,
                    interval: RunInterval | None = None) -> tuple[DataFrame | None, dict]:
    """The rows of ``window_changes`` and ``session_state`` (``TABLE_COLUMN``) of every session
    window for days ``first .. last``; ``info["baseline"]`` says per window whether it continued
    from the state of the day before or was bootstrapped, ``info["watermark"]`` per time (event,
    arrival) the watermark that closed ``final`` sessions, ``info["persisted"]`` what the caller
    unpersists once the rows are written.

    ``interval`` (part of the one day ``first == last``) writes the rows ending in it, from the
    state of the day before and the day's frames before its end: a row ending in it depends on no
    later frame (a piece that extends a session starts before its end). Only the part that closes
    the day writes the day's state."""
    if not config.sessions:
        return None, {"baseline": {}, "watermark": {}, "persisted": []}
    sessions = Windows(config.sessions)
    clocks = sorted({spec.time for spec in config.sessions})
    frames = {clock: _frames(spark, lakehouse, first, last, config, clock) for clock in clocks}
    if interval is not None:  # the day's frames before the part's end
        until = interval.seconds[1] * MICROS
        frames = {clock: pieces.where(F.col("first") < F.lit(until)) for clock, pieces in frames.items()}
    marks = {clock: watermark(spark, lakehouse, config, clock) for clock in clocks}
    carried, baseline = carried_sessions(spark, lakehouse, sessions, config, first)
    # The pieces feed three to four queries (closed sessions, changes, their spans, open state):
    # computed once, each plans over a leaf instead of the reads and session numbering again.
    numbered = computed_once(with_session_numbers(pieces_of(frames, sessions).unionByName(carried), sessions))
    persisted = [numbered]
    final, changes = (sessions.where(lambda s, e=emit: s.emit == e) for emit in ("final", "changes"))
    carries = interval is None or interval.closes_day
    # the running merge of each session's pieces: the changes' rows and the open state
    states = with_sessions_so_far(numbered, config) if changes or carries else None
    if changes and carries:  # read by both
        states = computed_once(states)
        persisted.append(states)

    def own(rows: DataFrame, family: Windows) -> DataFrame:
        return rows if family.names == sessions.names else rows.where(family.filter())

    rows = []
    if final:
        rows.append(closed_sessions(own(numbered, final), final, config, first, last, marks, interval=interval))
    if changes:
        rows.append(session_changes(own(numbered, changes), own(states, changes), changes, config, first, last,
                                    interval=interval))
    if carries:
        rows += [open_sessions(states, sessions, config, first, last), day_marks(spark, sessions, first, last)]
    union = reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True), rows)
    return union, {"baseline": baseline, "watermark": marks, "persisted": persisted}


def state_target(lakehouse: str, first: date, last: date, config: PipelineConfig) -> delta_write.Target:
    return carried_state.state_target(SESSION_STATE, lakehouse, first, last, config)
