"""The running sum of a key's deltas (``jobs.windows.running_state.with_running_state``) against a
Python fold: a sum and a histogram (summed entry by entry, ``running_counts``) at every end of
several keys and windows, with deltas sharing ends, values leaving and coming back, and ends
where the histogram is empty."""

from __future__ import annotations

import random
from collections import defaultdict

from pyspark.sql import functions as F

from jobs.windows.running_state import state_columns, with_key_hash, with_running_state
from windowing_core.aggregations import aggregation
from windowing_core.config import PipelineConfig


def test_running_state_equals_the_fold_of_each_keys_deltas(spark):
    config = PipelineConfig(aggregations=(aggregation("count", "n"), aggregation("sum", "total"),
                                          aggregation("histogram", "h")))
    hist = config.aggregations[2]
    rng = random.Random(11)
    rows = []
    for window in ("w1", "w2"):
        for key in ("a", "b", "c", "d"):
            held: dict = defaultdict(int)  # what may leave: never below zero, as a window's frames
            for _ in range(rng.randrange(1, 30)):
                end = rng.randrange(0, 12) * 60
                if held and rng.random() < 0.4:  # a leaving frame
                    counts = {v: -rng.randint(1, n) for v, n in held.items() if rng.random() < 0.6}
                else:
                    counts = {rng.choice([-3, 0, 2, 5, 7]): rng.randint(1, 3) for _ in range(rng.randrange(0, 3))}
                for v, n in counts.items():
                    held[v] += n
                    if held[v] == 0:
                        del held[v]
                entering, total = int(sum(counts.values()) >= 0), sum(counts.values())
                rows.append((window, key, end, entering, total, total, total, counts))
    deltas = spark.createDataFrame(rows, "window string, key string, end long, entering int, event_count long, "
                                         "n__n long, total__s long, h__counts map<bigint,bigint>")
    deltas = with_key_hash(deltas.withColumn("total__s", F.col("total__s").cast("decimal(38,0)")))
    assert state_columns(config) == ["event_count", "n__n", "total__s", "h__counts"]
    got = {(r["window"], r["key"], r["end"]): (r["entering"], r["event_count"], r["n__n"], int(r["total__s"]),
                                               r["h__counts"], r["previous_h__counts"], r["previous_n__n"],
                                               r["next_end"])
           for r in with_running_state(deltas, config).select(
               "window", "key", "end", "entering", "event_count", "n__n", "total__s", "previous_n__n",
               F.map_entries("h__counts").alias("h__counts"),  # PySpark's dict would lose the map's order
               F.map_entries("previous_h__counts").alias("previous_h__counts"), "next_end").collect()}

    expected = {}
    for (window, key) in {(r[0], r[1]) for r in rows}:
        mine = sorted((r for r in rows if (r[0], r[1]) == (window, key)), key=lambda r: r[2])
        ends = sorted({r[2] for r in mine})
        count, histogram, previous = 0, hist.empty(), (0, hist.empty())
        for i, end in enumerate(ends):
            at = [r for r in mine if r[2] == end]
            count += sum(r[4] for r in at)
            for r in at:
                histogram = hist.combine(histogram, (r[7],))
            entries = [(v, n) for v, n in sorted(histogram[0].items())]
            before = [(v, n) for v, n in sorted(previous[1][0].items())]
            expected[(window, key, end)] = (sum(r[3] for r in at), count, count, count, entries, before,
                                            previous[0], ends[i + 1] if i + 1 < len(ends) else None)
            previous = (count, histogram)
    assert any(not v[4] for v in expected.values()), "some end must hold an empty histogram"
    assert got == {k: (*v[:4], [tuple(e) for e in v[4]], [tuple(e) for e in v[5]], *v[6:])
                   for k, v in expected.items()}
