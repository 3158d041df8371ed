"""The window grid's Spark expressions (``jobs.windows.window_grid``) agree with ``WindowSpec``'s, for
many windows of every kind at once: the jobs place frames and read windows by the former, the
reference implementation by the latter."""

from __future__ import annotations

import random

from pyspark.sql import functions as F

from jobs.windows.window_grid import Windows
from windowing_core.sessions import SessionSpec
from windowing_core.window_spec import WindowSpec

SPECS = (
    WindowSpec.of("7d", "7d", "1m"),
    WindowSpec.of("odd", "50m", "20m", offset="-7m"),
    WindowSpec.of("gaps", "1h", "90m", align_to="2025-01-28T00:10:00Z"),
    WindowSpec.of("cn", "1d", offset="-8h"),
    WindowSpec.of("cum3d", "3d", offset="-8h", step="4h"),
    WindowSpec.of("cum", "6h", step="1h"),
    WindowSpec.of("coarse", "1d", "10m", bucket="10m"),
)


def test_ends_and_starts_of_every_window_kind_equal_the_specs_own(spark):
    """Instants on and off every grid, about a month around one day, each asked of its window."""
    rng = random.Random(7)
    instants = [1_738_000_000 + rng.randrange(-10**6, 10**6) for _ in range(60)]
    instants += [s.end_at_or_after(t) for s in SPECS for t in instants[:5]]  # ends themselves
    by_name = {s.name: s for s in SPECS}
    windows = Windows(SPECS)
    ends = spark.createDataFrame([(s.name, t) for s in SPECS for t in instants], "window string, t long").select(
        "window", "t", windows.end_at_or_after(F.col("t")).alias("end")).collect()
    assert len(ends) == len(SPECS) * len(instants)
    assert [r["end"] for r in ends] == [by_name[r["window"]].end_at_or_after(r["t"]) for r in ends]
    # a window's start is asked of its ends
    starts = spark.createDataFrame([(r["window"], r["end"]) for r in ends], "window string, end long").select(
        "window", "end", windows.window_start_of(F.col("end")).alias("start")).collect()
    assert [r["start"] for r in starts] == [by_name[r["window"]].window_start(r["end"]) for r in starts]


def test_a_parameter_all_windows_share_is_one_literal_and_differing_ones_a_case_on_the_name():
    one = Windows(SPECS[:1])
    assert "CASE" not in str(one.param(lambda s: s.every))
    assert "CASE" in str(Windows(SPECS).param(lambda s: s.every))
    sessions = Windows((SessionSpec.of("a", "30m"), SessionSpec.of("b", "30m", max_length="6h")))
    assert "CASE" not in str(sessions.param(lambda s: s.gap))
    assert "CASE" in str(sessions.param(lambda s: s.max_length))
    assert str(sessions.choose(lambda s: True, lambda: F.lit(1), lambda: F.lit(2))) == str(F.lit(1))
