"""Several Spark drivers committing to one Delta table at once lose no commit.

Dagster runs each run in a process of its own, each with its own Spark driver: a late firing,
the daily schedule and a backfill can write one table at the same moment. Delta's commit is a
put-if-absent of the log's next entry, which delta-spark's file-system log store makes atomic
only inside one JVM, so panes holds a lock on the table for each write (``delta_write._locked``).
Here drivers in separate processes replace different partitions of one table, many times each,
all at once.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from deltalake import DeltaTable

REPO = Path(__file__).resolve().parents[3]
DRIVERS, COMMITS = 3, 6


def test_drivers_committing_at_once_each_land_every_commit(spark, tmp_path):
    table = str(tmp_path / "shared")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    writer = "tests.jobs.storage.concurrent_writer"
    drivers = [subprocess.Popen([sys.executable, "-m", writer, table, f"w{n}", str(COMMITS)],
                                cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for n in range(DRIVERS)]
    outcomes = [d.communicate(timeout=900) for d in drivers]
    assert [d.returncode for d in drivers] == [0] * DRIVERS, [err[-2000:] for _, err in outcomes]
    reported = [v for out, _ in outcomes for v in json.loads(out.strip().splitlines()[-1])["versions"]]

    history = DeltaTable(table).history()
    # every commit landed at a version of its own, and the log has no gap and no extra entry
    assert sorted(reported) == list(range(DRIVERS * COMMITS))
    assert sorted(c["version"] for c in history) == list(range(DRIVERS * COMMITS))
    assert len({c["userMetadata"] for c in history}) == DRIVERS * COMMITS
    # the table holds exactly the union of what the drivers wrote
    rows = sorted((r["writer"], r["i"], r["part"]) for r in DeltaTable(table).to_pyarrow_table().to_pylist())
    assert rows == sorted((f"w{n}", i, f"w{n}-{i}") for n in range(DRIVERS) for i in range(COMMITS))
    assert sorted(tuple(r) for r in spark.read.format("delta").load(table).collect()) == rows
