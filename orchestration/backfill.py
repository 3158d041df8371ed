"""A backfill of a job of the workspace over a range of days, launched as the UI launches one.

The run then belongs to the code location: the job's page, the Overview timeline and the
Backfills page show it, with its partitions and backfill id. The backfill is launched with the
UI's own GraphQL mutation (``dagster-graphql``, no webserver needed) and run by Dagster's daemon,
which the caller keeps running (``running_daemon``) until ``follow`` sees the backfill end.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import dagster as dg

BACKFILL_TAG = "dagster/backfill"
BIN = Path(sys.executable).parent

_LAUNCH = """
mutation Launch($params: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $params) {
    __typename
    ... on LaunchBackfillSuccess { backfillId }
    ... on PythonError { message }
    ... on PartitionKeysNotFoundError { message }
    ... on PartitionSetNotFoundError { message }
    ... on UnauthorizedError { message }
    ... on InvalidSubsetError { message }
  }
}"""

UNDER_WAY = ("REQUESTED", "CANCELING", "FAILING")  # a backfill's statuses before it ends
_DONE = {dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED}


class BackfillError(RuntimeError):
    """The backfill could not be launched, or its daemon stopped before it ended."""


def launch_backfill(workspace: Path, job: str, days: Sequence[str], *, title: str, env: Mapping[str, str],
                    location: str = "panes") -> str:
    """Ask for the partitions ``days`` of the asset job ``job``, as its page's Backfill button
    does; returns the backfill's id. Its runs are runs of that job, a range of days in each as
    the assets' backfill policy allows (one run for panes' assets)."""
    params = {"selector": {"partitionSetName": f"{job}_partition_set",
                           "repositorySelector": {"repositoryLocationName": location,
                                                  "repositoryName": "__repository__"}},
              "partitionNames": list(days), "title": title}
    done = subprocess.run([str(BIN / "dagster-graphql"), "-w", str(workspace), "-t", _LAUNCH,
                           "-v", json.dumps({"params": params})],
                          cwd=workspace.parent, env=dict(env), capture_output=True, text=True)
    try:  # the answer is the one line of JSON among the code server's log lines
        answer = next(json.loads(line) for line in done.stdout.splitlines()
                      if line.startswith('{"data"'))["data"]["launchPartitionBackfill"]
    except (StopIteration, ValueError, KeyError, TypeError):
        raise BackfillError(f"dagster-graphql failed (exit {done.returncode}): "
                            f"{(done.stderr or done.stdout).strip()[-2000:]}") from None
    if answer["__typename"] != "LaunchBackfillSuccess":
        raise BackfillError(f"the backfill was refused: {answer['__typename']}: {answer.get('message', '')}")
    return answer["backfillId"]


@contextmanager
def running_daemon(workspace: Path, env: Mapping[str, str], log: Path) -> Iterator[subprocess.Popen]:
    """``dagster-daemon run`` over ``workspace`` (its output in ``log``), stopped on leaving."""
    with open(log, "ab") as out:
        daemon = subprocess.Popen([str(BIN / "dagster-daemon"), "run", "-w", str(workspace)],
                                  cwd=workspace.parent, env=dict(env), stdout=out, stderr=subprocess.STDOUT)
    try:
        yield daemon
    finally:
        daemon.terminate()
        try:
            daemon.wait(timeout=60)
        except subprocess.TimeoutExpired:
            daemon.kill()


def follow(instance: dg.DagsterInstance, backfill_id: str, daemon: subprocess.Popen,
           say: Callable[[str], None] = print, poll_seconds: float = 1.0) -> list[dg.DagsterRun]:
    """Print the backfill's runs' log lines as they come, until the backfill has ended; its runs.

    The daemon marks a backfill ended on the iteration after its last run, within 30 s (its
    fixed interval in Dagster 1.13); until then another run may still be launched.
    """
    cursors: dict[str, str | None] = {}
    said_waiting = False
    while True:
        runs = instance.get_runs(filters=dg.RunsFilter(tags={BACKFILL_TAG: backfill_id}))
        for run in reversed(runs):
            if run.run_id not in cursors:
                say(f"run {run.run_id[:8]} of backfill {backfill_id} ({run.job_name})")
                cursors[run.run_id] = None
            connection = instance.get_records_for_run(run.run_id, cursor=cursors[run.run_id])
            cursors[run.run_id] = connection.cursor
            for record in connection.records:
                line = _line(record.event_log_entry)
                if line:
                    say(line)
        backfill = instance.get_backfill(backfill_id)
        runs_done = bool(runs) and all(r.status in _DONE for r in runs)
        if backfill is not None and backfill.status.value not in UNDER_WAY and (runs_done or not runs):
            say(f"backfill {backfill_id}: {backfill.status.value.lower().replace('_', ' ')}"
                + (f": {backfill.error.message.strip()}" if backfill.error is not None else ""))
            return runs
        if runs_done and not said_waiting:
            say("waiting for the daemon to mark the backfill ended (its next iteration, within 30 s)")
            said_waiting = True
        if daemon.poll() is not None:
            raise BackfillError(f"dagster-daemon stopped (exit {daemon.returncode}) before backfill {backfill_id} ended")
        time.sleep(poll_seconds)


_SHOWN = {"STEP_FAILURE", "PIPELINE_SUCCESS", "PIPELINE_FAILURE", "PIPELINE_CANCELED"}


def _line(entry: dg.EventLogEntry) -> str | None:
    """What the run's console showed in the demo's own process: the steps' log messages (their
    Spark progress), a step's failure and the run's end; Dagster's bookkeeping is left out."""
    event = entry.dagster_event
    if event is None:
        return f"  {entry.step_key} - {entry.user_message}" if entry.step_key else f"  {entry.user_message}"
    if event.event_type_value not in _SHOWN:
        return None
    return f"  {event.step_key + ' - ' if event.step_key else ''}{event.event_type_value} - {event.message or ''}"
