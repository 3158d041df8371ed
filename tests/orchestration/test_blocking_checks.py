"""A failed blocking check stops automation downstream, for every partition a partition reads.

Dagster's own evaluator judges panes' own graph; the materialisations and check results are
reported to the instance as a run would record them, so no Spark runs here. With a 1-day window
and 2 days of lateness, window day D reads the partials of D - 2 .. D:

    partials day:   0   1   2   3   4   5
    window day 1:  [0   1]                    reads 1 (passing) only
    window day 2:  [0   1   2]                reads 2 (failed)
    window day 3:      [1   2   3]            reads 2 (failed)
    window day 4:          [2   3   4]        reads 2 (failed)
"""

from datetime import date, timedelta

import dagster as dg
import pytest
from dagster._core.definitions.asset_checks.asset_check_evaluation import (  # not re-exported by dagster
    AssetCheckEvaluationTargetMaterializationData,
)

from orchestration.definitions import build_definitions
from windowing_core.config import PipelineConfig
from windowing_core.window_spec import DAY_SECONDS, WindowSpec

FIRST = date(2025, 1, 28)
CONFIG = PipelineConfig(windows=(WindowSpec.of("1d", "1d", "1h"),), allowed_lateness=2 * DAY_SECONDS)
WINDOWS = ("window_changes", "window_snapshot")


def day(offset):
    return (FIRST + timedelta(days=offset)).isoformat()


def days(*offsets):
    return {day(i) for i in offsets}


def materialised(instance, assets, *offsets):
    for asset in assets:
        for i in offsets:
            instance.report_runless_asset_event(dg.AssetMaterialization(asset_key=asset, partition=day(i)))


def checked(instance, offset, passed, check="partials_count_accepted_events"):
    """A result of a minute_partials check on the day's latest materialisation, as a run records
    it. (Results outside a run share one run id: one result per check and day.)"""
    key = dg.AssetKey("minute_partials")
    latest = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=key, asset_partitions=[day(offset)]), limit=1).records[0]
    instance.report_runless_asset_event(dg.AssetCheckEvaluation(
        asset_key=key, check_name=check, passed=passed, partition=day(offset),
        target_materialization_data=AssetCheckEvaluationTargetMaterializationData(
            storage_id=latest.storage_id, run_id=latest.run_id, timestamp=latest.timestamp)))


def requested(defs, result) -> dict[str, set[str]]:
    by_asset = {key.to_user_string(): result.get_requested_partitions(key)
                for key in defs.resolve_asset_graph().get_all_asset_keys()}
    return {name: parts for name, parts in by_asset.items() if parts}


BLOCK_LABEL = "every partition it reads passed its blocking checks"


def labelled(result, asset, label) -> set[str]:
    """The partitions, among those evaluated, for which the condition labelled ``label`` held."""
    (evaluation,) = [r.serializable_evaluation for r in result.results if r.key == dg.AssetKey(asset)]
    nodes = [evaluation]
    while nodes:
        node = nodes.pop()
        if node.condition_snapshot.label == label:
            return set(node.true_subset.value.get_partition_keys())
        nodes.extend(node.child_evaluations)
    raise AssertionError(f"no condition labelled {label!r}")


@pytest.fixture
def up_to_date():
    """Every asset materialised for days 0 .. 5, and the evaluator's cursor after that."""
    defs = build_definitions(CONFIG, landing_root="l", lakehouse_root="h")
    instance = dg.DagsterInstance.ephemeral()
    materialised(instance, ["events", "quarantine"], *range(6))
    materialised(instance, ["minute_partials"], *range(6))
    materialised(instance, WINDOWS, *range(6))
    cursor = dg.evaluate_automation_conditions(defs=defs, instance=instance).cursor
    return defs, instance, cursor


def test_no_window_day_reading_a_failed_partials_day_is_requested_until_it_is_repaired(up_to_date):
    defs, instance, cursor = up_to_date
    # partials days 1 and 2 are updated; day 1 passes its blocking checks, day 2 fails one
    materialised(instance, ["minute_partials"], 1, 2)
    checked(instance, 1, passed=True)
    checked(instance, 2, passed=False, check="frames_unique")
    result = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=cursor)
    # windows 2 and 3 also read the passing day 1: they must not fire all the same
    assert requested(defs, result) == {w: days(1) for w in WINDOWS}
    # the UI says why 2 .. 4 were not: of the days that late-fired (1 .. 4), the labelled
    # condition held for day 1 only
    assert labelled(result, "window_changes", BLOCK_LABEL) == days(1)

    materialised(instance, WINDOWS, 1)  # the run of window day 1
    result = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=result.cursor)
    assert requested(defs, result) == {}, "window days 2 .. 4 stay blocked tick after tick"

    # repaired: partials day 2 materialised again, and its checks pass
    materialised(instance, ["minute_partials"], 2)
    checked(instance, 2, passed=True)
    result = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=result.cursor)
    assert requested(defs, result) == {w: days(2, 3, 4) for w in WINDOWS}


def test_passing_checks_let_every_window_day_reading_the_update_fire(up_to_date):
    defs, instance, cursor = up_to_date
    materialised(instance, ["minute_partials"], 2)
    checked(instance, 2, passed=True)
    result = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=cursor)
    assert requested(defs, result) == {w: days(2, 3, 4) for w in WINDOWS}


def test_a_failed_check_that_does_not_block_lets_the_window_days_fire(up_to_date):
    defs, instance, cursor = up_to_date
    materialised(instance, ["minute_partials"], 2)
    checked(instance, 2, passed=False, check="sums_non_negative")  # a WARN check
    result = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=cursor)
    assert requested(defs, result) == {w: days(2, 3, 4) for w in WINDOWS}
