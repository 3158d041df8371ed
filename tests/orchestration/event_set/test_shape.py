"""The two samplers of the generated set draw one shape: the demo's Python sampler and the
bench's Spark sampler, measured on the same statistics against what ``EventShape`` says."""

from __future__ import annotations

import json
from collections import Counter
from datetime import date, datetime

import pytest
from pyspark.sql import functions as F

from bench.generate import accepted, benchmark_events
from orchestration.demo_events import generate_demo_events
from orchestration.event_set.shape import EventShape
from tests.orchestration.test_demo_events import read_lines

START, DAYS, PER_DAY, KEYS = date(2025, 1, 27), 3, 20_000, 2_000
SHAPE = EventShape(keys=KEYS)


def _statistics(keys: list[str], hours: list[int], delays: list[int], values: list[int]) -> dict[str, float]:
    """The shares a shape fixes: the top 20 keys', the afternoon's, the late days', the ones."""
    n = len(keys)
    return {
        "top_20_keys": sum(c for _, c in Counter(keys).most_common(20)) / n,
        "hours_14_to_20": sum(14 <= h < 20 for h in hours) / n,
        "hours_2_to_8": sum(2 <= h < 8 for h in hours) / n,
        "one_day_late": sum(d == 1 for d in delays) / n,
        "value_one": sum(v == 1 for v in values) / n,
    }


def _expected() -> dict[str, float]:
    ranks = [SHAPE.key_weight(r) for r in range(1, KEYS + 1)]
    return {
        "top_20_keys": sum(ranks[:20]) / sum(ranks),
        "hours_14_to_20": SHAPE.traffic_share_until(20) - SHAPE.traffic_share_until(14),
        "hours_2_to_8": SHAPE.traffic_share_until(8) - SHAPE.traffic_share_until(2),
        "one_day_late": SHAPE.late_share - SHAPE.late_2d_share,
        "value_one": SHAPE.value_omitted_share + SHAPE.value_one_share
        + (1 - SHAPE.value_omitted_share - SHAPE.value_one_share) / (SHAPE.value_range[1] - SHAPE.value_range[0] + 1),
    }


def _python_sample(tmp_path) -> dict[str, float]:
    generate_demo_events(tmp_path, start=START, days=DAYS, events_per_day=PER_DAY, keys=KEYS, duplicate_share=0.0)
    keys, hours, delays, values = [], [], [], []
    for line in read_lines(tmp_path):
        try:
            record = json.loads(line.text)
            at = datetime.fromisoformat(record["timestamp"].replace("Z", "+00:00"))
        except (ValueError, KeyError, TypeError, AttributeError):
            continue  # the broken lines
        if not isinstance(record.get("user_id"), str) or not isinstance(record.get("value", 1), int):
            continue
        keys.append(record["user_id"])
        hours.append(at.hour)
        delays.append((line.folder_date - at.date()).days)
        values.append(record.get("value", 1))
    return _statistics(keys, hours, delays, values)


def _spark_sample(spark) -> dict[str, float]:
    events = benchmark_events(spark, DAYS * PER_DAY, START, DAYS, KEYS)
    rows = events.select("key", F.hour("event_time").alias("h"),
                         F.date_diff("arrival_date", F.to_date("event_time")).alias("d"), "value",
                         F.col("line") <= DAYS * PER_DAY).collect()
    rows = [r for r in rows if r[4]]  # the originals: re-sends come after them
    return _statistics([r.key for r in rows], [r.h for r in rows], [r.d for r in rows], [r.value for r in rows])


@pytest.fixture(scope="module")
def samples(spark, tmp_path_factory) -> dict[str, dict[str, float]]:
    return {"python": _python_sample(tmp_path_factory.mktemp("demo")), "spark": _spark_sample(spark)}


@pytest.mark.parametrize("statistic", sorted(_expected()))
def test_both_samplers_draw_the_shape(statistic, samples):
    expected = _expected()[statistic]
    # 60,000 events: a share's standard error is at most 0.002; the Spark Zipf is continuous, rounded
    tolerance = 0.02 if statistic == "top_20_keys" else 0.01
    assert samples["python"][statistic] == pytest.approx(expected, abs=tolerance), samples
    assert samples["spark"][statistic] == pytest.approx(expected, abs=tolerance), samples


def test_the_events_table_holds_what_ingest_accepts(spark):
    events = benchmark_events(spark, 20_000, START, 2, 100, shape=EventShape(beyond_share=0.05, late_share=0.1))
    delays = {r.d for r in accepted(events).select(
        F.date_diff("arrival_date", F.to_date("event_time")).alias("d")).distinct().collect()}
    assert delays == {0, 1, 2}
    beyond = events.where(F.date_diff("arrival_date", F.to_date("event_time")) > 2).count()
    assert beyond > 0  # the landing holds them, for ingest to set aside
