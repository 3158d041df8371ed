"""Property tests: random landing folders through every Spark job equal the brute-force oracle.

Each case draws events over several days with late arrivals, duplicates (same and different
payloads), missing event ids and malformed lines, runs ingest, minute partials and sliding
windows exactly as the assets do, and compares every table with ``windowing_core.reference``.
"""

from __future__ import annotations

from collections import Counter
from datetime import date, timedelta

import pytest

from jobs import delta_io, ingest_events, minute_partials, sliding_windows
from jobs.tables import EVENTS, MINUTE_PARTIALS, WINDOW_CHANGES, WINDOW_SNAPSHOT
from tests.landing import ensure_days, random_landing
from windowing_core import reference
from windowing_core.config import PipelineConfig
from windowing_core.window_spec import WindowSpec

FIRST = date(2025, 1, 28)
EVENT_DAYS = 3


def _rows(spark, path, *columns):
    return sorted(tuple(r) for r in delta_io.read_table(spark, path).select(*columns).collect())


def run_pipeline(spark, landing, lakehouse, config, *, window_days, day_by_day):
    last_arrival = FIRST + timedelta(days=EVENT_DAYS - 1 + 3)
    ensure_days(landing, FIRST, last_arrival)
    ingest = ingest_events.ingest(spark, str(landing), lakehouse, FIRST, last_arrival, config)
    minute_partials.run(spark, lakehouse, FIRST, FIRST + timedelta(days=EVENT_DAYS - 1), config)
    first, last = window_days
    if day_by_day:
        day = first
        while day <= last:
            sliding_windows.run(spark, lakehouse, day, day, config)
            day += timedelta(days=1)
    else:
        sliding_windows.run(spark, lakehouse, first, last, config)
    return ingest


def expected_changes(events, config, first, last):
    return sorted((r.key, r.window, r.window_end.replace(tzinfo=None), *r.values)
                  for r in reference.window_changes(events, config, first, last))


def expected_snapshots(events, config, first, last):
    rows = []
    day = first
    while day <= last:
        rows += [(key, window, day, *values)
                 for (window, key), values in reference.snapshot(events, config, day).items()]
        day += timedelta(days=1)
    return sorted(rows)


CASES = [
    # seed, windows, day by day
    (1, (WindowSpec.of("7d", "7d", "1m"),), True),
    (2, (WindowSpec.of("1h", "1h", "1m"), WindowSpec.of("3h", "3h", "20m", offset="-5m")), True),
    (3, (WindowSpec.of("1d", "1d", "1d"), WindowSpec.of("50m", "50m", "20m")), False),
    (4, (WindowSpec.of("2d", "2d", "1h", offset="30m"),), False),
]


@pytest.mark.parametrize("seed, windows, day_by_day", CASES)
def test_every_table_equals_the_oracle(spark, tmp_path, seed, windows, day_by_day):
    config = PipelineConfig(windows=windows)
    landing = random_landing(tmp_path / "landing", seed, FIRST, EVENT_DAYS)
    lakehouse = str(tmp_path / "lakehouse")
    window_days = (FIRST, FIRST + timedelta(days=EVENT_DAYS + 2))

    ingest = run_pipeline(spark, tmp_path / "landing", lakehouse, config,
                          window_days=window_days, day_by_day=day_by_day)

    assert ingest.input_records == landing.lines
    assert ingest.reconciles
    assert ingest.quarantined == landing.malformed

    accepted = reference.accepted_events(landing.events, config)
    partial_rows = _rows(spark, MINUTE_PARTIALS.path(lakehouse), "key", "frame_start", "event_count",
                         *[a.name + "__" + a.fields[0].name for a in config.aggregations])
    expected_partials = sorted(
        (key, frame.replace(tzinfo=None), count, *values)
        for day in range(EVENT_DAYS)
        for (key, frame), (count, values) in reference.minute_partials(
            landing.events, config, FIRST + timedelta(days=day)).items())
    assert partial_rows == expected_partials
    assert sum(r[2] for r in partial_rows) == len(accepted)

    changes = _rows(spark, WINDOW_CHANGES.path(lakehouse), "key", "window", "window_end",
                    *[a.name for a in config.aggregations])
    assert changes == expected_changes(landing.events, config, *window_days)

    snapshots = _rows(spark, WINDOW_SNAPSHOT.path(lakehouse), "key", "window", "date",
                      *[a.name for a in config.aggregations])
    assert snapshots == expected_snapshots(landing.events, config, *window_days)


def test_range_run_equals_day_by_day_runs(spark, tmp_path):
    config = PipelineConfig(windows=(WindowSpec.of("1d", "1d", "10m"),))
    random_landing(tmp_path / "landing", 11, FIRST, EVENT_DAYS)
    window_days = (FIRST, FIRST + timedelta(days=EVENT_DAYS))
    tables = {}
    for mode in (True, False):
        lakehouse = str(tmp_path / f"lakehouse-{mode}")
        run_pipeline(spark, tmp_path / "landing", lakehouse, config, window_days=window_days, day_by_day=mode)
        tables[mode] = [
            _rows(spark, WINDOW_CHANGES.path(lakehouse), "key", "window", "window_end", "count", "sum", "date"),
            _rows(spark, WINDOW_SNAPSHOT.path(lakehouse), "key", "window", "as_of", "event_count", "count", "sum", "date"),
        ]
    assert tables[True] == tables[False]
    assert tables[True][0], "the case must produce change points to compare"


def test_rerunning_a_partition_gives_identical_tables(spark, tmp_path):
    config = PipelineConfig(windows=(WindowSpec.of("1d", "1d", "1h"),))
    random_landing(tmp_path / "landing", 5, FIRST, EVENT_DAYS)
    lakehouse = str(tmp_path / "lakehouse")
    window_days = (FIRST, FIRST + timedelta(days=EVENT_DAYS))
    run_pipeline(spark, tmp_path / "landing", lakehouse, config, window_days=window_days, day_by_day=True)

    def contents():
        return {t.name: Counter(tuple(r) for r in delta_io.read_table(spark, t.path(lakehouse)).collect())
                for t in (EVENTS, MINUTE_PARTIALS, WINDOW_CHANGES, WINDOW_SNAPSHOT)}

    before = contents()
    day = FIRST + timedelta(days=1)
    ingest_events.ingest(spark, str(tmp_path / "landing"), lakehouse, day, day, config)
    minute_partials.run(spark, lakehouse, day, day, config)
    sliding_windows.run(spark, lakehouse, day, day, config)
    assert contents() == before
