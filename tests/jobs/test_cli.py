"""Each job runs alone as spark-submit or an Airflow task would: help, exit codes, one-line errors."""

import re
import subprocess
import sys

import pytest

from jobs import ingest_events, minute_partials, sliding_windows

JOBS = {"jobs.ingest_events": ingest_events, "jobs.minute_partials": minute_partials,
        "jobs.sliding_windows": sliding_windows}


@pytest.mark.parametrize("module", sorted(JOBS))
def test_help_exits_zero(module):
    done = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True, text=True)
    assert done.returncode == 0
    assert "--lakehouse" in done.stdout and "--date" in done.stdout


@pytest.mark.parametrize("module", sorted(JOBS))
def test_a_bad_date_is_a_one_line_error(module, capsys):
    with pytest.raises(SystemExit) as exit_:
        JOBS[module].main(["--landing", "x", "--lakehouse", "y", "--date", "30-01-2025"]
                          if module == "jobs.ingest_events" else ["--lakehouse", "y", "--date", "30-01-2025"])
    assert exit_.value.code == 2
    assert "not a date (YYYY-MM-DD): '30-01-2025'" in capsys.readouterr().err


def test_a_bad_configuration_names_the_field(tmp_path, capsys):
    config = tmp_path / "panes.yaml"
    config.write_text("windows:\n  w:\n    length: 90s\n    slide: 1m\n")
    with pytest.raises(SystemExit) as exit_:
        minute_partials.main(["--lakehouse", "y", "--date", "2025-01-30", "--config", str(config)])
    assert exit_.value.code == 2
    assert "bad configuration: windows.w.length (90s) must be a whole multiple of the bucket" in capsys.readouterr().err


def test_a_bad_progress_interval_is_a_one_line_error(monkeypatch, capsys):
    monkeypatch.setenv("PANES_PROGRESS_SECONDS", "-1")
    with pytest.raises(SystemExit) as exit_:
        minute_partials.main(["--lakehouse", "y", "--date", "2025-01-30"])
    assert exit_.value.code == 2
    assert "PANES_PROGRESS_SECONDS must be a finite number more than 0, not '-1'" in capsys.readouterr().err


def test_missing_inputs_exit_one_with_one_line(spark, tmp_path, capsys):
    assert ingest_events.main(["--landing", str(tmp_path / "nowhere"), "--lakehouse", str(tmp_path),
                               "--date", "2025-01-30"]) == 1
    assert minute_partials.main(["--lakehouse", str(tmp_path), "--date", "2025-01-30"]) == 1
    errors = [line for line in capsys.readouterr().err.splitlines() if ": error: " in line]
    assert len(errors) == 2
    assert "no landing folder" in errors[0] and "nowhere/2025-01-30" in errors[0]
    assert "no Delta table at" in errors[1] and "events" in errors[1]


def test_jobs_run_alone_end_to_end(spark, tmp_path, capsys):
    folder = tmp_path / "landing" / "2025-01-30"
    folder.mkdir(parents=True)
    (folder / "a.json").write_text('{"user_id": "u1", "timestamp": "2025-01-30T10:00:00Z", "value": 5}\n')
    lake = str(tmp_path / "lake")
    assert ingest_events.main(["--landing", str(tmp_path / "landing"), "--lakehouse", lake, "--date", "2025-01-30"]) == 0
    assert minute_partials.main(["--lakehouse", lake, "--date", "2025-01-30"]) == 0
    assert sliding_windows.main(["--lakehouse", lake, "--date", "2025-01-30"]) == 0
    out, err = capsys.readouterr()
    assert "1 accepted" in out and "wrote 1 minute partials" in out
    assert "jobs.minute_partials 2025-01-30 .. 2025-01-30: done in " in err  # progress: on stderr
    assert "wrote 1 change points and 1 snapshot rows" in out

    config = tmp_path / "panes.yaml"
    config.write_text("bucket: 5m\nwindows:\n  7d: {length: 7d, slide: 5m}\n")
    assert sliding_windows.main(["--lakehouse", lake, "--date", "2025-01-30", "--config", str(config)]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if ": error: " in line]
    assert len(errors) == 1
    assert ("error: bad configuration for these tables: " in errors[0]
            and "minute_partials holds rows made with bucketSeconds 60, and this job's is 300" in errors[0])


def _one_error_line(err: str) -> str:
    """argparse's usage (its first line ``usage:``, continued indented), then exactly one line."""
    *usage, last = err.rstrip("\n").split("\n")
    assert usage and usage[0].startswith("usage:") and all(line.startswith(" ") for line in usage[1:]), err[:2000]
    assert re.match(r"\S+: error: bad configuration: ", last), err[:2000]
    return last


@pytest.mark.parametrize("text, message", [
    ("[" * 5000 + "]" * 5000 + "\n", "nests lists and mappings more than 50 deep (line 1, column 51)"),
    ("1: 2\n", "unknown configuration field(s): 1; known: "),
])
def test_a_hostile_configuration_is_one_line_and_exit_two(tmp_path, capsys, text, message):
    config = tmp_path / "panes.yaml"
    config.write_text(text)
    with pytest.raises(SystemExit) as exit_:
        minute_partials.main(["--lakehouse", str(tmp_path), "--date", "2025-01-30", "--config", str(config)])
    assert exit_.value.code == 2
    line = _one_error_line(capsys.readouterr().err)
    assert f"configuration file {config}" in line or message.startswith("unknown")
    assert message in line
