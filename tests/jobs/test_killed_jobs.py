"""A job killed with ``kill -9`` of its whole process group commits nothing after the kill.

A scheduler stops a job by killing its process group (Airflow's task runner, a container's
stop, an operator's ``kill -9 -PGID``). With the hand-made writer, Python workers that outlived
their driver still committed half a second later (issue 30, item 7). With delta-spark every
commit is made by the driver JVM, a child of the job's Python process in its group: it dies with
the group, and no Delta log entry may appear after the kill. Whatever moment the kill lands at,
the table is then readable, the lock is free, and a re-run gives the same contents as a run never
killed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from datetime import date, timedelta
from pathlib import Path

from jobs import ingest_events, minute_partials
from jobs.storage import delta_io
from jobs.tables import WINDOW_CHANGES, WINDOW_SNAPSHOT
from tests.landing import ensure_days, random_landing
from windowing_core.config import PipelineConfig

REPO = Path(__file__).resolve().parents[2]
FIRST = date(2025, 1, 28)
DAY = FIRST + timedelta(days=1)
KILL_AT = (0.6, 0.9)
"""Kill moments, as shares of an unkilled run's wall time: in its work, and in or near its two
commits (the last tenth of its run). A trial costs a driver's start, so two."""


def windows_job(lakehouse: str) -> subprocess.Popen:
    """``python -m jobs.sliding_windows`` for DAY, in a process group (session) of its own."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, "-m", "jobs.sliding_windows", "--lakehouse", lakehouse,
                             "--date", DAY.isoformat()], cwd=REPO, env=env, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def log_entries(lakehouse: str) -> dict[Path, float]:
    """Every Delta log entry (commits and their checksums) of the windows job's tables, with its
    modification time."""
    return {p: p.stat().st_mtime for t in (WINDOW_CHANGES, WINDOW_SNAPSHOT)
            for p in Path(t.path(lakehouse), "_delta_log").glob("*") if p.suffix in (".json", ".crc")}


def contents(spark, lakehouse: str) -> dict[str, Counter]:
    return {t.name: Counter(tuple(r) for r in delta_io.read_table(spark, t.path(lakehouse)).collect())
            for t in (WINDOW_CHANGES, WINDOW_SNAPSHOT)}


def test_a_job_killed_with_its_process_group_commits_nothing_after_the_kill(spark, tmp_path):
    landing, lakehouse, config = tmp_path / "landing", str(tmp_path / "lakehouse"), PipelineConfig()
    random_landing(landing, 20, FIRST, 2, events_per_day=300, max_delay_days=0)
    ensure_days(landing, FIRST, DAY)
    ingest_events.ingest(spark, str(landing), lakehouse, FIRST, DAY, config)
    minute_partials.run(spark, lakehouse, FIRST, DAY, config)

    started = time.monotonic()
    job = windows_job(lakehouse)
    _, err = job.communicate(timeout=600)
    assert job.returncode == 0, err[-2000:]
    wall = time.monotonic() - started
    expected = contents(spark, lakehouse)

    for share in KILL_AT:
        job = windows_job(lakehouse)
        time.sleep(wall * share)
        killed_at = time.time()
        os.killpg(job.pid, signal.SIGKILL)
        job.wait(timeout=60)
        time.sleep(3)  # what outlived the kill would commit now
        late = {p.name: round(m - killed_at, 3) for p, m in log_entries(lakehouse).items() if m > killed_at}
        assert late == {}, f"killed at {share:.0%} of a run: log entries written after the kill {late}"
        try:
            os.killpg(job.pid, 0)
            survivors = True
        except ProcessLookupError:
            survivors = False
        assert not survivors, "a process of the killed job's group is still alive"
        assert contents(spark, lakehouse) == expected  # readable, and either version holds the same rows

    job = windows_job(lakehouse)  # the lock is free and the run completes
    _, err = job.communicate(timeout=600)
    assert job.returncode == 0, err[-2000:]
    assert contents(spark, lakehouse) == expected
