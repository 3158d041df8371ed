"""Each job runs alone as spark-submit or an Airflow task would: help, exit codes, one-line errors."""

import re
import subprocess
import sys

import pytest

from jobs import ingest_events, minute_partials, sliding_windows
from jobs.tables import WINDOW_CHANGES, WINDOW_SNAPSHOT

JOBS = {"jobs.ingest_events": ingest_events, "jobs.minute_partials": minute_partials,
        "jobs.sliding_windows": sliding_windows}


@pytest.mark.parametrize("module", sorted(JOBS))
def test_help_exits_zero(module):
    done = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True, text=True)
    assert done.returncode == 0
    assert "--lakehouse" in done.stdout and "--date" in done.stdout
    assert "--from" in done.stdout  # a run below a day


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

    # An hour of the day again: an event landed in its hour folder, ingested with the day's own
    # file (of the day's end, a later part already written: redone), then its one frame (two
    # events now) and its one change point (10:01) replaced, the day's snapshot kept.
    (folder / "10").mkdir()
    (folder / "10" / "b.json").write_text('{"user_id": "u1", "timestamp": "2025-01-30T10:00:40Z", "value": 2}\n')
    hour = ["--lakehouse", lake, "--from", "2025-01-30T10:00", "--until", "2025-01-30T11:00"]
    assert ingest_events.main(["--landing", str(tmp_path / "landing"), *hour]) == 0
    assert minute_partials.main(hour) == 0 and sliding_windows.main(hour) == 0
    out, err = capsys.readouterr()
    assert ("ingested 2 records from 2 files: 2 accepted, 0 quarantined, 0 duplicates, 0 late "
            "for arrival parts 2025-01-30T10:00 .. the day's end") in out
    assert "jobs.ingest_events 2025-01-30T10:00:00 .. 2025-01-30T11:00:00: done in " in err
    assert "wrote 1 minute partials for 2025-01-30T10:00:00 .. 2025-01-30T11:00:00" in out
    assert "wrote 1 change points and 0 snapshot rows for 2025-01-30T10:00:00 .. 2025-01-30T11:00:00" in out
    assert "jobs.sliding_windows 2025-01-30T10:00:00 .. 2025-01-30T11:00:00: done in " in err
    tables = {t.name: spark.read.format("delta").load(t.path(lake)) for t in (WINDOW_CHANGES, WINDOW_SNAPSHOT)}
    assert [(str(r.window_end), r.event_count) for r in tables[WINDOW_CHANGES.name].collect()] == [
        ("2025-01-30 10:01:00", 2)]
    assert tables[WINDOW_SNAPSHOT.name].count() == 1

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


@pytest.mark.parametrize("argv, message", [
    (["--from", "2025-01-30T10:00"], "--from needs --until, a time (YYYY-MM-DDTHH:MM)"),
    (["--from", "2025-01-30T10:00", "--until", "2025-01-30"], "--from needs --until, a time"),
    (["--from", "10:00", "--until", "11:00"], "argument --from: not a time (YYYY-MM-DDTHH:MM, UTC unless it has"),
    (["--from", "2025-01-30T23:00", "--until", "2025-01-31T01:00"],
     "a run below a day lies within its one day: 2025-01-30T23:00:00 .. 2025-01-31T01:00:00 is not within 2025-01-30"),
    (["--from", "2025-01-30T11:00", "--until", "2025-01-30T10:00"], "is not within 2025-01-30"),
    (["--from", "1969-12-31T10:00", "--until", "1969-12-31T11:00"], "1969-12-31 is outside 1970-01-01 .. "),
    (["--date", "2025-01-30", "--until", "2025-01-30T10:00"],
     "--until 2025-01-30T10:00 is a time: with --date it is a day (YYYY-MM-DD)"),
    (["--date", "2025-01-30", "--from", "2025-01-30T10:00", "--until", "2025-01-30T11:00"],
     "argument --from: not allowed with argument --date"),
])
def test_a_bad_run_below_a_day_is_a_one_line_error(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        sliding_windows.main(["--lakehouse", "y", *argv])
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err.splitlines()[-1]


@pytest.mark.parametrize("module, yaml, start, message", [
    ("jobs.sliding_windows", "windows:\n  s: {gap: 30m, time: arrival}\n", "10:00",
     "a run below a day computes windows of event time only: this configuration has arrival-time windows or sessions"),
    ("jobs.sliding_windows", "windows:\n  w: {length: 14d, slide: 2d}\n", "10:00",
     "window 'w' ends less often than daily: it runs by whole days"),
    ("jobs.minute_partials", "bucket: 5m\nwindows:\n  w: {length: 1h, slide: 5m}\n", "10:01",
     "a run below a day starts and ends on whole buckets (300 s): 2025-01-30T10:01:00 .. 2025-01-30T11:00:00 does not"),
    ("jobs.minute_partials", "windows:\n  w: {length: 1h, slide: 1m, time: arrival}\n", "10:00",
     "a run below a day computes frames by event time only: this configuration has arrival-time windows"),
    ("jobs.ingest_events", "source: {table: db.clicks, time: ts}\n", "10:00",
     "a table source's rows arrive in parts of the configured partition: with partition: 1d it runs whole days"),
    ("jobs.ingest_events", "partition: 1h\nsource: {table: db.clicks, time: ts}\n", "10:30",
     "a run below a day starts and ends on whole partitions (3600 s)"),
    ("jobs.ingest_events", "{}\n", "10:00:30", "a run below a day starts and ends on whole minutes (60 s)"),
])
def test_a_run_below_a_day_the_configuration_cannot_take_is_refused_before_spark(module, yaml, start, message,
                                                                                   tmp_path, capsys):
    config = tmp_path / "panes.yaml"
    config.write_text(yaml)
    with pytest.raises(SystemExit) as exit_:
        JOBS[module].main(["--lakehouse", "y", "--config", str(config), "--from", f"2025-01-30T{start}",
                           "--until", "2025-01-30T11:00"])
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err.splitlines()[-1]
