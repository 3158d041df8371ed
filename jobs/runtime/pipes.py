"""Dagster Pipes for a job that Dagster launched as a process of its own (spark-submit).

Dagster's Pipes protocol lets an orchestrator launch a job anywhere and read back what it
reports. A job run by ``PipesSubprocessClient`` finds the Pipes context in its environment;
``session()`` then opens it for the job's run (``is_dagster_pipes_process()`` of the
environment's params loader), and ``report()`` sends the job's result back as
a custom message, from which the asset records the same metadata as when it ran the job in its
own process. A job run any other way (by hand, by spark-submit, by Airflow) finds no context
and runs as before: ``dagster_pipes`` is asked only whether this is a Pipes process.

The result travels as a custom message, not as a materialisation: a job over a range of days
materialises each day, and a Pipes materialisation speaks for the whole range, while the
orchestrator can record each day's own counts from the result.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_session: Any = None  # the open Pipes context while a Pipes-launched job runs


@contextmanager
def session() -> Iterator[None]:
    """Open the Pipes context for the job's run where Dagster launched it; otherwise nothing."""
    global _session
    try:
        import dagster_pipes
    except ImportError:  # a cluster without Dagster's small dagster-pipes package: runs alone
        yield
        return
    # Dagster's subprocess client passes the context in environment variables
    params = dagster_pipes.PipesEnvVarParamsLoader()
    if not params.is_dagster_pipes_process():
        yield
        return
    with dagster_pipes.open_dagster_pipes(params_loader=params) as pipes:
        _session = pipes
        try:
            yield
        finally:
            _session = None


def report(job: str, result: dict) -> None:
    """Send the job's result (JSON values) to the orchestrator, where one is listening."""
    if _session is not None:
        _session.report_custom_message({"job": job, "result": result})


def log(line: str) -> None:
    """A line for the run's log in Dagster, where one is listening (stderr has it too)."""
    if _session is not None:
        _session.log.info(line)
