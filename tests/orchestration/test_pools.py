"""Every Spark step is in one concurrency pool, and with the shipped instance's limits a second
run's Spark step waits until the first run's is done."""

import threading
import time
from pathlib import Path

import dagster as dg
import yaml

from assets.spark_work import SPARK_POOL
from orchestration.definitions import defs

SHIPPED = Path(__file__).parents[2] / "instance" / "dagster.yaml"


def test_every_asset_and_table_check_step_is_in_the_spark_pool():
    job = defs.resolve_implicit_global_asset_job_def()
    pools = {node.name: node.definition.pool for node in job.graph.nodes}
    assert {n: p for n, p in pools.items() if p != SPARK_POOL} == {"window_changes_output_watermark_within_bound": None}, \
        "only the watermark check, which reads the instance and not Spark, runs outside the pool"
    assert {"ingest_events", "partials", "sliding_windows", "minute_partials_checks"} <= pools.keys()


def test_the_shipped_instance_limits_runs_and_the_spark_pool():
    with dg.instance_for_test(overrides=yaml.safe_load(SHIPPED.read_text())) as instance:
        assert instance.get_concurrency_config().run_queue_config.max_concurrent_runs == 2
        assert instance.global_op_concurrency_default_limit == 1
        assert instance.run_coordinator.dequeue_interval_seconds == 1, "a queued run waits a second at most"


def test_a_second_run_waits_for_the_first_runs_spark_step():
    started, release, log = threading.Event(), threading.Event(), []

    @dg.op(pool=SPARK_POOL)
    def spark_step(context: dg.OpExecutionContext):
        log.append(("start", context.run_id))
        started.set()
        assert release.wait(60)
        log.append(("end", context.run_id))

    @dg.job
    def one_step():
        spark_step()

    with dg.instance_for_test(overrides=yaml.safe_load(SHIPPED.read_text())) as instance:
        runs = [threading.Thread(target=one_step.execute_in_process, kwargs={"instance": instance})
                for _ in range(2)]
        runs[0].start()
        assert started.wait(60)
        runs[1].start()
        deadline = time.monotonic() + 60
        while instance.event_log_storage.get_concurrency_info(SPARK_POOL).pending_step_count < 1:
            assert time.monotonic() < deadline, "the second run's step never asked for the pool"
            time.sleep(0.1)
        time.sleep(1)  # the waiting step polls for a slot: give it the chance to (wrongly) start
        assert [event for event, _ in log] == ["start"], "the second run's step started beside the first"
        release.set()
        for run in runs:
            run.join(60)
        assert [event for event, _ in log] == ["start", "end", "start", "end"]
        assert log[0][1] == log[1][1] != log[2][1] == log[3][1]
