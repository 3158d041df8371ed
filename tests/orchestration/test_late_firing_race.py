"""A tick that reads its records just before a running run writes the windows does not fire them again.

The automation daemon reads the assets' records once, at the start of a tick, and whether a
partition is in progress later, when its condition is evaluated. A run that writes the windows in
between looked like this to the tick: the partials newer than the windows, and the windows not in
progress (their materialization has landed). The run's checks of the windows are still to come,
so the windows wait for them.
"""

import threading
import time

import dagster as dg

# the reader a tick uses (Dagster's own): the test sets the race's order there
from dagster._utils.caching_instance_queryer import CachingInstanceQueryer

from orchestration.automation import late_firing

DAYS = dg.DailyPartitionsDefinition(start_date="2025-01-27", end_date="2025-01-29")
DAY = "2025-01-27"
WAIT_SECONDS = 60


class Steps:
    """Holds the run's windows step until the test lets it write, then its checks until released."""

    def __init__(self):
        self.holding = False
        self.write, self.check = threading.Event(), threading.Event()


steps = Steps()


@dg.asset(partitions_def=DAYS)
def partials() -> None:
    pass


@dg.asset(deps=[partials], partitions_def=DAYS, automation_condition=late_firing(),
          check_specs=[dg.AssetCheckSpec("conserved", asset="windows", blocking=True)])
def windows():
    if steps.holding:
        assert steps.write.wait(WAIT_SECONDS)
    yield dg.Output(None)
    if steps.holding:
        assert steps.check.wait(WAIT_SECONDS)
    yield dg.AssetCheckResult(passed=True)


def materialized(instance, key) -> int:
    return len(instance.fetch_materializations(dg.AssetKey(key), limit=100).records)


def test_windows_written_after_the_tick_read_its_records_are_not_requested_again(monkeypatch):
    defs = dg.Definitions(assets=[partials, windows])
    with dg.instance_for_test() as instance:
        dg.materialize([partials, windows], instance=instance, partition_key=DAY)
        cursor = dg.evaluate_automation_conditions(defs=defs, instance=instance).cursor
        steps.holding = True
        run = threading.Thread(target=dg.materialize, args=([partials, windows],),
                               kwargs={"instance": instance, "partition_key": DAY})
        run.start()
        try:
            deadline = time.monotonic() + WAIT_SECONDS
            while materialized(instance, "partials") < 2:  # the run has written the partials
                assert time.monotonic() < deadline
                time.sleep(0.05)
            read = CachingInstanceQueryer.get_asset_record

            def read_then_let_the_run_write(self, key):
                record = read(self, key)
                if key == windows.key and not steps.write.is_set():  # the tick has read the windows'
                    steps.write.set()
                    while materialized(instance, "windows") < 2:
                        assert time.monotonic() < deadline
                        time.sleep(0.05)
                return record

            monkeypatch.setattr(CachingInstanceQueryer, "get_asset_record", read_then_let_the_run_write)
            result = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=cursor)
            assert steps.write.is_set(), "the tick read the windows' record"
            assert result.get_requested_partitions(windows.key) == set(), \
                "the run writing the windows has not finished checking them"
            monkeypatch.undo()
        finally:
            steps.write.set()
            steps.check.set()
            run.join()
            steps.holding = False
        result = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=result.cursor)
        assert result.get_requested_partitions(windows.key) == set(), "the windows are newer than the partials"
