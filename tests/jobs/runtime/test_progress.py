"""Progress of long Spark work: named in Spark, reported while it runs, the thread's group restored."""

import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from pyspark import InheritableThread

from jobs.runtime import progress

ROOT = Path(__file__).resolve().parents[3]


def slow_count(spark, seconds_per_row: float = 0.3) -> int:
    def slow(x):
        time.sleep(seconds_per_row)
        return x
    return spark.sparkContext.parallelize(range(4), 2).map(slow).count()


def progress_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("progress ")]


def test_the_work_runs_as_a_named_job_group_and_its_stages_are_reported_while_it_runs(spark):
    sc, lines = spark.sparkContext, []
    sc.setJobGroup("outer", "the caller's own group")
    try:
        with progress.reported(spark, "slow work", lines.append, every=0.05):
            assert sc.getLocalProperty("spark.jobGroup.id").startswith("panes-")
            assert sc.getLocalProperty("spark.job.description") == "panes: slow work"
            assert slow_count(spark) == 4
        assert sc.getLocalProperty("spark.jobGroup.id") == "outer"
        assert sc.getLocalProperty("spark.job.description") == "the caller's own group"
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
        sc.setLocalProperty("spark.job.description", None)
    assert lines[0] == "slow work: started"  # the tests' session has no UI to point to
    running = [line for line in lines[1:-1] if "tasks done" in line]
    assert running, lines
    assert all(line.startswith("slow work: ") and " s in, Spark jobs: 1 running, 0 done; stage " in line
               and " of 2 tasks done, " in line for line in running), running
    assert lines[-1].startswith("slow work: done in ") and lines[-1].endswith(" s, 1 Spark job"), lines[-1]
    assert progress_threads() == []


def test_a_failing_block_is_reported_as_failed_and_still_restores_the_thread(spark):
    sc, lines = spark.sparkContext, []
    with pytest.raises(ZeroDivisionError):
        with progress.reported(spark, "doomed work", lines.append, every=60):
            assert spark.sparkContext.parallelize(range(3)).count() == 3
            1 / 0
    assert sc.getLocalProperty("spark.jobGroup.id") is None
    assert sc.getLocalProperty("spark.job.description") is None
    assert lines == [lines[0], lines[-1]] and lines[-1].startswith("doomed work: failed after ")
    assert lines[-1].endswith(" s, 1 Spark job")
    assert progress_threads() == []


def test_a_block_that_raises_cancels_the_spark_jobs_it_leaves_running(spark):
    sc, lines, jobs = spark.sparkContext, [], []
    tracker = sc.statusTracker()
    with pytest.raises(RuntimeError, match="the driver gave up"):
        with progress.reported(spark, "abandoned work", lines.append, every=60):
            group = sc.getLocalProperty("spark.jobGroup.id")
            # A thread of the block's own (it inherits the group) runs a job of 20 s per task.
            background = InheritableThread(target=lambda: jobs.append(_outcome(slow_count, spark, 10.0)))
            background.start()
            while not tracker.getJobIdsForGroup(group):
                time.sleep(0.05)
            raise RuntimeError("the driver gave up")
    background.join(timeout=15)
    assert not background.is_alive(), "the job ran on after the block had ended"
    assert isinstance(jobs[0], Exception) and "cancel" in str(jobs[0]).lower(), jobs
    assert [tracker.getJobInfo(j).status for j in tracker.getJobIdsForGroup(group)] == ["FAILED"]
    assert lines[-1].startswith("abandoned work: failed after ")
    assert sc.getLocalProperty("spark.jobGroup.id") is None


def test_an_interrupt_during_a_spark_call_cancels_the_job_and_is_what_the_step_raises():
    """As Dagster terminates a run: in a process of its own (``tests/jobs/runtime/interrupted_step.py``)."""
    done = subprocess.run([sys.executable, "-m", "tests.jobs.runtime.interrupted_step"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["raised"] == "Terminated", seen  # the interrupt, not an error of the broken connection
    assert seen["statuses"] == ["FAILED"], "the job ran on after the step was interrupted"
    assert seen["lines"][-1].startswith("terminated work: failed after "), seen
    assert seen["lines"][-1].endswith(" s, 1 Spark job"), seen


def _outcome(function, *args):
    try:
        return function(*args)
    except Exception as err:
        return err


class Tracker:
    """Spark's status tracker, as its Python API answers, for the lines between stages."""

    def __init__(self, jobs, stages, active):
        self.jobs, self.stages, self.active = jobs, stages, active

    def getJobIdsForGroup(self, group):
        return list(self.jobs)

    def getJobInfo(self, job_id):
        return self.jobs.get(job_id)

    def getActiveStageIds(self):
        return list(self.active)

    def getStageInfo(self, stage_id):
        return self.stages.get(stage_id)


def job(job_id, stage_ids, status):
    return SimpleNamespace(jobId=job_id, stageIds=stage_ids, status=status)


def stage(stage_id, tasks, done, running, failed=0):
    return SimpleNamespace(stageId=stage_id, numTasks=tasks, numCompletedTasks=done, numActiveTasks=running,
                           numFailedTasks=failed)


def test_the_status_line_names_failed_tasks_and_the_pauses_between_spark_jobs():
    jobs = {0: job(0, [0, 1], "SUCCEEDED"), 1: job(1, [3, 2], "RUNNING"), 2: job(2, [4], "FAILED")}
    stages = {2: stage(2, 8, 5, 2, failed=1), 3: stage(3, 200, 0, 0)}
    assert progress.status_line(Tracker(jobs, stages, active=[3, 2]), "g") == (
        "Spark jobs: 1 running, 1 done; stage 2: 5 of 8 tasks done, 2 running, 1 failed; "
        "stage 3: 0 of 200 tasks done, 0 running")
    between = {0: job(0, [0, 1], "SUCCEEDED")}
    assert progress.status_line(Tracker(between, {}, active=[]), "g") == (
        "Spark jobs: 0 running, 1 done; no stage running (the driver is planning, reading a Delta log or "
        "committing)")


def test_a_status_api_that_stops_answering_ends_the_reports_not_the_work():
    class Gone(Tracker):
        def getJobIdsForGroup(self, group):
            raise ConnectionError("the gateway is closed")

    lines = []
    progress._poll(Gone({}, {}, []), "g", "work", lines.append, 0.01, time.monotonic(), threading.Event())
    assert lines == ["work: progress no longer available (ConnectionError: the gateway is closed)"]


@pytest.mark.parametrize("text, seconds", [(None, 30.0), ("", 30.0), ("2.5", 2.5)])
def test_the_interval_comes_from_the_environment(monkeypatch, text, seconds):
    if text is None:
        monkeypatch.delenv("PANES_PROGRESS_SECONDS", raising=False)
    else:
        monkeypatch.setenv("PANES_PROGRESS_SECONDS", text)
    assert progress.every_seconds() == seconds


@pytest.mark.parametrize("text", ["soon", "0", "-5", "nan", "inf"])
def test_a_bad_interval_is_named(monkeypatch, text):
    monkeypatch.setenv("PANES_PROGRESS_SECONDS", text)
    with pytest.raises(ValueError, match="PANES_PROGRESS_SECONDS"):
        progress.every_seconds()


def test_under_spark_connect_only_the_start_and_the_end_are_logged(monkeypatch):
    monkeypatch.setattr(progress, "is_remote", lambda: True)
    lines = []
    with progress.reported(object(), "remote work", lines.append, every=0.01):  # no SparkContext to ask
        time.sleep(0.05)
    with pytest.raises(ValueError):
        with progress.reported(object(), "remote work", lines.append, every=0.01):
            raise ValueError
    starts = ["remote work: started", "remote work: done in ",
              "remote work: started", "remote work: failed after "]
    assert len(lines) == 4 and all(line.startswith(start) for line, start in zip(lines, starts)), lines

