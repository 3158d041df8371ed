"""A ranged run from Dagster's own command line: one run, every day of the range materialised."""

import os
import subprocess
import sys
from datetime import date
from pathlib import Path

from tests.landing import ensure_days, random_landing

ROOT = Path(__file__).resolve().parents[2]


def test_dagster_asset_materialize_with_a_partition_range(tmp_path):
    random_landing(tmp_path / "landing", 41, date(2025, 1, 28), 2, max_delay_days=1)
    ensure_days(tmp_path / "landing", date(2025, 1, 28), date(2025, 1, 30))
    env = {**os.environ, "PANES_LANDING": str(tmp_path / "landing"), "PANES_LAKEHOUSE": str(tmp_path / "lake"),
           "DAGSTER_HOME": str(tmp_path / "home"), "PANES_SPARK_MASTER": "local[2]"}
    (tmp_path / "home").mkdir()
    done = subprocess.run(
        [str(Path(sys.executable).parent / "dagster"), "asset", "materialize", "-m", "orchestration.definitions",
         "--select", "events,quarantine", "--partition-range", "2025-01-28...2025-01-30"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "RUN_SUCCESS" in done.stderr
    assert done.stderr.count(" - RUN_SUCCESS - ") == 1, "a range is one run"
    arrival_days = sorted(p.name for p in (tmp_path / "lake" / "events").iterdir() if p.name.startswith("arrival_date="))
    assert arrival_days == ["arrival_date=2025-01-28", "arrival_date=2025-01-29", "arrival_date=2025-01-30"]
