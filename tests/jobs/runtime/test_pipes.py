"""jobs.runtime.pipes: a job reports to Dagster only when Dagster launched it through Pipes."""

import sys
from pathlib import Path

import dagster as dg

from jobs.runtime import pipes

REPO = Path(__file__).resolve().parents[3]
JOB = """
from jobs.runtime import pipes
with pipes.session():
    pipes.log("ingest_events 2025-01-28 .. 2025-01-28: done in 1.0 s")
    pipes.report("ingest_events", {"accepted": 3})
"""


def test_run_alone_a_job_opens_no_pipes_session_and_reports_nowhere():
    with pipes.session():
        assert pipes._session is None
        pipes.report("ingest_events", {"accepted": 3})  # no one listens: nothing happens
        pipes.log("a line")


def test_launched_through_pipes_a_job_sends_its_result_and_its_log_lines():
    messages = []

    @dg.asset
    def launched(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
        invocation = dg.PipesSubprocessClient(env={"PYTHONPATH": str(REPO)}).run(
            command=[sys.executable, "-c", JOB], context=context)
        messages.extend(invocation.get_custom_messages())
        return dg.MaterializeResult()

    instance = dg.DagsterInstance.ephemeral()
    result = dg.materialize([launched], instance=instance)
    assert result.success
    assert messages == [{"job": "ingest_events", "result": {"accepted": 3}}]
    log = [e.user_message for e in instance.all_logs(result.run_id)]
    assert "ingest_events 2025-01-28 .. 2025-01-28: done in 1.0 s" in log
