"""The checks of ``daily_partials``: one tile per key and day, equal to the sums of the day's frames."""

from __future__ import annotations

from collections import defaultdict
from datetime import date
from functools import reduce
from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from expectations.check import ERROR, Check, Outcome
from expectations.inputs import Inputs, Results, rows_per_day
from expectations.shared_checks import partial_sign_checks
from expectations.validation import SAMPLE_ROWS, Pairs, Suite, gx_expectations, json_safe, readable_columns, run_suite
from jobs.tables import DAILY_PARTIALS, MINUTE_PARTIALS, declared_columns
from windowing_core.config import PipelineConfig

TABLE = DAILY_PARTIALS


def checks(config: PipelineConfig) -> list[Check]:
    """The checks of ``daily_partials`` (kept where a window reads day tiles)."""
    return [
        Check("keys_not_null", DAILY_PARTIALS.name, ERROR,
              "Day tiles without a key, which non-invertible windows would fold into one phantom key."),
        Check("tiles_unique", DAILY_PARTIALS.name, ERROR,
              "Two tiles for one key and day: min, max and the like would see the day twice."),
        Check("counts_non_negative", DAILY_PARTIALS.name, ERROR,
              "Negative event counts in a day tile."),
        Check("tiles_match_minute_partials", DAILY_PARTIALS.name, ERROR,
              "Day tiles that disagree with the day's minute frames: per key, event_count and every "
              "invertible partial field must equal the sums over its frames, and every key with frames "
              "must have a tile (non-invertible fields are covered by changes_conserve_frames, which "
              "recomputes windows from the frames)."),
        Check("schema_matches_declared", DAILY_PARTIALS.name, ERROR,
              "Columns renamed, dropped, reordered or retyped: the window job would misread the tiles."),
    ]


def suite(config: PipelineConfig) -> Suite:
    declared = declared_columns(DAILY_PARTIALS.name, config)

    def build() -> Pairs:
        gxe = gx_expectations()
        return [
            ("keys_not_null", gxe.ExpectColumnValuesToNotBeNull(column="key")),
            ("tiles_unique", gxe.ExpectCompoundColumnsToBeUnique(column_list=["key", "event_date"])),
            *partial_sign_checks(config),
        ]

    return Suite(DAILY_PARTIALS.name, "event_date", readable_columns(declared), declared, build)


def tiles_match_minute_partials(tiles: DataFrame, partials: DataFrame, config: PipelineConfig,
                                days: list[date]) -> dict[date, Outcome]:
    """Per key and day, the tile's event_count and invertible fields equal the sums over the
    day's frames (an invertible partial is a vector of sums, so summing is its combine), and
    every key with frames has exactly its tile. Compared in Spark over every key."""
    invertible = [a for a in config.aggregations if a.invertible]
    fields = ["event_count", *[c for a in invertible for c in a.field_columns()]]
    merges = [F.sum("event_count").alias("frames_event_count")]
    for a in invertible:  # each with its own combine: a sum, or a merge of a histogram's counts
        merges += a.spark_merged(prefix="frames_")
    summed = partials.groupBy("event_date", "key").agg(*merges)
    stored = tiles.select("event_date", "key", *[F.col(c).alias(f"tile_{c}") for c in fields])
    maps = {c for a in invertible for c, f in zip(a.field_columns(), a.fields) if f.spark_type.startswith("map<")}

    def comparable(column: str, field: str) -> Column:  # Spark compares no maps: their sorted entries
        return F.array_sort(F.map_entries(F.col(column))) if field in maps else F.col(column)

    differs = reduce(lambda a, b: a | b,
                     [~comparable(f"frames_{c}", c).eqNullSafe(comparable(f"tile_{c}", c)) for c in fields])
    bad = summed.join(stored, ["event_date", "key"], "full").where(differs).persist()
    try:
        counts = rows_per_day(bad, "event_date")
        rank = Window.partitionBy("event_date").orderBy("key")
        examples: dict[date, list] = defaultdict(list)
        first_few = bad.withColumn("n", F.row_number().over(rank)).where(F.col("n") <= SAMPLE_ROWS).drop("n")
        for r in first_few.collect():
            examples[r["event_date"]].append(json_safe(r.asDict()))
    finally:
        bad.unpersist()
    outcomes = {}
    for day in days:
        metadata: dict[str, Any] = {"fields_compared": fields, "keys_differing": counts.get(day, 0)}
        if examples[day]:
            metadata["sample_rows"] = examples[day]
        outcomes[day] = Outcome(not counts.get(day), metadata)
    return outcomes


def evaluate(inputs: Inputs) -> Results:
    tiles = inputs.read(DAILY_PARTIALS, "event_date", inputs.first, inputs.last)
    results = run_suite(tiles, tiles, suite(inputs.config), inputs.days,
                        inputs.selected)
    if "tiles_match_minute_partials" in inputs.selected:
        results["tiles_match_minute_partials"] = tiles_match_minute_partials(
            tiles, inputs.read(MINUTE_PARTIALS, "event_date", inputs.first, inputs.last), inputs.config,
            inputs.days)
    return results
