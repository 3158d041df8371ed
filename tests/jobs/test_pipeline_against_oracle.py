"""Property tests: random landing folders through every Spark job equal the brute-force oracle.

Each case draws events over several days with late arrivals, duplicates (same and different
payloads), missing event ids and malformed lines, runs ingest, minute partials and sliding
windows exactly as the assets do, and compares every table with ``windowing_core.reference``.
"""

from __future__ import annotations

import json
import random
import shutil
from collections import Counter
from dataclasses import replace
from datetime import date, datetime, timedelta, timezone

import dagster as dg
import pytest
from dagster_pyspark import PySparkResource

from assets import build_assets
from assets.resources import LakehouseResource
from assets.spark_launch import SparkLaunchResource
from jobs import errors, ingest_events, minute_partials, sliding_windows
from jobs.ingest_events import IngestResult
from jobs.storage import delta_io
from jobs.tables import (
    EVENTS, LATE_EVENTS, MINUTE_PARTIALS, QUARANTINE, SPINE_VALUES, WINDOW_CHANGES, WINDOW_SNAPSHOT,
)
from jobs.windows import running_state, window_inputs
from jobs.windows.partial_merges import with_finished_values
from tests.landing import composite_key, ensure_days, random_landing, with_row_expressions
from windowing_core import reference
from windowing_core.aggregations import AGGREGATIONS, ApproxDistinct, Custom, Moments, Variance, aggregation
from windowing_core.config import PipelineConfig
from windowing_core.deployment import Deployment
from windowing_core.reference import session_rows
from windowing_core.run_interval import RunInterval
from windowing_core.sessions import SessionSpec
from windowing_core.source import SourceSpec
from windowing_core.spine import SpineGroup, SpineSpec
from windowing_core.window_spec import ALL_KEYS, WindowSpec

EVERY_AGGREGATION = tuple(aggregation(kind) for kind in AGGREGATIONS)

TYPED_FIELDS = (("amount", "decimal(12,2)"), ("latency", "double"), ("clicks", "bigint"), ("page", "string"),
                ("ok", "boolean"))


def typed_aggregations(kinds_by_field: dict[str, tuple[str, ...]]) -> tuple:
    """``<kind>_<field>`` for each kind over each field of ``TYPED_FIELDS`` it names."""
    types = dict(TYPED_FIELDS)
    return tuple(aggregation(kind, f"{kind}_{name}", name, types[name])
                 for name, kinds in kinds_by_field.items() for kind in kinds)


# Fewer, where other tests run many configurations: one of each method over each type.
SOME_TYPED_AGGREGATIONS = typed_aggregations({
    "amount": ("sum", "mean", "var_samp", "min"), "latency": ("sum", "mean", "stddev_pop", "max"),
    "clicks": ("sum", "count"), "page": ("first", "last", "approx_distinct"), "ok": ("min",),
})


def fields_of(aggregations) -> tuple:
    """``TYPED_FIELDS`` where the aggregations read them, else none (the one value)."""
    return TYPED_FIELDS if aggregations and any(a.field != "value" for a in aggregations) else ()


# Every kind over every type it applies to, in one configuration (a few kinds repeat across types
# only where the type changes the method: a double's sum, mean and variance slide over tiles).
EVERY_TYPED_AGGREGATION = typed_aggregations({
    "amount": ("count", "sum", "mean", "var_samp", "stddev_pop", "min", "max", "first", "last", "approx_distinct"),
    "latency": ("count", "sum", "mean", "var_pop", "stddev_samp", "min", "max", "first", "last", "approx_distinct"),
    "clicks": ("sum", "mean", "var_pop", "min", "last"),
    "page": ("count", "min", "max", "first", "last", "approx_distinct"),
    "ok": ("count", "min", "max", "first", "last", "approx_distinct"),
})

# Chronon's kinds over every type each applies to: moments exact on longs (with values past what
# their power sums hold: null) and decimals, by Pebay's merges on doubles; lists, sets and
# histograms of numbers, strings and booleans; percentiles of longs, decimals and doubles.
EVERY_TYPED_KIND = typed_aggregations({
    "amount": ("skew", "kurtosis", "approx_percentile", "top_k", "first_k", "unique_count"),
    "latency": ("skew", "kurtosis", "approx_percentile", "bottom_k", "last_k", "unique_count", "approx_distinct"),
    "clicks": ("count", "skew", "kurtosis", "histogram", "approx_percentile", "top_k", "last_k"),
    "page": ("count", "histogram", "first_k", "top_k", "unique_count", "approx_distinct"),
    "ok": ("last_k", "bottom_k", "unique_count"),
})

# A computed field (over a decimal and a long, null where amount is) and a row filter (null
# where ok is: not selected), added to the typed case
SPEND = ("spend", "decimal(18,2)")
ROW_EXPRESSIONS = {"columns": ((SPEND[0], "amount * 2 + clicks % 3"),),
                   "where": "coalesce(page, '') NOT IN ('cart', 'a b') OR ok"}
SPEND_AGGREGATIONS = (aggregation("sum", "sum_spend", *SPEND), aggregation("max", "max_spend", *SPEND))

# Aggregations of the users' own (kind: custom) over the typed and computed fields: invertible
# ones (exact sums of longs and decimals, counts) and ones over tiles (min, max, a double's sum),
# values of each family, a division by zero, nulls, and a value cast to a long.
_TYPED = (*TYPED_FIELDS, SPEND)
CUSTOM_AGGREGATIONS = (
    Custom("weighted", {"n": "sum(clicks)", "s": "sum(amount * clicks)", "spent": "sum(spend * 1.5)"},
           "s / n + spent / 1000", fields=_TYPED),
    Custom("ok_rate", {"yes": "sum(CASE WHEN ok THEN 1 ELSE 0 END)", "seen": "count(ok)", "every": "count(*)"},
           "CASE WHEN seen > 0 THEN yes / seen END + nullif(every, 0) * 0", fields=_TYPED),
    Custom("spread", {"hi": "max(latency)", "lo": "min(latency)", "twice": "sum(latency * 2)"},
           "if(hi IS NOT NULL AND hi > lo, hi - lo, abs(greatest(twice, -1) - least(lo, 0)))", fields=_TYPED),
    Custom("pages", {"top": "max(page)", "low": "min(page)"}, "coalesce(top, '') <> coalesce(low, '')",
           fields=_TYPED),
    Custom("half", {"c": "count(page)", "m": "max(amount)"}, "-c * 2.5 + coalesce(m, 0) * 0", type="long",
           fields=_TYPED),
)

FIRST = date(2025, 1, 28)
EVENT_DAYS = 3



def _rows(spark, path, *columns, config=None):
    table = delta_io.read_table(spark, path)
    if config is not None:
        table = with_finished_values(table, config)
    return sorted(tuple(r) for r in table.select(*columns).collect())


def assert_rows_equal(actual, expected, config, lead):
    """Exact equality, except approximate distinct counts (within 3 standard errors) and the
    variances of doubles (Chan's merges in doubles against the oracle's exact fractions: within
    1e-9 relative). Doubles on a grid of quarters (``tests.landing``) make every other value of
    a double field exact."""
    approx = [lead + i for i, a in enumerate(config.aggregations) if isinstance(a, ApproxDistinct)]
    close = [lead + i for i, a in enumerate(config.aggregations)
             if isinstance(a, (Variance, Moments)) and a.family == "double"]
    assert len(actual) == len(expected)
    for got, want in zip(actual, expected):
        exact = [i for i in range(len(want)) if i not in approx and i not in close]
        assert [got[i] for i in exact] == [want[i] for i in exact], (got, want)
        for i in approx:
            assert abs(got[i] - want[i]) <= max(1, 3 * ApproxDistinct.relative_error * want[i]), (got, want)
        for i in close:  # null where the oracle's is null (a skewness of one value)
            assert (got[i] is None) == (want[i] is None), (i, got, want)
            assert want[i] is None or got[i] == pytest.approx(want[i], rel=1e-9, abs=1e-12), (i, got, want)


def run_pipeline(spark, landing, lakehouse, config, *, window_days, day_by_day, cuts=(), order=None):
    """Ingest, partials and windows, the windows as one range or day by day; ``cuts`` (hours)
    split the second day's partials run, and its windows run where they run day by day, into
    runs of the intervals between them, in ``order`` (indices; default: in time). A windows run
    continues from the state the part before it left (``interval_state``) where that part ran
    first; otherwise it computes from midnight."""
    last_arrival = FIRST + timedelta(days=EVENT_DAYS - 1 + 3)
    ensure_days(landing, FIRST, last_arrival)
    cut_day = FIRST + timedelta(days=1)
    midnight = datetime(cut_day.year, cut_day.month, cut_day.day, tzinfo=timezone.utc)
    bounds = [midnight + timedelta(hours=h) for h in (0, *cuts, 24)]
    parts = [RunInterval(a, b) for a, b in zip(bounds, bounds[1:])] if cuts else []
    if parts:  # the cut day's arrivals by part too, in the same order
        ingest = summed([ingest_events.ingest(spark, str(landing), lakehouse, FIRST, FIRST, config),
                         *ingest_in_parts(spark, landing, lakehouse, config, parts, order or range(len(parts))),
                         ingest_events.ingest(spark, str(landing), lakehouse, cut_day + timedelta(days=1),
                                              last_arrival, config)])
    else:
        ingest = ingest_events.ingest(spark, str(landing), lakehouse, FIRST, last_arrival, config)
    if parts:  # the day's parts in order, each refolding the day's tile from the frames so far
        minute_partials.run(spark, lakehouse, FIRST, FIRST, config)
        for part in parts:
            minute_partials.run(spark, lakehouse, cut_day, cut_day, config, interval=part)
        minute_partials.run(spark, lakehouse, cut_day + timedelta(days=1), FIRST + timedelta(days=EVENT_DAYS - 1),
                            config)
    else:
        minute_partials.run(spark, lakehouse, FIRST, FIRST + timedelta(days=EVENT_DAYS - 1), config)
    first, last = window_days
    if day_by_day:
        day = first
        while day <= last:
            if day == cut_day and parts:
                ran = set()
                for i in order or range(len(parts)):
                    baseline = sliding_windows.run(spark, lakehouse, day, day, config, interval=parts[i])["baseline"]
                    assert set(baseline.values()) == {"carried" if i - 1 in ran else "snapshot"}, (i, baseline)
                    ran.add(i)
            else:
                sliding_windows.run(spark, lakehouse, day, day, config)
            day += timedelta(days=1)
    else:
        sliding_windows.run(spark, lakehouse, first, last, config)
    return ingest


def ingest_in_parts(spark, landing, lakehouse, config, parts, order):
    """Ingest one day's ``parts`` in ``order``: the results that count the day's records once (a
    part run after later ones redoes them, and its result counts theirs)."""
    results = {}
    for i in order:
        results = {j: r for j, r in results.items() if j < i}
        results[i] = ingest_events.ingest(spark, str(landing), lakehouse, parts[i].day, parts[i].day, config,
                                          interval=parts[i])
        assert results[i].reconciles, (i, results[i])
    return list(results.values())


def summed(results):
    """Runs' results as one (``IngestResult``'s counts added up)."""
    counts = ("input_records", "accepted", "quarantined", "duplicates", "late", "files")
    return IngestResult(**{c: sum(getattr(r, c) for r in results) for c in counts})


def oracle_partials(events, config):
    """The oracle's minute partials of the event days, as ``_rows`` reads the table's."""
    return sorted((key, frame.replace(tzinfo=None), count, *values)
                  for day in range(EVENT_DAYS)
                  for (key, frame), (count, values) in reference.minute_partials(
                      events, config, FIRST + timedelta(days=day)).items())


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
    # seed, windows, day by day, aggregations, late policy and watermark scope
    (1, (WindowSpec.of("7d", "7d", "1m"), WindowSpec.of("odd", "50m", "20m", offset="-7m", emit="final"),
         WindowSpec.of("gaps", "1h", "90m", align_to="2025-01-28T00:10:00Z")), True, None, {}),
    (2, (WindowSpec.of("1h", "1h", "1m"), WindowSpec.of("3h", "3h", "20m", offset="-5m"),
         WindowSpec.of("all", "1d", "1h", keyed=False)), False,
     EVERY_AGGREGATION, {"late_policy": "drop", "max_out_of_orderness": 1800}),
    (4, (WindowSpec.of("2d", "2d", "1h", offset="30m"), WindowSpec.of("gaps", "40m", "1h", offset="5m"),
         WindowSpec.of("final", "3h", "1h", emit="final")),
     False, EVERY_AGGREGATION,
     {"late_policy": "drop", "watermark_scope": "key", "max_out_of_orderness": 3600, "watermark_clock": "arrival"}),
    (6, (WindowSpec.of("7d", "7d", "1m"), WindowSpec.of("36h", "36h", "2h", offset="-8h"),
         WindowSpec.of("cumulating", "3h", offset="10m", step="20m"),
         WindowSpec.of("all_today", "1d", step="6h", keyed=False)), False,
     EVERY_AGGREGATION, {"late_policy": "drop", "max_out_of_orderness": 7200}),
    # typed fields (nulls, missing, negatives, longs past 2**63, decimals, doubles, strings,
    # booleans): keyed sliding, final rows, cumulating and non-keyed windows, late events dropped,
    # a computed field, a row filter and custom aggregations
    (9, (WindowSpec.of("1d", "1d", "10m"), WindowSpec.of("3h", "3h", "20m", offset="-5m", emit="final"),
         WindowSpec.of("cumulating", "6h", step="1h"), WindowSpec.of("all", "1h", "10m", keyed=False)), False,
     EVERY_TYPED_AGGREGATION + SPEND_AGGREGATIONS + CUSTOM_AGGREGATIONS,
     {"fields": (*TYPED_FIELDS, SPEND), "late_policy": "drop", "max_out_of_orderness": 1800, **ROW_EXPRESSIONS}),
    # Chronon's kinds on typed fields, day by day (each day continues a histogram from the day
    # before's snapshot): a 2-day window over day tiles, and a non-keyed cumulating one
    (8, (WindowSpec.of("2d", "2d", "1h", offset="30m"), WindowSpec.of("all_today", "1d", step="6h", keyed=False)),
     True, EVERY_TYPED_KIND, {"fields": TYPED_FIELDS}),
    # cumulating periods longer than a day: their whole days before a run are day tiles; a
    # composite key (user_id, country), and a non-keyed window beside it; a lateness of 30 hours,
    # counted from each event to the hour folder it landed in
    (7, (WindowSpec.of("cum3d", "3d", offset="-8h", step="4h"), WindowSpec.of("all_2d", "2d", step="12h", keyed=False)),
     True, EVERY_AGGREGATION, {"key_fields": ("user_id", "country"), "allowed_lateness": 30 * 3600}),
]


# Every kind through the whole pipeline in generated code, as the jobs run outside the tests
# (the others evaluate interpreted: tests/conftest.py).
GENERATED_CODE = {2}

# Cases whose second day runs in parts below a day, cut at these hours: its partials (frames,
# late events, the day's tile refolded), and where the windows run day by day, its change points
# of each part and the snapshot where a part holds a window's last end of the day.
CUTS = {1: (6, 13), 2: (9, 20), 7: (5, 17)}
# Their landings arrive in hour folders of these hours and in the day's folder (the day's end).
PART_HOURS = (2, 5, 6, 9, 13, 17, 20)
# Case 7's windows (and the cut day's ingest) run the middle part first (from midnight: the part
# before it has not run), then the last (continuing from the middle's state), then the first.
ORDER = {7: (1, 2, 0)}


@pytest.mark.parametrize("seed, windows, day_by_day, aggregations, time", CASES)
def test_every_table_equals_the_oracle(spark, request, tmp_path, seed, windows, day_by_day, aggregations, time):
    if seed in GENERATED_CODE:
        request.getfixturevalue("generated_code")
    config = PipelineConfig(windows=windows, aggregations=aggregations or PipelineConfig().aggregations, **time)
    landing = random_landing(tmp_path / "landing", seed, FIRST, EVENT_DAYS, fields=dict(config.source_fields)
                             if config.fields else None, key_fields=config.key_fields,
                             part_hours=PART_HOURS if seed in CUTS else ())
    events = with_row_expressions(spark, landing.events, config)
    lakehouse = str(tmp_path / "lakehouse")
    window_days = (FIRST, FIRST + timedelta(days=EVENT_DAYS + 2))

    ingest = run_pipeline(spark, tmp_path / "landing", lakehouse, config,
                          window_days=window_days, day_by_day=day_by_day, cuts=CUTS.get(seed, ()),
                          order=ORDER.get(seed))

    # Re-sent copies may land a day after the last arrival day ingested: never read, never counted.
    last_arrival = FIRST + timedelta(days=EVENT_DAYS - 1 + 3)
    assert ingest.input_records == landing.lines - sum(e.arrival_date > last_arrival for e in landing.events)
    assert ingest.reconciles
    assert ingest.quarantined == landing.malformed

    accepted = reference.accepted_events(events, config)
    partial_rows = _rows(spark, MINUTE_PARTIALS.path(lakehouse), "key", "frame_start", "event_count",
                         *[a.name for a in config.aggregations], config=config)
    expected_partials = oracle_partials(events, config)
    assert_rows_equal(partial_rows, expected_partials, config, lead=3)
    assert sum(r[2] for r in partial_rows) == len(accepted)

    late = _rows(spark, LATE_EVENTS.path(lakehouse), "event_id", "reason")
    beyond = sorted(e.event_id for e in reference.beyond_lateness(events, config) if e.arrival_date <= last_arrival)
    assert beyond and [e for e, reason in late if reason == "beyond_allowed_lateness"] == beyond
    expected_late = reference.dropped_behind_watermark(events, config)
    assert [e for e, reason in late if reason == "behind_watermark"] == sorted(e.event_id for e in expected_late)
    assert bool(expected_late) == (config.late_policy == "drop"), "drop cases must drop something"
    assert bool(reference.filtered_out(events, config)) == (config.where is not None), "a filter must filter"

    changes = _rows(spark, WINDOW_CHANGES.path(lakehouse), "key", "window", "window_end",
                    *[a.name for a in config.aggregations])
    assert_rows_equal(changes, expected_changes(events, config, *window_days), config, lead=3)

    snapshots = _rows(spark, WINDOW_SNAPSHOT.path(lakehouse), "key", "window", "date",
                      *[a.name for a in config.aggregations])
    assert_rows_equal(snapshots, expected_snapshots(events, config, *window_days), config, lead=3)

    if config.fields:  # any Delta reader reads each output column in its declared type
        from deltalake import DeltaTable

        for table in (WINDOW_CHANGES, WINDOW_SNAPSHOT):
            arrow = DeltaTable(table.path(lakehouse)).to_pyarrow_table()
            assert [(a.name, str(arrow.schema.field(a.name).type)) for a in config.aggregations] == [
                (a.name, ARROW_TYPES.get(a.output_type, a.output_type)) for a in config.aggregations]
            assert arrow.num_rows == len(changes if table == WINDOW_CHANGES else snapshots)

    if config.key_fields:  # the key's fields as columns of their own, for readers to filter on
        for table in (WINDOW_CHANGES, WINDOW_SNAPSHOT):
            rows = delta_io.read_table(spark, table.path(lakehouse)).select("key", *config.key_fields).collect()
            assert rows and all(list(r[1:]) == (json.loads(r.key) if r.key != ALL_KEYS else [None, None])
                                for r in rows), table.name
        assert {r.key for r in rows} > {ALL_KEYS}

    if seed in GROUPED:
        assert_groups_equal_their_runs_alone(spark, tmp_path, landing, config, window_days)


# The case run again as one group of two over the same landing folders, through Dagster.
GROUPED = {1}
OTHER_GROUP = PipelineConfig(
    windows=(WindowSpec.of("2h", "2h", "10m", offset="-5m"),), sessions=(SessionSpec.of("s30m", "30m"),),
    aggregations=(aggregation("count", "n"), aggregation("sum", "total"), aggregation("max", "top")),
    where="value % 3 <> 0", late_policy="drop", max_out_of_orderness=900, watermark_scope="key")


# A table source, whose rows count their lateness to their own arrival time: 12 hours sets 12 of
# them aside, where 1d would set aside 3.
PURCHASES = PipelineConfig(
    key_field="user_id", key_fields=("user_id", "country"), windows=(WindowSpec.of("3h", "3h", "20m"),),
    aggregations=(aggregation("count", "n"), aggregation("sum", "total")), allowed_lateness=12 * 3600)


def assert_groups_equal_their_runs_alone(spark, tmp_path, landing, config, window_days):
    """The case's configuration as group ``same`` beside group ``other`` (another filter, a
    session window, its own watermark), and group ``purchases`` over a table of other events
    keyed by (user_id, country), with a spine joined to ``same`` and ``purchases``: one Dagster
    range run ingests the landing folders once for both of theirs; ``same`` writes exactly the
    rows the configuration wrote without groups; ``other``, ``purchases`` and the spine equal
    the oracle."""
    purchases_table, purchase_events = purchases_source(spark, tmp_path)
    source = SourceSpec(path=purchases_table, time="ts", arrival="loaded_at", id="event_id", name="purchase_table")
    groups = (replace(config, group="same"), replace(OTHER_GROUP, group="other"),
              replace(PURCHASES, group="purchases", source=source, ingest_at="purchase_table"))
    spine_rows = spine_lookups(landing.events, purchase_events, window_days)
    spine_path = str(tmp_path / "spine.parquet")
    spark.createDataFrame([(i, user, country, at) for i, (user, country, at) in enumerate(spine_rows)],
                          "row_id int, user_id string, country string, ts timestamp").write.parquet(spine_path)
    spine = SpineSpec(path=spine_path, groups=(SpineGroup("same", ("user_id",)),
                                               SpineGroup("purchases", ("user_id", "country"))))
    deployment = Deployment(groups, spine)
    lakehouse = str(tmp_path / "grouped")
    result = dg.materialize(
        build_assets(deployment), instance=dg.DagsterInstance.ephemeral(),
        resources={"pyspark": PySparkResource(spark_config={"spark.master": "local[2]"}),
                   "spark_launch": SparkLaunchResource(),
                   "lakehouse": LakehouseResource(landing_root=str(landing.root), lakehouse_root=lakehouse)},
        tags={"dagster/asset_partition_range_start": window_days[0].isoformat(),
              "dagster/asset_partition_range_end": window_days[1].isoformat()})
    assert result.success
    steps = Counter(e.step_key for e in result.all_events if e.event_type_value == "STEP_SUCCESS")
    assert steps == {"ingest_events": 1, "same__partials": 1, "same__sliding_windows": 1,
                     "other__partials": 1, "other__sliding_windows": 1, "purchase_table__ingest_events": 1,
                     "purchases__partials": 1, "purchases__sliding_windows": 1, "spine_values": 1}, steps

    alone = str(tmp_path / "lakehouse")
    for table in (EVENTS, QUARANTINE, LATE_EVENTS):  # the landing folders' ingest stays at the root
        assert _all_rows(spark, table.path(lakehouse)) == _all_rows(spark, table.path(alone)), table.name
    for table in (MINUTE_PARTIALS, WINDOW_CHANGES, WINDOW_SNAPSHOT):
        assert _all_rows(spark, table.path(f"{lakehouse}/same")) == _all_rows(spark, table.path(alone)), table.name

    other = deployment.group("other")
    events = with_row_expressions(spark, landing.events, other)
    root, names = f"{lakehouse}/other", [a.name for a in other.aggregations]
    expected_partials = oracle_partials(events, other)
    assert _rows(spark, MINUTE_PARTIALS.path(root), "key", "frame_start", "event_count", *names,
                 config=other) == expected_partials
    late = _rows(spark, LATE_EVENTS.path(root), "event_id", "reason")
    assert late == sorted((e.event_id, "behind_watermark") for e in reference.dropped_behind_watermark(events, other))
    assert late and reference.filtered_out(events, other), "the group must drop late events and filter some"
    changes = delta_io.read_table(spark, WINDOW_CHANGES.path(root))
    sliding = changes.where("window = '2h'").select("key", "window", "window_end", *names).collect()
    assert sorted(tuple(r) for r in sliding) == expected_changes(events, other, *window_days)
    sessions = changes.where("window = 's30m'").select("key", "window", "window_start", "window_end",
                                                       "event_count", *names).collect()
    expected_sessions = sorted((r.key, r.window, r.window_start.replace(tzinfo=None),
                                r.window_end.replace(tzinfo=None), r.event_count, *r.values)
                               for r in session_rows(events, other, *window_days))
    assert expected_sessions and sorted(tuple(r) for r in sessions) == expected_sessions
    assert _rows(spark, WINDOW_SNAPSHOT.path(root), "key", "window", "date", *names) == expected_snapshots(
        events, other, *window_days)


    purchases = deployment.group("purchases")
    changes = _rows(spark, WINDOW_CHANGES.path(f"{lakehouse}/purchases"), "key", "window", "window_end", "n", "total")
    assert changes and changes == expected_changes(purchase_events, purchases, *window_days)

    joined = {r.row_id: r for r in delta_io.read_table(spark, SPINE_VALUES.path(lakehouse)).collect()}
    assert len(joined) == len(spine_rows)
    by_group = {"same": (landing.events, config, [(user, at) for user, _, at in spine_rows]),
                "purchases": (purchase_events, purchases,
                              [(composite_key({"user_id": user, "country": country}, PURCHASES.key_fields), at)
                               for user, country, at in spine_rows])}
    found = 0
    for group, (events, group_config, lookups) in by_group.items():
        names = [a.name for a in group_config.aggregations]
        expected = reference.values_as_of(events, group_config, lookups)
        for i, want in enumerate(expected):
            for window, (end, count, values) in want.items():
                row = joined[i]
                got = (row[f"{group}__{window}__window_end"], row[f"{group}__{window}__event_count"],
                       *[row[f"{group}__{window}__{a}"] for a in names])
                assert got == (end.replace(tzinfo=None), count, *values), (group, window, i)
                found += count > 0
    assert found > len(spine_rows), "the spine must find values in both groups"


def purchases_source(spark, tmp_path):
    """A table of events keyed by (user_id, country), with the oracle's view of them: each row
    arrives at its own instant of its arrival day (``loaded_at``), so the first arrival of a
    repeated id is never a tie. An id repeats on later days only: within a day the ingest keeps
    the copy whose JSON text sorts first, which a table row's is not as its landing line's."""
    landing = random_landing(tmp_path / "purchases_landing", 71, FIRST, EVENT_DAYS,
                             key_fields=PURCHASES.key_fields)
    once = list({(e.arrival_date, e.event_id): e for e in reversed(landing.events)}.values())[::-1]
    events = [replace(e, arrival_time=datetime.combine(e.arrival_date, datetime.min.time(), timezone.utc)
                      + timedelta(seconds=i), source_file="", line=0) for i, e in enumerate(once)]
    assert len({e.event_id for e in events}) < len(events), "ids must repeat across days"
    return as_purchase_table(spark, events, str(tmp_path / "purchases"))


def test_a_table_source_in_hourly_parts_equals_the_oracle(spark, tmp_path):
    """PURCHASES under ``partition: 1h``: its rows arrive at instants spread over each day, an id
    repeated within a day in another hour (the earlier hour's copy wins, an altered one too), 12
    hours of lateness. The cut day's parts run out of order; every table equals the oracle's.
    Then a switch: the first day ingested again under ``1d`` (every row at the day's end), and
    an hour of it under ``1h``, which redoes the day from midnight: the same rows as before."""
    path, events = table_arriving_over_the_day(spark, tmp_path)
    source = SourceSpec(path=path, time="ts", arrival="loaded_at", id="event_id", name="purchase_table")
    config = replace(PURCHASES, source=source, partition=3600)
    lakehouse = str(tmp_path / "lakehouse")
    cut_day = FIRST + timedelta(days=1)
    window_days = (FIRST, FIRST + timedelta(days=EVENT_DAYS + 2))

    ingest = run_pipeline(spark, tmp_path / "landing", lakehouse, config, window_days=window_days,
                          day_by_day=True, cuts=(5, 17), order=(1, 2, 0))

    last_arrival = FIRST + timedelta(days=EVENT_DAYS - 1 + 3)
    assert ingest.reconciles and ingest.quarantined == 0
    assert ingest.input_records == sum(e.arrival_date <= last_arrival for e in events)
    parts = {r.arrival_part for r in delta_io.read_table(spark, EVENTS.path(lakehouse)).where(
        f"arrival_date = '{cut_day}'").select("arrival_part").collect()}
    assert len(parts) > 10 and all(p.minute == p.second == 0 for p in parts), parts

    names = [a.name for a in config.aggregations]
    expected_partials = oracle_partials(events, config)
    assert _rows(spark, MINUTE_PARTIALS.path(lakehouse), "key", "frame_start", "event_count", *names,
                 config=config) == expected_partials
    late = _rows(spark, LATE_EVENTS.path(lakehouse), "event_id", "reason")
    beyond = sorted(e.event_id for e in reference.beyond_lateness(events, config) if e.arrival_date <= last_arrival)
    assert beyond and late == [(e, "beyond_allowed_lateness") for e in beyond]
    changes = _rows(spark, WINDOW_CHANGES.path(lakehouse), "key", "window", "window_end", *names)
    assert changes and changes == expected_changes(events, config, *window_days)
    assert _rows(spark, WINDOW_SNAPSHOT.path(lakehouse), "key", "window", "date", *names) == expected_snapshots(
        events, config, *window_days)

    def first_day():
        return [_all_rows(spark, t.path(lakehouse), f"arrival_date = '{FIRST}'") for t in (EVENTS, LATE_EVENTS)]

    before = first_day()
    ingest_events.ingest(spark, "unused", lakehouse, FIRST, FIRST, replace(config, partition=86400))
    midday = datetime.combine(FIRST, datetime.min.time(), timezone.utc) + timedelta(hours=13)
    hour = ingest_events.ingest(spark, "unused", lakehouse, FIRST, FIRST, config,
                                interval=RunInterval(midday, midday + timedelta(hours=1)))
    assert hour.reconciles and hour.input_records == sum(e.arrival_date == FIRST for e in events)
    assert first_day() == before


def table_arriving_over_the_day(spark, tmp_path):
    """A table of events keyed by (user_id, country) whose rows arrive at random instants of their
    arrival day (on their event's day, after it), with the oracle's view of them. An id repeats
    within a day only in another hour: within an hour the ingest keeps the copy whose JSON text
    sorts first, which a table row's is not as its landing line's."""
    landing = random_landing(tmp_path / "hourly_landing", 72, FIRST, EVENT_DAYS, key_fields=PURCHASES.key_fields)
    rng, seen, events = random.Random(72), set(), []
    for e in landing.events:
        start = datetime.combine(e.arrival_date, datetime.min.time(), timezone.utc)
        earliest = max(0, int((e.event_time - start).total_seconds()))
        at = start + timedelta(seconds=rng.randrange(earliest, 86400))
        if (e.arrival_date, e.event_id, at.hour) not in seen:
            seen.add((e.arrival_date, e.event_id, at.hour))
            events.append(replace(e, arrival_time=at, source_file="", line=0))
    repeated = Counter((e.arrival_date, e.event_id) for e in events)
    assert sum(n > 1 for n in repeated.values()) > 3, "ids must repeat within a day"
    return as_purchase_table(spark, events, str(tmp_path / "purchases_by_hour"))


def as_purchase_table(spark, events, path):
    """The events as rows of a Parquet table (user_id, country, ts, value, event_id, loaded_at: their
    arrival time), and as the oracle sees them, read from it."""
    spark.createDataFrame(
        [(*json.loads(e.key), e.event_time, e.value, e.event_id, e.arrival_time) for e in events],
        "user_id string, country string, ts timestamp, value bigint, event_id string, loaded_at timestamp",
    ).write.parquet(path)
    return path, [replace(e, source_file=path) for e in events]


def spine_lookups(events, purchase_events, window_days):
    """Labelled moments of (user_id, country): keys both groups know, one neither does, across
    the window days, some exactly on a window end."""
    rng = random.Random(17)
    users = sorted({e.key for e in events})
    countries = sorted({json.loads(e.key)[1] for e in purchase_events})
    start = datetime.combine(window_days[0], datetime.min.time(), timezone.utc)
    seconds = int((window_days[1] - window_days[0] + timedelta(days=1)).total_seconds())
    rows = [(rng.choice(users), rng.choice(countries), start + timedelta(seconds=rng.randrange(seconds)))
            for _ in range(40)]
    rows += [(rng.choice(users), rng.choice(countries), start + timedelta(hours=h)) for h in range(1, 100, 7)]
    return [*rows, ("nobody", "CH", start + timedelta(hours=30))]


def _all_rows(spark, path, where="true"):
    """Every row of a table, every column, in one order: what "the same rows" means."""
    table = delta_io.read_table(spark, path).where(where)
    return sorted(table.select(*sorted(table.columns)).collect(), key=repr)


ARROW_TYPES = {"bigint": "int64", "boolean": "bool", "decimal(38,2)": "decimal128(38, 2)",
               "decimal(12,2)": "decimal128(12, 2)", "decimal(18,2)": "decimal128(18, 2)",
               "decimal(38,0)": "decimal128(38, 0)",
               **{f"array<{t}>": f"list<element: {ARROW.get(t, t)}>"
                  for t, ARROW in [(t, {"bigint": "int64", "boolean": "bool", "decimal(12,2)": "decimal128(12, 2)"})
                                   for t in ("bigint", "double", "string", "boolean", "decimal(12,2)")]},
               "map<bigint,bigint>": "map<int64, int64>", "map<string,bigint>": "map<string, int64>"}


# Two keys of one key_hash (the high 32 bits of xxhash64; found among user-0 .. user-399999):
# the running sum's presort interleaves their deltas by end, and its Window must still keep
# each key's running sum to itself.
SHARING_A_HASH = ("user-16052", "user-336963")


def test_keys_sharing_a_key_hash_keep_their_own_windows(spark, tmp_path):
    keys = spark.createDataFrame([(k,) for k in SHARING_A_HASH], "key string")
    hashes = running_state.with_key_hash(keys).select(running_state.KEY_HASH).collect()
    assert hashes[0][0] == hashes[1][0], "the case needs two keys of one key_hash"
    config = PipelineConfig(windows=(WindowSpec.of("1h", "1h", "1m"), WindowSpec.of("1d", "1d", "10m")))
    landing = random_landing(tmp_path / "landing", 21, FIRST, EVENT_DAYS, key_names=SHARING_A_HASH)
    lakehouse = str(tmp_path / "lakehouse")
    window_days = (FIRST, FIRST + timedelta(days=EVENT_DAYS + 1))
    run_pipeline(spark, tmp_path / "landing", lakehouse, config, window_days=window_days, day_by_day=True)

    changes = _rows(spark, WINDOW_CHANGES.path(lakehouse), "key", "window", "window_end", "count", "sum")
    assert {c[0] for c in changes} == set(SHARING_A_HASH)
    assert changes == expected_changes(landing.events, config, *window_days)
    snapshots = _rows(spark, WINDOW_SNAPSHOT.path(lakehouse), "key", "window", "date", "count", "sum")
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


@pytest.mark.parametrize("config, hours, message", [
    (PipelineConfig(sessions=(SessionSpec.of("s30m", "30m", time="arrival"),)), (6, 7),
     "a run below a day computes windows of event time only: this configuration has arrival-time windows or sessions"),
    (PipelineConfig(), (30, 31), "a run below a day lies within its one day: 2025-01-29T06:00:00 .. "
                                 "2025-01-29T07:00:00 is not within 2025-01-28 .. 2025-01-28"),
])
def test_a_run_below_a_day_refuses_what_it_cannot_run_in_one_line(config, hours, message):
    midnight = datetime(FIRST.year, FIRST.month, FIRST.day, tzinfo=timezone.utc)
    interval = RunInterval(*(midnight + timedelta(hours=h) for h in hours))
    with pytest.raises(ValueError, match=message):  # before any Spark work: no session is needed
        sliding_windows.run(None, "unused", FIRST, FIRST, config, interval=interval)


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


def test_switching_the_late_policy_back_to_include_empties_what_drop_kept(spark, tmp_path):
    drop = PipelineConfig(windows=(WindowSpec.of("1d", "1d", "1h"),), late_policy="drop", max_out_of_orderness=1800)
    include = PipelineConfig(windows=drop.windows)
    landing = random_landing(tmp_path / "landing", 2, FIRST, EVENT_DAYS)
    lakehouse = str(tmp_path / "lakehouse")
    last_arrival = FIRST + timedelta(days=EVENT_DAYS - 1 + 3)
    ensure_days(tmp_path / "landing", FIRST, last_arrival)
    ingest_events.ingest(spark, str(tmp_path / "landing"), lakehouse, FIRST, last_arrival, drop)
    last = FIRST + timedelta(days=EVENT_DAYS - 1)

    def late_reasons():
        return Counter(r for _, r in _rows(spark, LATE_EVENTS.path(lakehouse), "event_id", "reason"))

    minute_partials.run(spark, lakehouse, FIRST, last, drop)
    dropped = late_reasons()
    assert dropped["behind_watermark"] == len(reference.dropped_behind_watermark(landing.events, drop)) > 0

    minute_partials.run(spark, lakehouse, FIRST, last, include)
    assert late_reasons() == Counter({k: v for k, v in dropped.items() if k != "behind_watermark"})
    partials = _rows(spark, MINUTE_PARTIALS.path(lakehouse), "event_count")
    assert sum(r[0] for r in partials) == len(reference.accepted_events(landing.events, include))


@pytest.mark.parametrize("before, after, baseline", [
    ((WindowSpec.of("1d", "1d", "10m"),), (WindowSpec.of("1d", "1d", "10m"), WindowSpec.of("3h", "3h", "1h")),
     {"1d": "snapshot", "3h": "bootstrap"}),  # a window added: none of its state is kept yet
    ((WindowSpec.of("w", "1d", "10m"),), (WindowSpec.of("w", "2d", "10m"),),
     {"w": "bootstrap"}),  # the same name, a longer window
    ((WindowSpec.of("w", "1d", "10m"),), (WindowSpec.of("w", "1d", "1h", offset="30m"),),
     {"w": "bootstrap"}),  # the same name and length, ends on another grid
    ((WindowSpec.of("w", "1d", "10m"),), (WindowSpec.of("w", "1d", "1h"),),
     {"w": "bootstrap"}),  # the same name and length, its last end before midnight earlier
    ((WindowSpec.of("w", "1d", "1h"),), (WindowSpec.of("w", "1d", "2h", offset="1h"),),
     {"w": "snapshot"}),  # another slide, but the same last end (23:00) and length: the same state
    ((WindowSpec.of("w", "50m", "20m", offset="10m"),), (WindowSpec.of("w", "50m", "20m"),),
     {"w": "bootstrap"}),  # what "50m every 20m" meant when offsets aligned ends: now another grid
    ((WindowSpec.of("1d", "1d", "10m"), WindowSpec.of("3h", "3h", "1h")),
     (WindowSpec.of("1d", "1d", "10m"), WindowSpec.of("3h", "3h", "30m")),
     {"1d": "snapshot", "3h": "bootstrap"}),  # one of two windows redefined
])
def test_a_changed_window_continues_only_from_a_snapshot_of_its_own(spark, tmp_path, monkeypatch,
                                                                     before, after, baseline):
    """A day after the configuration changed equals the oracle of the new configuration: a
    window continues from the day before's snapshot only where that holds the same window."""
    landing = random_landing(tmp_path / "landing", 7, FIRST, EVENT_DAYS)
    lakehouse = str(tmp_path / "lakehouse")
    run_pipeline(spark, tmp_path / "landing", lakehouse, PipelineConfig(windows=before),
                 window_days=(FIRST, FIRST + timedelta(days=1)), day_by_day=True)
    config, day = PipelineConfig(windows=after), FIRST + timedelta(days=2)

    result = sliding_windows.run(spark, lakehouse, day, day, config)

    on_day = [("date", "=", day.isoformat())]
    changes = sorted(tuple(r) for r in delta_io.read_table(spark, WINDOW_CHANGES.path(lakehouse),
                                                           partition_filters=on_day)
                     .select("key", "window", "window_end", "count", "sum").collect())
    assert changes == expected_changes(landing.events, config, day, day)
    assert changes, "the day must have change points to compare"
    snapshots = sorted(tuple(r) for r in delta_io.read_table(spark, WINDOW_SNAPSHOT.path(lakehouse),
                                                             partition_filters=on_day)
                       .select("key", "window", "date", "count", "sum").collect())
    assert snapshots == expected_snapshots(landing.events, config, day, day)
    assert result["baseline"] == baseline
    # The Delta log's statistics said which windows the snapshot holds; the data says the same.
    monkeypatch.setattr(delta_io, "file_ranges", lambda *args, **kwargs: [None])
    assert window_inputs.continued_windows(spark, lakehouse, day - timedelta(days=1), config) == {
        w for w, b in baseline.items() if b == "snapshot"}


def test_frames_of_another_bucket_are_refused_until_the_tables_are_rebuilt(spark, tmp_path):
    """A changed ``bucket`` would place the frames already written at the wrong ends, with no
    error; instead both jobs refuse them, and a rebuild under the new bucket equals the oracle."""
    landing = random_landing(tmp_path / "landing", 11, FIRST, EVENT_DAYS)
    lakehouse = str(tmp_path / "lakehouse")
    windows = (WindowSpec.of("1d", "1d", "10m"),)
    run_pipeline(spark, tmp_path / "landing", lakehouse, PipelineConfig(windows=windows),
                 window_days=(FIRST, FIRST), day_by_day=True)
    coarser = PipelineConfig(bucket=600, windows=(WindowSpec.of("1d", "1d", "10m", bucket="10m"),))
    day = FIRST + timedelta(days=1)
    refusal = "minute_partials holds rows made with bucketSeconds 60, and this job's is 600"
    with pytest.raises(errors.StampMismatchError, match=refusal):
        sliding_windows.run(spark, lakehouse, day, day, coarser)
    with pytest.raises(errors.StampMismatchError, match=refusal):
        minute_partials.run(spark, lakehouse, day, day, coarser)

    for table in (MINUTE_PARTIALS, WINDOW_CHANGES, WINDOW_SNAPSHOT):  # the rebuild the error asks for
        shutil.move(table.path(lakehouse), str(tmp_path / f"old_{table.name}"))
    last = FIRST + timedelta(days=EVENT_DAYS - 1)
    minute_partials.run(spark, lakehouse, FIRST, last, coarser)
    sliding_windows.run(spark, lakehouse, FIRST, day, coarser)
    changes = _rows(spark, WINDOW_CHANGES.path(lakehouse), "key", "window", "window_end", "count", "sum")
    assert changes == expected_changes(landing.events, coarser, FIRST, day)
