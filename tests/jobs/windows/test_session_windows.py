"""Session windows through every Spark job: the seeds' example, late merging, and the oracle."""

from __future__ import annotations

import json
from collections import Counter
from datetime import date, datetime, timedelta, timezone

import pytest

from jobs import ingest_events, minute_partials, sliding_windows
from jobs.storage import delta_io
from jobs.tables import SESSION_STATE, WINDOW_CHANGES
from tests.jobs.test_pipeline_against_oracle import (
    EVERY_AGGREGATION, SOME_TYPED_AGGREGATIONS, assert_rows_equal, fields_of,
)
from tests.landing import ensure_days, random_landing
from windowing_core.config import PipelineConfig
from windowing_core.count_windows import CountSpec
from windowing_core.reference import accepted_events, count_rows, session_rows
from windowing_core.run_interval import RunInterval
from windowing_core.sessions import SessionSpec
from windowing_core.window_spec import WindowSpec

DAY = date(2025, 1, 30)


def at(h: int, m: int = 0, day: int = 0) -> datetime:
    return datetime(2025, 1, 30, tzinfo=timezone.utc) + timedelta(days=day, hours=h, minutes=m)


def land(root, arrival: date, events: list[tuple[str, datetime, int]], name: str = "events.json") -> None:
    folder = root / arrival.isoformat()
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("\n".join(
        json.dumps({"user_id": k, "timestamp": t.isoformat(), "value": v, "event_id": f"{k}@{t.isoformat()}"})
        for k, t, v in events) + "\n")


def materialise(spark, landing, lake, config, arrivals: tuple[date, date], event_days: tuple[date, date],
                window_days: tuple[date, date]) -> None:
    ensure_days(landing, *arrivals)
    ingest_events.ingest(spark, str(landing), lake, *arrivals, config)
    minute_partials.run(spark, lake, *event_days, config)
    sliding_windows.run(spark, lake, *window_days, config)


def sessions_of(spark, lake, window: str | None = None):
    rows = delta_io.read_table(spark, WINDOW_CHANGES.path(lake))
    if window:
        rows = rows.where(rows.window == window)
    return sorted((r.key, r.window_start, r.window_end, r.event_count, r["sum"], r.date) for r in rows.collect())


def naive(*moments: datetime) -> list[datetime]:
    return [m.replace(tzinfo=None) for m in moments]


def test_bytewax_session_example_three_sessions_through_spark(spark, tmp_path):
    # Bytewax's SessionWindower(gap=30 min): key a at 00:00, 00:10, 00:15 | 00:50, 01:00 | 01:30;
    # key b at 03:00 moves the watermark (03:00 - 5 min) past a's last session, and its own
    # session (ends 03:30) is still open at the end of the data: not emitted.
    #
    #   00:00   00:30   01:00   01:30   02:00        03:00   03:30
    #   a a a         a  a       a                   b
    #   [0:00 ---- 0:45)                             [3:00 -- 3:30)  open
    #                 [0:50 ---- 1:30)
    #                            [1:30 ---- 2:00)
    events = [("a", at(0, m), 1) for m in (0, 10, 15, 50, 60, 90)] + [("b", at(3), 7)]
    land(tmp_path / "landing", DAY, events)
    config = PipelineConfig.from_dict({"windows": {"visits": {"gap": "30m"}}})
    lake = str(tmp_path / "lake")
    materialise(spark, tmp_path / "landing", lake, config, (DAY, DAY), (DAY, DAY), (DAY, DAY))
    assert sessions_of(spark, lake) == [
        ("a", *naive(at(0), at(0, 45)), 3, 3, DAY),
        ("a", *naive(at(0, 50), at(1, 30)), 2, 2, DAY),
        ("a", *naive(at(1, 30), at(2)), 1, 1, DAY),
    ]


def test_a_late_event_bridging_two_sessions_merges_them_and_one_extending_a_session_moves_its_end(
        spark, tmp_path):
    # gap 30m. Day 0: a at 23:00 and 23:40, b at 10:00; day 2: c at 12:00 moves the watermark on.
    #
    #   day 0 22:30   23:00   23:30   | day 1 00:00   00:30
    #                 a               a
    #                 [23:00--23:30)  [23:40 ------- 00:10)     before
    #                 a    (a 23:20, arriving late on day 1)
    #                 [23:00 ---------------------- 00:10)      after: one row, day 1's partition
    #
    #   b: [10:00, 10:30) on day 0; a late b at 10:20 moves its end to 10:50
    config = PipelineConfig.from_dict({"windows": {"visits": {"gap": "30m"}},
                                       "aggregations": {"count": "count", "sum": "sum"}})
    landing, lake = tmp_path / "landing", str(tmp_path / "lake")
    day1, day2 = DAY + timedelta(days=1), DAY + timedelta(days=2)
    land(landing, DAY, [("a", at(23), 1), ("a", at(23, 40), 2), ("b", at(10), 5)])
    land(landing, day2, [("c", at(12, day=2), 1)])
    materialise(spark, landing, lake, config, (DAY, day2), (DAY, day2), (DAY, day2))
    assert sessions_of(spark, lake) == [
        ("a", *naive(at(23), at(23, 30)), 1, 1, DAY),
        ("a", *naive(at(23, 40), at(0, 10, day=1)), 1, 2, day1),
        ("b", *naive(at(10), at(10, 30)), 1, 5, DAY),
    ]

    # the late events land on day 1; late firing re-materialises event day 0 and the window days
    land(landing, day1, [("a", at(23, 20), 4), ("b", at(10, 20), 6)], name="late.json")
    ingest_events.ingest(spark, str(landing), lake, day1, day1, config)
    minute_partials.run(spark, lake, DAY, DAY, config)
    sliding_windows.run(spark, lake, DAY, day1, config)
    assert sessions_of(spark, lake) == [
        ("a", *naive(at(23), at(0, 10, day=1)), 3, 7, day1),
        ("b", *naive(at(10), at(10, 50)), 2, 11, DAY),
    ]


def test_a_session_longer_than_a_day_is_carried_across_days_and_max_length_cuts_it(spark, tmp_path):
    # a every 20 minutes from day 0 00:00 to day 1 05:40; b on day 2 moves the watermark on.
    #
    #   day 0 00:00                      | day 1 00:00        06:00 | day 2
    #   a a a a a a a a a a a a a a a a a | a a a a a a a a a         b
    #   visits: [day 0 00:00 ------------------------------- day 1 06:10)
    #   capped: [day 0 00:00 ---------- 24:00) [day 1 00:00 - 06:10)
    events = [("a", at(0, 20 * i), 1) for i in range(87)] + [("b", at(12, day=2), 1)]
    for arrival in {t.date() for _, t, _ in events}:  # each on its own day
        land(tmp_path / "landing", arrival, [e for e in events if e[1].date() == arrival])
    config = PipelineConfig.from_dict({"windows": {"visits": {"gap": "30m"},
                                                   "capped": {"gap": "30m", "max_length": "1d"}}})
    day2 = DAY + timedelta(days=2)
    expected = [("a", *naive(at(0), at(24)), 72, 72, DAY + timedelta(days=1)),
                ("a", *naive(at(24), at(29, 10)), 15, 15, DAY + timedelta(days=1))]
    lakes = {mode: str(tmp_path / mode) for mode in ("daily", "range")}
    for mode, lake in lakes.items():
        ensure_days(tmp_path / "landing", DAY, day2)
        ingest_events.ingest(spark, str(tmp_path / "landing"), lake, DAY, day2, config)
        minute_partials.run(spark, lake, DAY, day2, config)
        for first, last in ([(DAY + timedelta(days=i),) * 2 for i in range(3)] if mode == "daily" else [(DAY, day2)]):
            sliding_windows.run(spark, lake, first, last, config)
        assert sessions_of(spark, lake, "visits") == [("a", *naive(at(0), at(29, 10)), 87, 87, DAY + timedelta(days=1))]
        assert sessions_of(spark, lake, "capped") == expected  # the first cut ends at midnight: day 1
    state = {mode: sorted(map(tuple, delta_io.read_table(spark, SESSION_STATE.path(lake)).collect()), key=repr)
             for mode, lake in lakes.items()}
    assert state["daily"] == state["range"]
    assert ("a", "visits", DAY) in {(r[0], r[1], r[-1]) for r in state["daily"]}


FIRST = date(2025, 1, 28)
EVENT_DAYS = 3

CASES = [
    # seed, sessions, sliding windows beside them, count windows, aggregations, window days run one by one
    (32, (SessionSpec.of("s2h", "2h"), SessionSpec.of("cut", "1d", max_length="6h")),
     (WindowSpec.of("1h", "1h", "1m"),), (CountSpec("c4", 4, 4), CountSpec("c9s2", 9, 2)), EVERY_AGGREGATION, False),
    # provisional change points, beside final rows of the same gap, day by day
    (33, (SessionSpec.of("c30m", "30m", emit="changes"), SessionSpec.of("c6h", "6h", max_length="1d", emit="changes"),
          SessionSpec.of("f6h", "6h")), (),
     (CountSpec("c3s1", 3, 1), CountSpec("c30", 30, 30), CountSpec("c5s3", 5, 3)), None, True),
    # sessions by arrival time, final and changes, day by day
    (35, (SessionSpec.of("a30m", "30m", time="arrival", max_length="6h"),
          SessionSpec.of("ac6h", "6h", time="arrival", emit="changes")), (), (), EVERY_AGGREGATION, True),
    (36, (SessionSpec.of("s1h", "1h"),), (), (CountSpec("c2", 2, 2),), SOME_TYPED_AGGREGATIONS, False),  # typed fields
]


# Cases whose second event day's windows run below a day, cut at these hours, in this order (the
# part closing the day, which writes the day's state, first): each part writes the rows ending in it.
CUTS = {33: ((7, 16), (2, 0, 1))}


def parts_of(day: date, cuts: tuple[int, ...], order: tuple[int, ...]) -> list[RunInterval]:
    midnight = datetime(day.year, day.month, day.day, tzinfo=timezone.utc)
    bounds = [midnight + timedelta(hours=h) for h in (0, *cuts, 24)]
    parts = [RunInterval(a, b) for a, b in zip(bounds, bounds[1:])]
    return [parts[i] for i in order]


@pytest.mark.parametrize("seed, sessions, windows, counts, aggregations, day_by_day", CASES)
def test_sessions_equal_the_oracle_as_arrivals_land(spark, tmp_path, seed, sessions, windows, counts, aggregations,
                                                   day_by_day):
    """Arrival days land in three batches; after each, the event days they reach are
    materialised again (late firing) with every window day from there on, day by day or as one
    range run, and the rows of the session and count windows equal the oracle over the records
    landed so far (late and duplicate records, and events tied at one instant, included:
    ``random_landing``)."""
    config = PipelineConfig(windows=windows, sessions=sessions, counts=counts, max_out_of_orderness=1800,
                            aggregations=aggregations or PipelineConfig().aggregations,
                            fields=fields_of(aggregations))
    landing = random_landing(tmp_path / "landing", seed, FIRST, EVENT_DAYS, events_per_day=30,
                             fields=dict(config.fields) or None, ties=0.15)
    last_day = FIRST + timedelta(days=EVENT_DAYS + 1)
    ensure_days(tmp_path / "landing", FIRST, FIRST + timedelta(days=EVENT_DAYS + 2))
    lake = str(tmp_path / "lake")
    names = [a.name for a in config.aggregations]
    landed_until = FIRST - timedelta(days=1)
    cut_day, parts_run = FIRST + timedelta(days=1), 0
    for arrival in (FIRST + timedelta(days=1), FIRST + timedelta(days=3), FIRST + timedelta(days=EVENT_DAYS + 2)):
        ingest_events.ingest(spark, str(tmp_path / "landing"), lake, landed_until + timedelta(days=1), arrival, config)
        first = max(FIRST, landed_until + timedelta(days=1 - config.allowed_lateness_days))
        minute_partials.run(spark, lake, first, min(arrival, FIRST + timedelta(days=EVENT_DAYS - 1)), config)
        days = [first + timedelta(days=i) for i in range((last_day - first).days + 1)]
        for run_first, run_last in ([(d, d) for d in days] if day_by_day else [(first, last_day)]):
            if run_first == run_last == cut_day and seed in CUTS:
                for part in parts_of(cut_day, *CUTS[seed]):
                    sliding_windows.run(spark, lake, cut_day, cut_day, config, interval=part)
                    parts_run += 1
            else:
                sliding_windows.run(spark, lake, run_first, run_last, config)
        landed_until = arrival

        landed = [e for e in landing.events if e.arrival_date <= arrival]
        expected = sorted((r.key, r.window, r.window_start.replace(tzinfo=None), r.window_end.replace(tzinfo=None),
                           r.event_count, *r.values)
                          for r in [*session_rows(landed, config, FIRST, last_day),
                                    *count_rows(landed, config, FIRST, last_day)])
        changes = delta_io.read_table(spark, WINDOW_CHANGES.path(lake)).where(
            f"window in ({', '.join(repr(s.name) for s in (*sessions, *counts))})")
        actual = sorted(tuple(r) for r in changes.select("key", "window", "window_start", "window_end",
                                                          "event_count", *names).collect())
        assert_rows_equal(actual, expected, config, lead=5)
    assert expected, "the case must close sessions"
    assert bool(parts_run) == (seed in CUTS), "a cut case must run its day in parts"
    assert any(r[3].date() > r[2].date() for r in expected), "the case must have a session crossing midnight"
    for spec in (*sessions, *counts):
        if spec.name != "c30":  # more events than any key has: it never fires
            assert any(r[1] == spec.name for r in expected), f"the case must write rows of {spec.name}"
        if getattr(spec, "emit", None) == "changes":
            assert any(r[1] == spec.name and r[4] == 0 for r in expected), "a session must step back to empty"
        if getattr(spec, "slide", None) and not spec.tumbling:
            assert any(r[1] == spec.name and r[4] < spec.size for r in expected), "a key's first windows hold fewer"
    instants = Counter((e.key, e.event_time) for e in accepted_events(landed, config))
    assert max(instants.values()) > 1, "the case must have events of one key at one instant"
