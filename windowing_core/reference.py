"""The reference implementation: brute force over raw events, the oracle every test trusts.

It shares nothing with the Spark path but the aggregation algebra's ``accumulate`` and
``finish``: no frames, no deltas, no running sums. Each window value is folded again from
the raw events inside ``[t - length, t)``. Slow on purpose; keep test data small.

Deduplication is defined here once for the whole product:

1. Within an arrival day, records with the same ``event_id`` are accepted once: the first by
   ``(arrival_part, source_file, raw)`` wins (ingest), the arrival part first (``arrival_part``),
   so a day ingested in parts keeps the copies a whole day's run keeps.
2. An event that arrives beyond the allowed lateness is kept as late and never reaches a window
   (ingest): in whole days, its arrival day more than that many days after its event day;
   otherwise its arrival part (a file outside part folders: its day's end; a table source's row:
   its arrival time) starting more than that long after its event time (``within_lateness``).
3. Across the arrival days of one event day, the same ``event_id`` counts once: the first by
   ``(arrival_date, source_file, raw)`` wins (minute partials).
4. Under ``late_policy: drop``, an event behind the watermark at its arrival is kept as late
   (minute partials); the watermark runs over every event of step 2, in arrival order.
5. Under a row filter (``where``), only the events of step 3 it selects reach the partials or
   ``late_events``; the others are counted, not kept (minute partials). Whether it selects an
   event, and the values of computed fields (``columns``) and of custom aggregations' row
   expressions (``Aggregation.row_expressions``), come with each record (``Event.selected``,
   ``Event.fields``): they are Spark SQL's per-row semantics, which the oracle takes as given,
   not the windows' arithmetic, which it checks.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta, timezone
from typing import Any

from windowing_core.aggregations import DEFAULT_FIELD
from windowing_core.change_points import change_points
from windowing_core.config import PipelineConfig
from windowing_core.count_windows import fires, window_of
from windowing_core.sessions import SessionSpec, micros, sessions
from windowing_core.spine import read_at_instant
from windowing_core.watermark import is_late, watermarks
from windowing_core.window_spec import ALL_KEYS, DAY_SECONDS, WindowSpec, from_epoch_seconds, to_epoch_seconds


@dataclass(frozen=True)
class Event:
    """An accepted record as the oracle sees it. ``value`` is the one integer field of a
    configuration without declared ``fields``; ``fields`` holds the declared fields' values as
    ``(name, value)`` pairs (Python ``int``, ``Decimal``, ``float``, ``str``, ``bool``; a
    missing field is absent or ``None``)."""

    key: str
    event_time: datetime
    value: int | None
    event_id: str
    arrival_date: date
    source_file: str = ""
    raw: str = ""
    arrival_time: datetime | None = None
    line: int = 0
    fields: tuple[tuple[str, Any], ...] = ()
    selected: bool = True
    arrival_part: datetime | None = None
    """The start of the arrival part (hour folder) it landed in; None: the day's end, after every part."""

    def field(self, name: str) -> Any:
        """The value of the events column ``name`` (an aggregation's ``field``)."""
        for field_name, value in self.fields:
            if field_name == name:
                return value
        return self.value if name == DEFAULT_FIELD else None

    @property
    def event_date(self) -> date:
        return self.event_time.astimezone(timezone.utc).date()

    @property
    def epoch_second(self) -> int:
        return to_epoch_seconds(self.event_time)


@dataclass(frozen=True)
class ChangeRow:
    key: str
    window: str
    window_end: datetime
    values: tuple


def day_start(day: date) -> int:
    return to_epoch_seconds(datetime(day.year, day.month, day.day, tzinfo=timezone.utc))


def _first_by(events: Iterable[Event], group, order) -> list[Event]:
    best: dict = {}
    for e in events:
        g = group(e)
        if g not in best or order(e) < order(best[g]):
            best[g] = e
    return list(best.values())


def arrival_order(e: Event) -> tuple:
    return (e.arrival_date, e.arrival_time, e.source_file, e.line)


def behind_watermark(events: Iterable[Event], config: PipelineConfig) -> set[Event]:
    """The events behind the watermark at their arrival."""
    marked = watermarks(sorted(events, key=arrival_order), event_time=lambda e: e.event_time,
                        scope_of=(lambda e: e.key) if config.watermark_scope == "key" else (lambda e: None),
                        max_out_of_orderness=timedelta(seconds=config.max_out_of_orderness),
                        arrival_time=(lambda e: e.arrival_time) if config.watermark_clock == "arrival" else None)
    return {e for e, watermark in marked if is_late(e.event_time, watermark)}


def _once_and_late(events: Iterable[Event], config: PipelineConfig) -> tuple[list[Event], set[Event]]:
    once, late = _once_in_time(events, config)
    return [e for e in once if e.selected], late


def filtered_out(events: Iterable[Event], config: PipelineConfig) -> list[Event]:
    """The events of step 3 the row filter (``where``) does not select."""
    return [e for e in _once_in_time(events, config)[0] if not e.selected]


def arrival_part(e: Event, config: PipelineConfig) -> datetime | None:
    """The arrival part ``e`` landed in (None: its day's end): a landing record's folder; a table
    source's row below a day, the partition its arrival time falls in (in whole days, its day's end)."""
    if config.source is None or not config.source.is_table:
        return e.arrival_part
    if config.partition == DAY_SECONDS:
        return None
    seconds = int(e.arrival_time.timestamp())
    return datetime.fromtimestamp(seconds - seconds % config.partition, timezone.utc)


def _once_per_arrival(events: Iterable[Event], config: PipelineConfig) -> list[Event]:
    def order(e: Event) -> tuple:
        part = arrival_part(e, config)
        return part is None, part or 0, e.source_file, e.raw

    return _first_by(events, lambda e: (e.arrival_date, e.event_id), order)


def _once_in_time(events: Iterable[Event], config: PipelineConfig) -> tuple[list[Event], set[Event]]:
    once_per_arrival = _once_per_arrival(events, config)
    in_time = [e for e in once_per_arrival if within_lateness(e, config)]
    once = _first_by(in_time, lambda e: (e.event_date, e.event_id),
                     lambda e: (e.arrival_date, e.source_file, e.raw))
    late = behind_watermark(in_time, config) if config.late_policy == "drop" else set()
    return once, late


def within_lateness(e: Event, config: PipelineConfig) -> bool:
    """Whether ``e`` arrived within the allowed lateness (step 2)."""
    if config.lateness_by_date:
        return e.arrival_date <= e.event_date + timedelta(days=config.allowed_lateness_days)
    if config.source is not None and config.source.is_table:
        arrived = e.arrival_time
    else:
        arrived = e.arrival_part or datetime.combine(e.arrival_date + timedelta(days=1), datetime.min.time(),
                                                     timezone.utc)
    return arrived <= e.event_time + timedelta(seconds=config.allowed_lateness)


def beyond_lateness(events: Iterable[Event], config: PipelineConfig) -> list[Event]:
    """The records ingest keeps as late (``beyond_allowed_lateness``): the first copy of each
    event per arrival day, where that arrival is beyond the allowed lateness."""
    return [e for e in _once_per_arrival(events, config) if not within_lateness(e, config)]


def accepted_events(events: Iterable[Event], config: PipelineConfig) -> list[Event]:
    """The events that reach the windows: both deduplications, the lateness cut, the late policy."""
    once, late = _once_and_late(events, config)
    return [e for e in once if e not in late]


def dropped_behind_watermark(events: Iterable[Event], config: PipelineConfig) -> list[Event]:
    """The events ``late_policy: drop`` keeps in ``late_events`` instead of the windows."""
    once, late = _once_and_late(events, config)
    return [e for e in once if e in late]


def fold(config: PipelineConfig, events: Iterable[Event]) -> tuple:
    """The finished value of every aggregation over the given events."""
    partials = [a.empty() for a in config.aggregations]
    for e in events:
        partials = [a.accumulate(p, a.event_value(e.field), e.event_time)
                    for a, p in zip(config.aggregations, partials)]
    return tuple(a.finish(p) for a, p in zip(config.aggregations, partials))


def minute_partials(events: Iterable[Event], config: PipelineConfig, day: date) -> dict:
    """``(key, frame_start) -> (event_count, finished values)`` for one event day."""
    frames: dict = defaultdict(list)
    for e in accepted_events(events, config):
        if e.event_date == day:
            start = e.epoch_second - e.epoch_second % config.bucket
            frames[(e.key, from_epoch_seconds(start))].append(e)
    return {k: (len(vs), fold(config, vs)) for k, vs in frames.items()}


class _KeyTimeline:
    """One key's accepted events sorted by time, to fold any ``[start, stop)`` by bisection."""

    def __init__(self, events: list[Event]) -> None:
        self.events = sorted(events, key=lambda e: e.event_time)
        self.times = [e.epoch_second for e in self.events]

    def between(self, start: int, stop: int) -> list[Event]:
        lo = bisect.bisect_left(self.times, start)
        hi = bisect.bisect_left(self.times, stop)
        return self.events[lo:hi]


def _timelines(events: Iterable[Event], config: PipelineConfig) -> dict[str, _KeyTimeline]:
    return _by_key(accepted_events(events, config))


def _by_key(accepted: list[Event]) -> dict[str, _KeyTimeline]:
    by_key: dict[str, list[Event]] = defaultdict(list)
    for e in accepted:
        by_key[e.key].append(e)
    return {k: _KeyTimeline(v) for k, v in by_key.items()}


def _timelines_by_kind(events: Iterable[Event], config: PipelineConfig) -> dict[bool, dict[str, _KeyTimeline]]:
    """Per key (``True``: keyed windows), and every key as the one key ``ALL_KEYS`` (``False``)."""
    accepted = accepted_events(events, config)
    return {True: _by_key(accepted), False: {ALL_KEYS: _KeyTimeline(accepted)} if accepted else {}}


# -- windows, from their definition: [k * slide + offset, k * slide + offset + length) -----------
# Written from the start grid alone (never from ``WindowSpec``'s end arithmetic, which the jobs
# use), so that the oracle checks that arithmetic rather than repeating it.


def _first_start_at_or_after(spec: WindowSpec, moment: int) -> int:
    return spec.offset + -((spec.offset - moment) // spec.every) * spec.every


def _last_start_at_or_before(spec: WindowSpec, moment: int) -> int:
    return spec.offset + (moment - spec.offset) // spec.every * spec.every


def window_ends(spec: WindowSpec, start: int, stop: int) -> range:
    """Ends ``t`` of every window with ``start <= t < stop``. A cumulating window's ends are its
    starts plus every multiple of the step up to the length: every point of the step grid."""
    if spec.cumulating:
        return range(spec.offset + -((spec.offset - start) // spec.step) * spec.step, stop, spec.step)
    first = _first_start_at_or_after(spec, start - spec.length) + spec.length
    return range(first, stop, spec.every)


def window_bounds(spec: WindowSpec, end: int) -> tuple[int, int]:
    """``[start, end)`` of the window ending at ``end``."""
    if spec.cumulating:  # the period holding the instant just before the end
        return spec.offset + (end - 1 - spec.offset) // spec.length * spec.length, end
    return end - spec.length, end


def entering_and_leaving(spec: WindowSpec, moment: int) -> tuple[int, int] | None:
    """The end of the first window holding the instant and the end of the first one after it
    that does not, or None where no window holds it (a gap)."""
    if spec.cumulating:
        enter = spec.offset + ((moment - spec.offset) // spec.step + 1) * spec.step
        period_end = spec.offset + ((moment - spec.offset) // spec.length + 1) * spec.length
        return enter, period_end + spec.step
    first = _first_start_at_or_after(spec, moment - spec.length + 1)  # first start with moment < start + length
    last = _last_start_at_or_before(spec, moment)
    if first > last:
        return None
    return first + spec.length, last + spec.every + spec.length


def last_end_before(spec: WindowSpec, stop: int) -> int:
    if spec.cumulating:
        return window_ends(spec, stop - spec.step, stop)[0]
    return _last_start_at_or_before(spec, stop - 1 - spec.length) + spec.length


def window_value(timeline: _KeyTimeline, spec: WindowSpec, config: PipelineConfig, end: int) -> tuple:
    """Brute force: fold every event of the window ending at ``end`` again."""
    return fold(config, timeline.between(*window_bounds(spec, end)))


def window_changes(events: Iterable[Event], config: PipelineConfig, first_day: date,
                   last_day: date) -> list[ChangeRow]:
    """Change points with ``window_end`` in ``[first_day, last_day + 1 day)``, every window."""
    timelines = _timelines_by_kind(events, config)
    start, stop = day_start(first_day), day_start(last_day) + DAY_SECONDS
    rows = []
    for spec in config.windows:
        ends = window_ends(spec, start, stop)
        for key, timeline in timelines[spec.keyed].items():
            if spec.emit == "final":  # every closed window that held events
                rows += [ChangeRow(key, spec.name, from_epoch_seconds(t), fold(config, inside))
                         for t in ends if (inside := timeline.between(*window_bounds(spec, t)))]
                continue
            before = window_value(timeline, spec, config, ends.start - ends.step)
            # A window's event set, and so its value, can only change at an end where an event
            # enters or leaves; every other end repeats the value before it. Folding only there
            # keeps the oracle brute force (each value is refolded from raw events) but fast.
            moments = {t for x in timeline.times for t in entering_and_leaving(spec, x) or ()}
            candidates = sorted(t for t in moments if ends.start <= t < ends.stop)
            values = ((t, window_value(timeline, spec, config, t)) for t in candidates)
            rows += [ChangeRow(key, spec.name, from_epoch_seconds(t), v)
                     for t, v in change_points(values, before)]
    return rows


def snapshot(events: Iterable[Event], config: PipelineConfig, day: date) -> dict:
    """``(window, key) -> values`` as of the day's last window end, for keys not empty."""
    timelines = _timelines_by_kind(events, config)
    result = {}
    for spec in config.windows:
        last_end = last_end_before(spec, day_start(day) + DAY_SECONDS)
        for key, timeline in timelines[spec.keyed].items():
            inside = timeline.between(*window_bounds(spec, last_end))
            if inside:
                result[(spec.name, key)] = fold(config, inside)
    return result


# -- values as of an instant (point-in-time reads and joins) -------------------------------------


def as_of_end(spec: WindowSpec, at: datetime, exclusive: bool = False) -> int:
    """The end of the window whose value a read at ``at`` gets: the last window end at or before
    ``at`` (strictly before, ``exclusive``), compared at microsecond precision."""
    micros = (at - datetime(1970, 1, 1, tzinfo=timezone.utc)) // timedelta(microseconds=1)
    stop = -(-micros // 1_000_000) if exclusive else micros // 1_000_000 + 1  # ends are whole seconds
    return last_end_before(spec, stop)


def values_as_of(events: Iterable[Event], config: PipelineConfig, lookups: list[tuple[str, datetime]],
                 exclusive: bool = False) -> list[dict]:
    """Brute force, per lookup ``(key, at)`` and window: ``(window_end, event_count, values)``.

    A sliding, tumbling or cumulating window (``changes`` or ``final``) gives the fold of the
    window ending at ``as_of_end``: its events refolded, empty (count 0) where there are none.
    A session window gives its latest closed session (as ``windowing_core.sessions`` emits them)
    ending at or before ``at`` (before, ``exclusive``), or the empty value and no end; a count
    window its latest firing whose last event is before ``at``."""
    timelines = _timelines_by_kind(events, config)
    closed: dict[tuple[str, str], list] = defaultdict(list)
    for row in session_rows(events, config, date(1970, 1, 1), date(9999, 12, 30)):
        closed[(row.window, row.key)].append(row)
    fired: dict[tuple[str, str], list] = defaultdict(list)
    for row in count_rows(events, config, date(1970, 1, 1), date(9999, 12, 30)):
        fired[(row.window, row.key)].append(row)
    empty = fold(config, [])
    answers = []
    for key, at in lookups:
        answer = {}
        for spec in config.windows:
            end = as_of_end(spec, at, exclusive)
            timeline = timelines[spec.keyed].get(key if spec.keyed else ALL_KEYS)
            inside = timeline.between(*window_bounds(spec, end)) if timeline else []
            answer[spec.name] = (from_epoch_seconds(end), len(inside), fold(config, inside))
        for spec in config.sessions:
            before = [r for r in closed[(spec.name, key)] if r.window_end < at or (r.window_end == at and not exclusive)]
            last = max(before, key=lambda r: r.window_end, default=None)
            answer[spec.name] = (None, 0, empty) if last is None else (last.window_end, last.event_count, last.values)
        for spec in config.counts:
            last = max((r for r in fired[(spec.name, key)] if r.window_end < at), key=lambda r: r.window_end,
                       default=None)
            answer[spec.name] = (None, 0, empty) if last is None else (last.window_end, last.event_count, last.values)
        answers.append(answer)
    return answers


def values_at_instant(events: Iterable[Event], config: PipelineConfig,
                      lookups: list[tuple[str, datetime]]) -> list[dict]:
    """``precision: event``, brute force: per lookup ``(key, at)`` and keyed window read at the
    instant itself (``spine.read_at_instant``), ``(at, event_count, values)`` of the key's
    events with event time in ``[at - length, at)``, or for a cumulating window from the start
    of the period its window ending at ``at`` belongs to."""
    mine: dict[str, list[Event]] = defaultdict(list)
    for e in accepted_events(events, config):
        mine[e.key].append(e)
    specs = [s for s in config.windows if s.keyed and read_at_instant(s)]
    answers = []
    for key, at in lookups:
        answer = {}
        for spec in specs:
            if spec.cumulating:  # period bounds are whole seconds: the second before at says which
                lo = from_epoch_seconds(spec.period_start(to_epoch_seconds(at - timedelta(microseconds=1))))
            else:
                lo = at - timedelta(seconds=spec.length)
            inside = [e for e in mine[key] if lo <= e.event_time < at]
            answer[spec.name] = (at, len(inside), fold(config, inside))
        answers.append(answer)
    return answers


@dataclass(frozen=True)
class WindowRow:
    """A ``window_changes`` row of a window whose bounds are its events' (a session's, a count
    window's firing), not a grid's: it carries its own start and end."""

    key: str
    window: str
    window_start: datetime
    window_end: datetime
    event_count: int
    values: tuple


# -- session windows (their bounds: windowing_core.sessions) ------------------------------------


def session_rows(events: Iterable, config, first: date, last: date) -> list[WindowRow]:
    """The rows of every configured session window whose ``window_end`` lies on days
    ``first .. last``: under ``emit: final`` the sessions at or behind the watermark, under
    ``changes`` the change points (the bounds in ``windowing_core.sessions``). Each row's values
    are folded again from the raw events inside it."""
    accepted = accepted_events(events, config)
    rows: list[WindowRow] = []
    for spec in config.sessions:
        placed = accepted if spec.time == "event" else [replace(e, event_time=e.arrival_time) for e in accepted]
        if not placed:
            continue
        if spec.time == "event":
            watermark = max(e.event_time for e in placed) - timedelta(seconds=config.max_out_of_orderness)
        else:
            watermark = max(e.event_time for e in placed)
        by_key: dict[str, list] = defaultdict(list)
        for e in placed:
            by_key[e.key].append(e)
        for key, mine in sorted(by_key.items()):
            emitted = _final_rows if spec.emit == "final" else _change_rows
            rows += emitted(key, mine, spec, config, watermark, first, last)
    return rows


def _runs(mine: list, spec: SessionSpec) -> list[tuple[datetime, datetime, list]]:
    """One key's sessions: ``(window_start, window_end, the events inside)``."""
    return [(start, end, [e for e in mine if start <= e.event_time < end])
            for start, end in sessions([e.event_time for e in mine], spec)]


def _final_rows(key, mine, spec, config, watermark, first, last) -> list[WindowRow]:
    return [WindowRow(key, spec.name, start, end, len(inside), fold(config, inside))
            for start, end, inside in _runs(mine, spec)
            if end <= watermark and first <= end.date() <= last]


def _change_rows(key, mine, spec, config, watermark, first, last) -> list[WindowRow]:
    """Brute force over the bucket ends where the key's value can change: the end of each
    event's frame and the first bucket end after each session's end. At each, the value is
    refolded from the events of the session holding it (``start < T <= end``)."""
    bucket = timedelta(seconds=spec.bucket)

    def after(moment: datetime) -> datetime:  # the first bucket end after the instant
        return moment - timedelta(microseconds=micros(moment) % (spec.bucket * 1_000_000)) + bucket

    runs = _runs(mine, spec)

    def state(at: datetime) -> tuple:
        holding = [(start, inside) for start, end, inside in runs if start < at <= end]
        if not holding:
            closed = [start for start, end, _ in runs if end < at]
            return (closed[-1] if closed else None), 0, fold(config, [])
        start, inside = holding[0]
        before = [e for e in inside if e.event_time < at]
        return start, len(before), fold(config, before)

    def value(s: tuple) -> tuple:  # what a change compares: the empty state is one, whatever its start
        return ("empty",) if s[1] == 0 else s

    lo = datetime(first.year, first.month, first.day, tzinfo=timezone.utc)
    hi = datetime(last.year, last.month, last.day, tzinfo=timezone.utc) + timedelta(days=1)
    candidates = sorted({after(e.event_time) for e in mine} | {after(end) for _, end, _ in runs})
    states = {t: state(t) for t in candidates if lo <= t < hi}
    changed = change_points(((t, value(states[t])) for t in sorted(states)), value(state(lo - bucket)))
    return [WindowRow(key, spec.name, states[t][0], t, states[t][1], states[t][2]) for t, _ in changed]


# -- count windows (their bounds: windowing_core.count_windows) ----------------------------------


def count_rows(events: Iterable, config, first: date, last: date) -> list[WindowRow]:
    """The rows of every configured count window whose ``window_end`` lies on days ``first ..
    last``: per key, its accepted events numbered in (event time, event id) order, and at every
    firing the window's events folded again; of the firings at one instant, the last."""
    by_key: dict[str, list] = defaultdict(list)
    for e in accepted_events(events, config):
        by_key[e.key].append(e)
    rows: list[WindowRow] = []
    for spec in config.counts:
        for key, mine in sorted(by_key.items()):
            ordered = sorted(mine, key=lambda e: (e.event_time, e.event_id))
            fired: dict[datetime, WindowRow] = {}  # the last firing at an instant wins
            for position in range(1, len(ordered) + 1):
                inside = [ordered[i - 1] for i in window_of(position, spec)]
                if fires(position, spec) and first <= inside[-1].event_time.date() <= last:
                    fired[inside[-1].event_time] = WindowRow(key, spec.name, inside[0].event_time,
                                                              inside[-1].event_time, len(inside), fold(config, inside))
            rows += fired.values()
    return rows
