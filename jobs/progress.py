"""Progress of long Spark work, where its users look: a Dagster run's log, a job's stderr.

A backfill over weeks is one Spark query per asset (every asset has a single-run backfill
policy), so without this a run's log says nothing between the step's start and its end. Two
things make the work visible, both Spark's own:

- the work runs in a job group whose description names it, so Spark's UI lists
  ``panes: minute_partials 2025-01-01 .. 2025-01-31`` rather than ``save at
  NativeMethodAccessorImpl.java:0``;
- a thread polls Spark's status API (as Spark's ``examples/.../status_api_demo.py`` does) and
  logs the group's running stages every ``PANES_PROGRESS_SECONDS`` (default 30).

Spark Connect has no status API in the client: there only the start and the end are logged.
"""

from __future__ import annotations

import math
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from pyspark.sql import SparkSession
from pyspark.sql.utils import is_remote

Log = Callable[[str], None]

DEFAULT_SECONDS = 30.0
_GROUP_PROPERTIES = ("spark.jobGroup.id", "spark.job.description", "spark.job.interruptOnCancel")


def every_seconds() -> float:
    """The reporting interval: ``PANES_PROGRESS_SECONDS``, else 30 s."""
    text = os.environ.get("PANES_PROGRESS_SECONDS")
    if not text:
        return DEFAULT_SECONDS
    try:
        seconds = float(text)
    except ValueError:
        raise ValueError(f"PANES_PROGRESS_SECONDS must be a number of seconds, not {text!r}") from None
    if not (seconds > 0 and math.isfinite(seconds)):
        raise ValueError(f"PANES_PROGRESS_SECONDS must be a finite number more than 0, not {text!r}")
    return seconds


@contextmanager
def reported(spark: SparkSession, what: str, log: Log, every: float | None = None) -> Iterator[None]:
    """Run the block's Spark work as the job group ``what`` and report its progress to ``log``:
    where to watch it when it starts, its running stages every ``every`` seconds, and how many
    Spark jobs it took when it ends. If the block raises (a Dagster run terminated from the UI
    interrupts its step), the group's jobs still running are cancelled: the JVM would otherwise
    go on computing what nobody will commit. The thread's earlier job group is restored."""
    every = every_seconds() if every is None else every
    started = time.monotonic()
    if is_remote():
        log(f"{what}: started")
        yield
        log(f"{what}: done in {time.monotonic() - started:.1f} s")
        return
    sc = spark.sparkContext
    saved = {key: sc.getLocalProperty(key) for key in _GROUP_PROPERTIES}
    group = f"panes-{uuid.uuid4().hex[:12]}"
    sc.setJobGroup(group, f"panes: {what}")
    ui = sc.uiWebUrl
    log(f"{what}: started" + (f"; Spark UI {ui}, job group {group}" if ui else ""))
    tracker, stop = sc.statusTracker(), threading.Event()
    poller = threading.Thread(target=_poll, args=(tracker, group, what, log, every, started, stop),
                              name=f"progress {group}", daemon=True)
    poller.start()
    outcome = "failed after"
    try:
        yield
        outcome = "done in"
    except BaseException:  # an error, or Dagster's Terminate: no job of the group runs on
        _cancel(sc, group)
        raise
    finally:
        stop.set()
        poller.join()
        for key, value in saved.items():
            sc.setLocalProperty(key, value)  # None removes it
        log(f"{what}: {outcome} {time.monotonic() - started:.1f} s{_jobs_run(tracker, group)}")


def _cancel(sc, group: str) -> None:
    try:
        sc.cancelJobGroup(group)
    except Exception:  # a dead session must not hide the error the block raised
        pass


def _jobs_run(tracker, group: str) -> str:
    try:
        jobs = len(tracker.getJobIdsForGroup(group))
    except Exception:  # a dead session must not hide the error the block raised
        return ""
    return f", {jobs} Spark job{'s' * (jobs != 1)}"


def _poll(tracker, group: str, what: str, log: Log, every: float, started: float,
          stop: threading.Event) -> None:
    while not stop.wait(every):
        try:
            line = status_line(tracker, group)
        except Exception as err:  # the session going away must not end the work it reports on
            log(f"{what}: progress no longer available ({type(err).__name__}: {err})")
            return
        log(f"{what}: {time.monotonic() - started:.0f} s in, {line}")


def status_line(tracker, group: str) -> str:
    """The group's Spark jobs and the tasks of its running stages, in one line."""
    jobs = [info for info in map(tracker.getJobInfo, tracker.getJobIdsForGroup(group)) if info is not None]
    running = [job for job in jobs if job.status == "RUNNING"]
    finished = sum(job.status == "SUCCEEDED" for job in jobs)
    jobs_text = f"Spark jobs: {len(running)} running, {finished} done"
    active = set(tracker.getActiveStageIds())
    stages = [info for info in (tracker.getStageInfo(s) for job in running for s in sorted(job.stageIds)
                                if s in active) if info is not None]
    if not stages:
        return f"{jobs_text}; no stage running (the driver is planning, reading a Delta log or committing)"
    return f"{jobs_text}; " + "; ".join(map(_stage_text, stages))


def _stage_text(stage) -> str:
    failed = f", {stage.numFailedTasks} failed" if stage.numFailedTasks else ""
    return (f"stage {stage.stageId}: {stage.numCompletedTasks} of {stage.numTasks} tasks done, "
            f"{stage.numActiveTasks} running{failed}")
