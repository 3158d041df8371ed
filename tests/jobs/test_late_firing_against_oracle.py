"""Late firings of every window kind against the oracle, in daily and range runs.

Arrival days land in three batches. After each, ingest takes the new arrival days, the
partials job re-materialises the event days they reach (A - L .. A), and the windows job the
window days from there on, day by day in one lakehouse and as one range run in another, as
declarative automation and a backfill would. After every batch both lakehouses hold exactly
the oracle's change points and snapshots over the records landed so far (late and duplicate
records included: ``random_landing``). The daily lakehouse's days are then loaded into an online
store in a random order, one of them twice, as automation and re-runs may: the store holds
exactly the oracle's keys of the latest day, with the values of its snapshot.
"""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import date, timedelta

import pytest

from jobs import ingest_events, minute_partials, online_values, sliding_windows
from jobs.tables import WINDOW_CHANGES, WINDOW_SNAPSHOT
from tests.jobs.test_pipeline_against_oracle import _rows, assert_rows_equal
from tests.landing import ensure_days, random_landing
from tests.postgres_server import new_database, server_or_skip
from windowing_core import arrival, reference
from windowing_core.aggregations import aggregation
from windowing_core.config import PipelineConfig
from windowing_core.online import OnlineSpec
from windowing_core.window_spec import WindowSpec

FIRST = date(2025, 1, 28)
EVENT_DAYS = 3

# One kind of each way a window keeps its value (a running sum, moments, the exact value over
# frames and day tiles, a sketch, a bounded list, a map): a late firing re-materialises each
# way once, whatever the kind (every kind: tests/jobs/test_pipeline_against_oracle.py).
EACH_WAY = tuple(aggregation(kind) for kind in ("count", "sum", "var_samp", "min", "last", "approx_percentile",
                                                 "last_k", "histogram"))

CASES = [
    # seed, windows, aggregations, the rest of the configuration
    (61, (WindowSpec.of("cn", "1d", offset="-8h", emit="final"), WindowSpec.of("odd", "50m", "20m", offset="-7m"),
          WindowSpec.of("gaps", "1h", "90m", align_to="2025-01-28T00:10:00Z"),
          WindowSpec.of("cum3d", "3d", offset="-8h", step="4h"), WindowSpec.of("all", "1d", "1h", keyed=False)),
     EACH_WAY, {}),
    (62, (WindowSpec.of("ar1h", "1h", "10m", time="arrival"), WindowSpec.of("fin", "2h", "20m", emit="final"),
          WindowSpec.of("all_today", "1d", step="2h", keyed=False)),
     None, {"late_policy": "drop", "watermark_clock": "arrival", "max_out_of_orderness": 1800}),
]


def expected(events, config, first, last):
    """The oracle's change points and snapshots: event-time windows by the reference, arrival-time
    ones by ``windowing_core.arrival``."""
    by_event = replace(config, windows=tuple(w for w in config.windows if w.time == "event"))
    by_arrival = bool(config.arrival_windows)
    changes = [(r.key, r.window, r.window_end.replace(tzinfo=None), *r.values)
               for r in (*reference.window_changes(events, by_event, first, last),
                         *(arrival.window_changes(events, config, first, last) if by_arrival else ()))]
    snapshots = []
    for i in range((last - first).days + 1):
        day = first + timedelta(days=i)
        for source in (reference.snapshot(events, by_event, day),
                       arrival.snapshot(events, config, day) if by_arrival else {}):
            snapshots += [(key, window, day, *values) for (window, key), values in source.items()]
    return sorted(changes), sorted(snapshots)


@pytest.fixture(scope="module")
def postgres():
    with server_or_skip() as server:
        yield server


@pytest.mark.parametrize("seed, windows, aggregations, rest", CASES)
def test_late_firings_equal_the_oracle_in_daily_and_range_runs(spark, tmp_path, postgres, seed, windows, aggregations,
                                                               rest):
    host, port, user = postgres
    online = OnlineSpec(f"postgresql://{user}@{host}:{port}/{new_database(host, port, user, f'late{seed}')}")
    config = PipelineConfig(windows=windows, aggregations=aggregations or PipelineConfig().aggregations,
                            online=online, **rest)
    rng = random.Random(seed)
    landing = random_landing(tmp_path / "landing", seed, FIRST, EVENT_DAYS, events_per_day=25)
    last_day = FIRST + timedelta(days=EVENT_DAYS + 1)
    ensure_days(tmp_path / "landing", FIRST, FIRST + timedelta(days=EVENT_DAYS + 2))
    lakes = {"daily": str(tmp_path / "daily"), "range": str(tmp_path / "range")}
    names = [a.name for a in config.aggregations]
    landed_until = FIRST - timedelta(days=1)
    for arrival_day in (FIRST + timedelta(days=1), FIRST + timedelta(days=3), FIRST + timedelta(days=EVENT_DAYS + 2)):
        first = max(FIRST, landed_until + timedelta(days=1 - config.allowed_lateness_days))
        days = [first + timedelta(days=i) for i in range((last_day - first).days + 1)]
        for mode, lake in lakes.items():
            ingest_events.ingest(spark, str(tmp_path / "landing"), lake, landed_until + timedelta(days=1),
                                 arrival_day, config)
            minute_partials.run(spark, lake, first, min(arrival_day, FIRST + timedelta(days=EVENT_DAYS - 1)), config)
            for run_first, run_last in ([(d, d) for d in days] if mode == "daily" else [(first, last_day)]):
                sliding_windows.run(spark, lake, run_first, run_last, config)
        landed_until = arrival_day

        landed = [e for e in landing.events if e.arrival_date <= arrival_day]
        changes, snapshots = expected(landed, config, FIRST, last_day)
        for lake in lakes.values():
            assert_rows_equal(_rows(spark, WINDOW_CHANGES.path(lake), "key", "window", "window_end", *names),
                              changes, config, lead=3)
            assert_rows_equal(_rows(spark, WINDOW_SNAPSHOT.path(lake), "key", "window", "date", *names),
                              snapshots, config, lead=3)

        for day in [*rng.sample(days, len(days)), rng.choice(days)]:
            online_values.load(lakes["daily"], day, config, online)
        comparison = online_values.compare(lakes["daily"], last_day, config, online)
        latest = {(key, window) for key, window, day, *_ in snapshots if day == last_day}
        assert comparison.ok and comparison.equal == comparison.snapshot_rows == len(latest), comparison
        stored = {(r["key"], r["window"]) for key in {k for k, _ in latest}
                  for r in online_values.lookup(online, config, key)}
        assert stored == latest
    assert {r[1] for r in changes} == {w.name for w in windows}, "every window must write rows"
    late = [e for e in landing.events if e.arrival_date > e.event_date]
    assert late, "the case must have late arrivals to fire on"
