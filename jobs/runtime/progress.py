"""Progress of long Spark work, where its users look: a Dagster run's log, a job's stderr.

A backfill over weeks is one Spark query per asset (every asset has a single-run backfill
policy), so without this a run's log says nothing between the step's start and its end. Two
things make the work visible, both Spark's own:

- the work runs in a job group whose description names it, so Spark's UI lists
  ``panes: partials 2025-01-01 .. 2025-01-31`` rather than ``save at
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
_DESCRIPTION = "spark.job.description"
_GROUP_PROPERTIES = ("spark.jobGroup.id", _DESCRIPTION, "spark.job.interruptOnCancel")


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
    Spark jobs it took when it ends.

    If the block raises, the group's jobs still running are cancelled: a Dagster run terminated
    from the UI interrupts its step's py4j call, and the JVM would otherwise go on computing
    what nobody will commit. Dagster's interrupt (a BaseException, but not the KeyboardInterrupt
    py4j cleans up after) leaves the thread's py4j connection a reply behind: its next call
    would read the interrupted call's reply, or wait for it. So after an interrupt the JVM is
    only spoken to from another thread (``_off_thread``), and the thread's earlier job group,
    restored after a normal end or an error, is left alone (``tests/jobs/runtime/interrupted_step.py``).
    """
    every = every_seconds() if every is None else every
    started = time.monotonic()
    if is_remote():
        log(f"{what}: started")
        outcome = "failed after"
        try:
            yield
            outcome = "done in"
        finally:
            log(f"{what}: {outcome} {time.monotonic() - started:.1f} s")
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
    outcome, restore = "failed after", True
    try:
        yield
        outcome = "done in"
    except BaseException as err:
        restore = isinstance(err, Exception)  # not after an interrupt (KeyboardInterrupt, Dagster's)
        _off_thread(sc.cancelJobGroup, group)
        raise
    finally:
        stop.set()
        poller.join()
        if restore:
            for key, value in saved.items():
                sc.setLocalProperty(key, value)  # None removes it
        jobs = _off_thread(lambda: len(tracker.getJobIdsForGroup(group)))
        count = "" if jobs is None else f", {jobs} Spark job{'s' * (jobs != 1)}"
        log(f"{what}: {outcome} {time.monotonic() - started:.1f} s{count}")


@contextmanager
def described(spark: SparkSession, label: str) -> Iterator[None]:
    """The block's Spark jobs described as the thread's description so far, then ``label``
    (``panes: windows 2025-01-27: write window_changes``), so Spark's UI says which of a step's
    actions each job is; the description before is restored after. Spark Connect has no job
    description: there the block runs as it is."""
    if is_remote():
        yield
        return
    sc = spark.sparkContext
    before = sc.getLocalProperty(_DESCRIPTION)
    sc.setLocalProperty(_DESCRIPTION, f"{before}: {label}" if before else label)
    try:
        yield
    finally:
        sc.setLocalProperty(_DESCRIPTION, before)  # None removes it


def _off_thread(function: Callable, *args):
    """``function(*args)`` from a new thread, so on a py4j connection of its own; None if it
    raised: a session that is gone must not hide the error the block raised."""
    result = []

    def call() -> None:
        try:
            result.append(function(*args))
        except Exception:
            pass

    thread = threading.Thread(target=call, name="progress: a call to the JVM", daemon=True)
    thread.start()
    thread.join()
    return result[0] if result else None


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
