"""The seeds' classic examples, run through every Spark job, with answers worked out by hand."""

import json
from datetime import date, datetime, timedelta, timezone

import pytest

from jobs import ingest_events, minute_partials, sliding_windows
from jobs.runtime import computed_once
from jobs.storage import delta_io
from jobs.tables import DAILY_PARTIALS, LATE_EVENTS, WINDOW_CHANGES
from windowing_core.config import PipelineConfig

DAY = date(2025, 1, 30)


def at(h, m, s=0):
    return datetime(2025, 1, 30, h, m, s)


def window_rows(spark, tmp_path, config_yaml, events, *, days=1, extra=()):
    """(window_end, count, sum) rows after ingesting ``events`` = [(timestamp, value)] in this
    order, of the window ends in ``days`` days from DAY."""
    folder = tmp_path / "landing" / DAY.isoformat()
    folder.mkdir(parents=True)
    (folder / "events.json").write_text("\n".join(
        json.dumps({"user_id": key[0] if key else "a", "timestamp": t.replace(tzinfo=timezone.utc).isoformat(),
                    "value": v})
        for t, v, *key in events))
    config = PipelineConfig.from_dict(config_yaml)
    lake = str(tmp_path / "lake")
    ingest_events.ingest(spark, str(tmp_path / "landing"), lake, DAY, DAY, config)
    minute_partials.run(spark, lake, DAY, DAY, config)
    sliding_windows.run(spark, lake, DAY, DAY + timedelta(days=days - 1), config)
    rows = delta_io.read_table(spark, WINDOW_CHANGES.path(lake)).orderBy("window_end", "key").collect()
    return [(r.window_end, r["count"], r["sum"], *[r[c] for c in extra]) for r in rows]


def test_ten_second_window_sliding_every_second_over_events_up_to_7s_out_of_order(spark, tmp_path):
    # arrival order: :05 :01 :08 :02 :09 (the :02 arrives 6 s behind the newest event)
    #
    #   0    1    2    3    4    5    6    7    8    9    10   11   12   13 ... 16 ... 19   20  (s)
    #        x    x              x              x    x
    #   end  2: [-8, 2)  {1}            -> 1      end 12: [2, 12)  {2,5,8,9} -> 4
    #   end  3: [-7, 3)  {1,2}          -> 2      end 13: [3, 13)  {5,8,9}   -> 3
    #   end  6: [-4, 6)  {1,2,5}        -> 3      end 16: [6, 16)  {8,9}     -> 2
    #   end  9: [-1, 9)  {1,2,5,8}      -> 4      end 19: [9, 19)  {9}       -> 1
    #   end 10: [0, 10)  {1,2,5,8,9}    -> 5      end 20: [10, 20) {}        -> 0
    events = [(at(0, 0, 5), 1), (at(0, 0, 1), 1), (at(0, 0, 8), 1), (at(0, 0, 2), 1), (at(0, 0, 9), 1)]
    rows = window_rows(spark, tmp_path, {"bucket": "1s", "windows": {"10s": {"length": "10s", "slide": "1s"}}},
                       events)
    assert [(r[0].second, r[1]) for r in rows] == [
        (2, 1), (3, 2), (6, 3), (9, 4), (10, 5), (12, 4), (13, 3), (16, 2), (19, 1), (20, 0)]


def test_tumbling_five_minute_windows_emit_one_final_row_per_closed_window(spark, tmp_path):
    #   00:00        00:05        00:10        00:15
    #   [ 1    2    )[ 3         )[    4      )
    #     :01  :04:59  :05:00        :12
    #   end 00:05 -> count 2, sum 3;  end 00:10 -> 1, 3;  end 00:15 -> 1, 4; no row for empty windows
    events = [(at(0, 1), 1), (at(0, 4, 59), 2), (at(0, 5), 3), (at(0, 12), 4)]
    rows = window_rows(spark, tmp_path, {"windows": {"5m": {"length": "5m", "emit": "final"}}}, events)
    assert rows == [(at(0, 5), 2, 3), (at(0, 10), 1, 3), (at(0, 15), 1, 4)]


def test_one_hour_windows_sliding_by_30_minutes_with_a_15_minute_offset(spark, tmp_path):
    #   ends at :15 and :45
    #   23:45    00:15    00:45    01:15    01:45    02:15
    #     |   1    | 2      |     4  |        |        |
    #        00:10  00:20        01:00
    #   end 00:15 [-00:45, 00:15) {1}     -> 1, 1
    #   end 00:45 [-00:15, 00:45) {1, 2}  -> 2, 3
    #   end 01:15 [00:15, 01:15)  {2, 4}  -> 2, 6
    #   end 01:45 [00:45, 01:45)  {4}     -> 1, 4
    #   end 02:15 [01:15, 02:15)  {}      -> 0, 0
    events = [(at(0, 10), 1), (at(0, 20), 2), (at(1, 0), 4)]
    rows = window_rows(spark, tmp_path, {"windows": {"1h": {"length": "1h", "slide": "30m", "offset": "15m"}}},
                       events)
    assert rows == [(at(0, 15), 1, 1), (at(0, 45), 2, 3), (at(1, 15), 2, 6), (at(1, 45), 1, 4), (at(2, 15), 0, 0)]


def test_flink_daily_windows_with_an_offset_of_minus_8_hours_start_at_a_beijing_midnight(spark, tmp_path):
    # TumblingEventTimeWindows.of(days(1), hours(-8)): windows start at 16:00 UTC (00:00 UTC+8)
    #
    #   29th 16:00          30th 16:00          31st 16:00
    #   [ 1        2        )[ 4                 )
    #     30th 01:00  15:59    16:00
    events = [(at(1, 0), 1), (at(15, 59), 2), (at(16, 0), 4)]
    rows = window_rows(spark, tmp_path, {"windows": {"d": {"length": "1d", "offset": "-8h", "emit": "final"}}},
                       events, days=2)
    assert rows == [(at(16, 0), 2, 3), (at(16, 0) + timedelta(days=1), 1, 4)]


def test_a_window_length_that_is_not_a_multiple_of_the_slide(spark, tmp_path):
    # SlidingEventTimeWindows.of(minutes(50), minutes(20)): starts on the 20-minute grid, so
    # ends at :10, :30, :50 (not on the slide grid itself)
    #
    #   -00:40   -00:20   00:00  :05   :10   :20  :25   :30   :40   :50   01:10  01:30
    #    [--------------------------------)                                       end 00:10 {1}
    #             [--------------------------------------)                        end 00:30 {1, 2}
    #                      [---------------------------------------------)        end 00:50 {1, 2}
    #                                       [-------------------------------)     end 01:10 {2}
    #                                                           [-------------)   end 01:30 {}
    #                            1                 2
    events = [(at(0, 5), 1), (at(0, 25), 2)]
    rows = window_rows(spark, tmp_path, {"windows": {"w": {"length": "50m", "slide": "20m"}}}, events)
    # 00:50 holds what 00:30 held: no change point there
    assert rows == [(at(0, 10), 1, 1), (at(0, 30), 2, 3), (at(1, 10), 1, 2), (at(1, 30), 0, 0)]


def test_bytewax_one_hour_windows_every_90_minutes_leave_gaps(spark, tmp_path):
    # SlidingWindower(length=1h, offset=90m, align_to=midnight): events in a gap are in no window
    #
    #   00:00      01:00    01:30      02:30    03:00      04:00    04:30      05:30
    #   [ 1        )   g    [    4     )  g     [  16      )        [          )
    #     00:30      01:10       02:00    02:45    03:15
    events = [(at(0, 30), 1), (at(1, 10), 2), (at(2, 0), 4), (at(2, 45), 8), (at(3, 15), 16)]
    config = {"windows": {"w": {"length": "1h", "slide": "90m", "align_to": "2025-01-30T00:00:00Z"}}}
    rows = window_rows(spark, tmp_path, config, events)
    assert rows == [(at(1, 0), 1, 1), (at(2, 30), 1, 4), (at(4, 0), 1, 16), (at(5, 30), 0, 0)]


def test_cumulating_windows_grow_by_the_step_and_start_again_each_period(spark, tmp_path):
    # CUMULATE(step 20m, size 1h): "so far this hour, every 20 minutes"
    #
    #   00:00      00:20      00:40      01:00      01:20      01:40      02:00      02:20
    #   [----------)                                                                   {1}
    #   [---------------------)                                                        {1, 2}
    #   [--------------------------------)                                             {1, 2, 4}
    #                                    [----------)  .. [---------------------------) {8}
    #                                                                        [----------) {}
    #     1 (00:05)      2 (00:30)  4 (00:50)  8 (01:10)
    events = [(at(0, 5), 1), (at(0, 30), 2), (at(0, 50), 4), (at(1, 10), 8)]
    config = {"windows": {"c": {"length": "1h", "step": "20m"}},
              "aggregations": {"count": "count", "sum": "sum", "high": "max"}}
    rows = window_rows(spark, tmp_path, config, events, extra=("high", "window_start"))
    assert rows == [  # 01:40 and 02:00 hold what 01:20 held: no change points there
        (at(0, 20), 1, 1, 1, at(0, 0)), (at(0, 40), 2, 3, 2, at(0, 0)), (at(1, 0), 3, 7, 4, at(0, 0)),
        (at(1, 20), 1, 8, 8, at(1, 0)), (at(2, 20), 0, 0, None, at(2, 0))]


def test_final_rows_of_a_sliding_window_are_one_per_window_holding_events(spark, tmp_path):
    # 1h windows every 20m, emit final: every window end whose window holds an event
    #
    #   -00:40  -00:20  00:00  00:20  00:40  01:00  01:20  01:40  02:00
    #    [-----------------------)                                        {1}
    #            [-----------------------)                                {1}
    #                    [-----------------------)                        {1, 2}
    #                           [-----------------------)                 {2}
    #                                  [-----------------------)          {2}
    #                                         [-----------------------)   {}: no row
    #                      1 (00:05)               2 (00:50)
    events = [(at(0, 5), 1), (at(0, 50), 2)]
    rows = window_rows(spark, tmp_path, {"windows": {"w": {"length": "1h", "slide": "20m", "emit": "final"}}},
                       events)
    assert rows == [(at(0, 20), 1, 1), (at(0, 40), 1, 1), (at(1, 0), 2, 3), (at(1, 20), 1, 2), (at(1, 40), 1, 2)]


def test_a_non_keyed_window_beside_a_keyed_one_aggregates_every_key_together(spark, tmp_path):
    # 1h tumbling, per key and over all keys (key "*"), emit final
    #
    #   00:00                 01:00                 02:00
    #   [ a:1   b:2   a:4     )[ b:8                )
    #   per key: a -> 2, 5; b -> 1, 2 | b -> 1, 8       all keys "*": 3, 7 | 1, 8
    events = [(at(0, 10), 1, "a"), (at(0, 20), 2, "b"), (at(0, 40), 4, "a"), (at(1, 30), 8, "b")]
    config = {"windows": {"per_key": {"length": "1h", "emit": "final"},
                          "all": {"length": "1h", "emit": "final", "keyed": False}}}
    rows = window_rows(spark, tmp_path, config, events, extra=("window", "key"))
    assert sorted(rows, key=lambda r: (r[3], r[0], r[4])) == [
        (at(1, 0), 3, 7, "all", "*"), (at(2, 0), 1, 8, "all", "*"),
        (at(1, 0), 2, 5, "per_key", "a"), (at(1, 0), 1, 2, "per_key", "b"), (at(2, 0), 1, 8, "per_key", "b")]


@pytest.mark.parametrize("scope", ["global", "key"])
def test_bytewax_event_clock_table_marks_only_the_10_36_item_late(spark, tmp_path, scope):
    # EventClock(wait_for_system_duration=5 min): items 10:35, 10:38, 10:39, 10:36 arriving at
    # 10:32, 10:34, 10:36, 10:38; the watermark before each is -, 10:32, 10:35, 10:37
    #
    #   arrival 10:32  10:34  10:36  10:38
    #   item    10:35  10:38  10:39  10:36 < 10:37: late
    folder = tmp_path / "landing" / DAY.isoformat()
    folder.mkdir(parents=True)
    seen = [((10, 35), (10, 32)), ((10, 38), (10, 34)), ((10, 39), (10, 36)), ((10, 36), (10, 38))]
    (folder / "events.json").write_text("\n".join(json.dumps(
        {"user_id": "a", "event_id": f"i{n}", "timestamp": f"{DAY}T{t[0]}:{t[1]}:00Z",
         "arrival_time": f"{DAY}T{a[0]}:{a[1]}:00Z"}) for n, (t, a) in enumerate(seen)))
    config = PipelineConfig.from_dict({"late_policy": "drop", "max_out_of_orderness": "5m",
                                       "watermark_clock": "arrival", "watermark_scope": scope})
    lake = str(tmp_path / "lake")
    ingest_events.ingest(spark, str(tmp_path / "landing"), lake, DAY, DAY, config)
    minute_partials.run(spark, lake, DAY, DAY, config)
    late = delta_io.read_table(spark, LATE_EVENTS.path(lake)).select("event_id", "reason").collect()
    assert [tuple(r) for r in late] == [("i3", "behind_watermark")]


def test_a_sliding_run_that_fails_part_way_leaves_nothing_cached(spark, tmp_path, monkeypatch):
    # With no snapshot of the day before, the job bootstraps and so computes once the frames it
    # reads twice; under Spark Connect it persists them (``computed_once``), and a failure after
    # that must not leave them cached for the rest of a long-lived server.
    monkeypatch.setattr(computed_once, "is_remote", lambda: True)
    config = {"windows": {"1h": {"length": "1h"}}}
    window_rows(spark, tmp_path, config, [(at(0, 10), 1)])
    spark.catalog.clearCache()
    cache = spark._jsparkSession.sharedState().cacheManager()

    def broken(*args, **kwargs):
        assert not cache.isEmpty(), "nothing was persisted: this test no longer tests the clean-up"
        raise RuntimeError("broken after the persist")

    monkeypatch.setattr(sliding_windows, "table_rows", broken)
    with pytest.raises(RuntimeError, match="broken after the persist"):
        sliding_windows.run(spark, str(tmp_path / "lake"), DAY, DAY, PipelineConfig.from_dict(config))
    assert cache.isEmpty()


@pytest.mark.parametrize("aggregations, kept", [
    ({"count": "count", "sum": "sum"}, False),  # invertible: carried by the snapshot, no tiles read
    ({"count": "count", "sum": "sum", "high": "max"}, True),  # max over a day slides over day tiles
])
def test_daily_partials_are_written_only_where_a_window_slides_over_them(spark, tmp_path, aggregations, kept):
    config = {"windows": {"1d": {"length": "1d", "slide": "1h"}}, "aggregations": aggregations}
    rows = window_rows(spark, tmp_path, config, [(at(0, 10), 1), (at(5, 0), 2)])
    assert [(r[1], r[2]) for r in rows] == [(1, 1), (2, 3)]  # the window ends at 01:00 and 06:00
    assert delta_io.table_exists(DAILY_PARTIALS.path(str(tmp_path / "lake"))) is kept
