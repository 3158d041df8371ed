"""The point-in-time join against the oracle: random events, random spine rows, late firings.

Spine rows fall at random milliseconds, exactly on window ends and a millisecond either side,
on session ends, before a key's first event and on keys without events. Every joined value must
equal the brute-force value as of the row's ts (``reference.values_as_of``), and none may come
from after it.
"""

from __future__ import annotations

import random
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import pytest

from jobs import errors, ingest_events, minute_partials, point_in_time_join, sliding_windows
from jobs.as_of.reading import Reading, read_end
from jobs.point_in_time import values_as_of
from jobs.storage import delta_io
from orchestration.report import top_keys
from tests.landing import ensure_days, random_landing, with_row_expressions
from windowing_core import reference
from windowing_core.aggregations import Custom, aggregation
from windowing_core.config import PipelineConfig
from windowing_core.reference import count_rows, session_rows
from windowing_core.count_windows import CountSpec
from windowing_core.sessions import SessionSpec
from windowing_core.spine import SpineSpec
from windowing_core.window_spec import WindowSpec, from_epoch_seconds

FIRST = date(2025, 1, 28)
EVENT_DAYS = 3
LAST_WINDOW_DAY = FIRST + timedelta(days=EVENT_DAYS + 1)
MS = timedelta(milliseconds=1)

# Sliding (changes), tumbling final, a daily tumbling window whose ends lie at 16:00 UTC (a read
# at 03:00 reads the day before's end), sessions (final rows, and change points while open), and
# count windows (sliding by one event, and tumbling).
CONFIG = PipelineConfig(
    windows=(WindowSpec.of("1h", "1h", "10m"), WindowSpec.of("3h", "3h", emit="final"),
             WindowSpec.of("day_cn", "1d", offset="-8h"), WindowSpec.of("so_far", "6h", step="2h")),
    sessions=(SessionSpec.of("visits", "30m"), SessionSpec.of("live", "20m", emit="changes")),
    counts=(CountSpec("last_3", 3, 1), CountSpec("every_4", 4, 4)),
    aggregations=(aggregation("count"), aggregation("sum"), aggregation("max"), aggregation("mean"),
                  Custom("per_event", {"s": "sum(value * 2)", "n": "count(*)"}, "s / n - 1")),  # a user's own
)


def _midnight(day: date) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=timezone.utc)


def materialise_with_a_late_firing(spark, tmp_path, seed):
    """Stage 1: arrival days FIRST .. FIRST + 1, windows day by day. Stage 2 (a late firing):
    the later arrival days land, their event days' partials and the window days they reach are
    materialised again as one range run, replacing the partitions stage 1 wrote."""
    landing = random_landing(tmp_path / "landing", seed, FIRST, EVENT_DAYS, events_per_day=30)
    root, lake = tmp_path / "landing", str(tmp_path / "lake")
    ensure_days(root, FIRST, LAST_WINDOW_DAY + timedelta(days=1))
    early = FIRST + timedelta(days=1)
    ingest_events.ingest(spark, str(root), lake, FIRST, early, CONFIG)
    minute_partials.run(spark, lake, FIRST, early, CONFIG)
    for day in (FIRST, early):
        sliding_windows.run(spark, lake, day, day, CONFIG)
    ingest_events.ingest(spark, str(root), lake, early + timedelta(days=1), LAST_WINDOW_DAY + timedelta(days=1), CONFIG)
    minute_partials.run(spark, lake, FIRST, FIRST + timedelta(days=EVENT_DAYS - 1), CONFIG)
    sliding_windows.run(spark, lake, FIRST, LAST_WINDOW_DAY, CONFIG)
    return with_row_expressions(spark, landing.events, CONFIG), lake


def spine_instants(events, rng: random.Random) -> list[tuple[str, datetime]]:
    keys = sorted({e.key for e in events})
    start, stop = _midnight(FIRST - timedelta(days=1)), _midnight(LAST_WINDOW_DAY + timedelta(days=1))
    rows = [(rng.choice(keys), start + timedelta(milliseconds=rng.randrange(int((stop - start).total_seconds() * 1000))))
            for _ in range(60)]
    for hour in range(0, 24 * (EVENT_DAYS + 2), 5):  # on the 10m and 3h grids' ends, and a millisecond off
        end = _midnight(FIRST) + timedelta(hours=hour)
        rows += [(rng.choice(keys), m) for m in (end, end - MS, end + MS)]
    for day in range(-1, EVENT_DAYS + 2):  # day_cn's ends, at 16:00 UTC
        end = _midnight(FIRST) + timedelta(days=day, hours=16)
        rows += [(rng.choice(keys), m) for m in (end, end - MS, end + MS)]
    for row in rng.sample(session_rows(events, CONFIG, FIRST, LAST_WINDOW_DAY), 8) + rng.sample(
            count_rows(events, CONFIG, FIRST, LAST_WINDOW_DAY), 8):  # at firings: a read there must not see them
        rows += [(row.key, row.window_end), (row.key, row.window_end - MS), (row.key, row.window_end + MS)]
    firsts = {}
    for e in reference.accepted_events(events, CONFIG):
        firsts[e.key] = min(firsts.get(e.key, e.event_time), e.event_time)
    rows += [(key, moment - timedelta(minutes=3, milliseconds=1)) for key, moment in firsts.items()]
    rows += [("nobody", _midnight(FIRST) + timedelta(hours=12))]
    return rows


def joined_rows(spark, tmp_path, lake, rows, *, exclusive, name, precision="bucket"):
    spine_path = str(tmp_path / f"{name}.parquet")
    spark.createDataFrame([(i, key, moment, f"label{i}") for i, (key, moment) in enumerate(rows)],
                          "row_id int, user_id string, ts timestamp, label string").write.parquet(spine_path)
    spine = SpineSpec(path=spine_path, exclusive=exclusive, precision=precision)
    out = str(tmp_path / f"{name}_out")
    result = point_in_time_join.run(spark, lake, out, spine, CONFIG)
    assert result["rows_written"] == len(rows)
    return {r.row_id: r for r in delta_io.read_table(spark, out).collect()}


def test_every_joined_value_equals_the_oracle_as_of_its_row_and_none_comes_from_after_it(spark, tmp_path):
    events, lake = materialise_with_a_late_firing(spark, tmp_path, seed=5)
    lookups = spine_instants(events, random.Random(11))
    aggregations = [a.name for a in CONFIG.aggregations]
    for exclusive in (False, True):
        got = joined_rows(spark, tmp_path, lake, lookups, exclusive=exclusive, name=f"spine_{exclusive}")
        assert len(got) == len(lookups)
        expected = reference.values_as_of(events, CONFIG, lookups, exclusive=exclusive)
        seen_values = 0
        for i, ((key, moment), want) in enumerate(zip(lookups, expected)):
            row = got[i]
            assert (row.user_id, row.ts.replace(tzinfo=timezone.utc), row.label, row.date) == \
                (key, moment, f"label{i}", moment.date())
            for window, (end, count, values) in want.items():
                actual_end = row[f"{window}__window_end"]
                actual = (row[f"{window}__event_count"], *[row[f"{window}__{a}"] for a in aggregations])
                assert actual == (count, *values), (exclusive, window, key, moment)
                assert (actual_end and actual_end.replace(tzinfo=timezone.utc)) == end, (exclusive, window, key, moment)
                read_at = row[f"{window}__read_at"]
                # never from after the row's ts: the window read ends at or before it, as does its row
                if actual_end is not None:
                    assert actual_end < row.ts or (actual_end == row.ts and not exclusive)
                assert read_at is None or read_at <= (actual_end or row.ts)
                seen_values += count > 0
        assert seen_values > len(lookups), "the spine must find values"

    # precision: event, on the same tables: the sliding (1h) and cumulating (so_far) windows hold
    # exactly the events of [ts - 1h, ts) and [period start, ts), at random milliseconds and at
    # the instants where an event enters (ts on it) or leaves (ts - 1h on it); the others as above.
    accepted = reference.accepted_events(events, CONFIG)
    rng = random.Random(12)
    lookups += [(e.key, e.event_time + d) for e in rng.sample(accepted, 15) for d in (timedelta(0), MS, -MS)]
    lookups += [(e.key, e.event_time + timedelta(hours=1) + d) for e in rng.sample(accepted, 10)
                for d in (timedelta(0), MS)]
    got = joined_rows(spark, tmp_path, lake, lookups, exclusive=False, name="spine_event", precision="event")
    exact = reference.values_at_instant(events, CONFIG, lookups)
    bucket = reference.values_as_of(events, CONFIG, lookups)
    assert {name for answer in exact for name in answer} == {"1h", "so_far"}
    differs = 0
    for i, ((key, moment), want, before) in enumerate(zip(lookups, exact, bucket)):
        row = got[i]
        for window, (end, count, values) in {**before, **want}.items():
            actual = (row[f"{window}__event_count"], *[row[f"{window}__{a}"] for a in aggregations])
            assert actual == (count, *values), ("event", window, key, moment)
            if window in want:
                assert row[f"{window}__window_end"].replace(tzinfo=timezone.utc) == moment
                differs += (count, *values) != (before[window][1], *before[window][2])
    assert differs > 10, "the instants must fall where the exact value is not the bucket's"


def test_point_in_time_reads_of_a_sessions_only_configuration(spark, tmp_path):
    """``values_as_of`` answers sessions: each key's latest closed session at or before the instant."""
    config = PipelineConfig(windows=(), sessions=(SessionSpec.of("visits", "30m"),),
                            aggregations=(aggregation("count"), aggregation("sum")))
    landing = random_landing(tmp_path / "landing", 3, FIRST, 2, events_per_day=30)
    root, lake = tmp_path / "landing", str(tmp_path / "lake")
    ensure_days(root, FIRST, FIRST + timedelta(days=4))
    ingest_events.ingest(spark, str(root), lake, FIRST, FIRST + timedelta(days=4), config)
    minute_partials.run(spark, lake, FIRST, FIRST + timedelta(days=1), config)
    sliding_windows.run(spark, lake, FIRST, FIRST + timedelta(days=2), config)
    closed = session_rows(landing.events, config, FIRST, FIRST + timedelta(days=2))
    for moment in (_midnight(FIRST) + timedelta(hours=13), closed[0].window_end, _midnight(FIRST + timedelta(days=2))):
        got = {(r.key, r.window_end.replace(tzinfo=timezone.utc), r["count"], r["sum"])
               for r in values_as_of(spark, lake, moment, config).collect()}
        keys = sorted({e.key for e in landing.events})
        expected = reference.values_as_of(landing.events, config, [(k, moment) for k in keys])
        assert got == {(k, answer["visits"][0], answer["visits"][1], answer["visits"][2][1])
                       for k, answer in zip(keys, expected) if answer["visits"][1]}, moment
    # the demo's report ranks such a configuration's keys by their latest closed session
    title, ranked = top_keys(Path(lake), config, limit=3)
    latest = {}
    for row in closed:
        if row.key not in latest or row.window_end > latest[row.key].window_end:
            latest[row.key] = row
    expected_top = sorted(latest.values(), key=lambda r: (-r.values[1], r.key))[:3]
    assert [(r["key"], r["sum"]) for r in ranked] == [(r.key, r.values[1]) for r in expected_top]
    assert title.startswith("visits sum in each key's latest closed session")


def test_reading_windows_by_name_and_refusals():
    assert [w.name for w in Reading.of(CONFIG).windows] == ["1h", "3h", "day_cn", "so_far", "visits", "live", "last_3",
                                                          "every_4"]
    assert [w.name for w in Reading.of(CONFIG, precision="event").exact] == ["1h", "so_far"]
    assert [a.name for a in Reading.of(CONFIG, ("visits",), ("sum",)).aggregations] == ["sum"]
    with pytest.raises(ValueError, match="spine.windows: 7d not configured"):
        Reading.of(CONFIG, ("7d",))
    unkeyed = PipelineConfig(windows=(WindowSpec.of("all", "1h", keyed=False), WindowSpec.of("1h", "1h")))
    assert [w.name for w in Reading.of(unkeyed).windows] == ["1h"]
    with pytest.raises(ValueError, match="all is not keyed"):
        Reading.of(unkeyed, ("all",))


def test_the_oracle_reads_the_end_at_or_before_at_millisecond_precision():
    #   11:50        12:00        12:10
    #     |------------|------------|       ends every 10 minutes
    #              ^ 11:59:59.999 -> 11:50   ^ 12:00:00.000 -> 12:00 (exclusive: 11:50)
    #                                        ^ 12:00:00.001 -> 12:00 (both)
    spec = WindowSpec.of("w", "1h", "10m")
    noon = datetime(2025, 1, 28, 12, tzinfo=timezone.utc)
    assert [from_epoch_seconds(reference.as_of_end(spec, noon + d, x)).time().isoformat()
            for d in (-MS, timedelta(0), MS) for x in (False, True)] == \
        ["11:50:00", "11:50:00", "12:00:00", "11:50:00", "12:00:00", "12:00:00"]


def test_the_command_line_refuses_a_missing_spine_and_unknown_windows_naming_them(capsys):
    for argv, message in ((["--lakehouse", "l"], "give --spine, or spine: in the configuration"),
                          (["--lakehouse", "l", "--spine", "s.parquet", "--windows", "30d"],
                           "--windows/--aggregations.windows: 30d not configured")):
        with pytest.raises(SystemExit) as exit_:
            point_in_time_join.main(argv)
        assert exit_.value.code == 2
        assert message in capsys.readouterr().err


def test_a_spine_without_its_columns_with_null_times_or_clashing_names_is_refused(spark, tmp_path):
    path = str(tmp_path / "spine.parquet")
    spark.createDataFrame([("k0", None, 1), ("k1", datetime(2025, 1, 28, 12), 2)],
                          "user_id string, ts timestamp, `1h__count` int").write.parquet(path)
    with pytest.raises(errors.SpineError, match="spine.key: the spine .* has no column 'account'"):
        point_in_time_join.read_spine(spark, SpineSpec(path=path, key="account"))
    with pytest.raises(errors.SpineError, match="spine.ts: column 'user_id' .* is string, not a timestamp"):
        point_in_time_join.read_spine(spark, SpineSpec(path=path, key="ts", ts="user_id"))
    spine = SpineSpec(path=path)
    rows = point_in_time_join.read_spine(spark, spine)
    with pytest.raises(errors.SpineError, match="spine.ts: 1 row.* have a null 'ts'"):
        point_in_time_join.spine_bounds(rows, spine)
    with pytest.raises(errors.SpineError, match="column.* 1h__count .* clash"):
        point_in_time_join.joined(spark, str(tmp_path / "lake"), rows, spine, CONFIG, Reading.of(CONFIG),
                                  _midnight(FIRST), _midnight(FIRST))


def test_the_end_read_in_spark_is_the_oracles_to_the_microsecond(spark):
    """A microsecond before or after an end, and a millisecond: the end read by Spark is the
    oracle's (``reference.as_of_end``, in integers), inclusive and exclusive."""
    from pyspark.sql import functions as F


    spec = WindowSpec.of("w", "1h", "10m")
    noon = datetime(2025, 1, 28, 12, tzinfo=timezone.utc)
    moments = [noon + d for d in (timedelta(0), -timedelta(microseconds=1), timedelta(microseconds=1), -MS, MS,
                                  timedelta(minutes=10) - timedelta(microseconds=1))]
    frame = spark.createDataFrame([(m,) for m in moments], "at timestamp")
    for exclusive in (False, True):
        got = [r[0] for r in frame.select(read_end(F.col("at"), spec, exclusive)).collect()]
        assert got == [reference.as_of_end(spec, m, exclusive) for m in moments], exclusive
