"""The daily partitions are a setting: PANES_START_DATE .. PANES_END_DATE, and the demo's days."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from assets.partitions import partitions_from_environment
from orchestration.demo import set_in_env_file

ROOT = Path(__file__).parents[2]


def test_the_partitions_are_the_days_from_start_to_end_both_included():
    keys = partitions_from_environment({"PANES_START_DATE": "2025-01-27", "PANES_END_DATE": "2025-02-08"}) \
        .get_partition_keys()
    assert (keys[0], keys[-1], len(keys)) == ("2025-01-27", "2025-02-08", 13)


def test_without_settings_the_partitions_start_in_2025_and_run_to_today():
    partitions = partitions_from_environment({})
    assert partitions.start.date().isoformat() == "2025-01-01"
    assert partitions.end is None


@pytest.mark.parametrize("environ, message", [
    ({"PANES_START_DATE": "27.01.2025"}, "PANES_START_DATE must be a date (YYYY-MM-DD), not '27.01.2025'"),
    ({"PANES_START_DATE": "2025-02-01", "PANES_END_DATE": "2025-01-31"},
     "PANES_END_DATE 2025-01-31 is before PANES_START_DATE 2025-02-01"),
])
def test_a_bad_setting_is_refused_naming_it(environ, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        partitions_from_environment(environ)


def test_the_demo_sets_its_days_in_the_env_file_keeping_the_other_lines(tmp_path):
    env = tmp_path / ".env"
    env.write_text("PANES_LAKEHOUSE=/data/lake\nPANES_START_DATE=2025-01-01\n")
    set_in_env_file(env, {"PANES_START_DATE": "2025-01-27", "PANES_END_DATE": "2025-02-08"})
    assert env.read_text() == "PANES_LAKEHOUSE=/data/lake\nPANES_START_DATE=2025-01-27\nPANES_END_DATE=2025-02-08\n"


def test_the_definitions_dagster_dev_loads_follow_the_setting():
    """``dagster dev`` loads ``orchestration.definitions`` in a process of its own, with the
    variables of ``.env``: its jobs' partitions are then the demo's days."""
    code = ("from orchestration.definitions import defs; "
            "keys = defs.resolve_job_def('daily_pipeline').partitions_def.get_partition_keys(); "
            "print(keys[0], keys[-1], len(keys))")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PANES_START_DATE": "2025-01-27", "PANES_END_DATE": "2025-02-08"}
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["2025-01-27", "2025-02-08", "13"]
