"""Issue 30: nothing a user feeds panes stops a day or silently changes its numbers.

Each test feeds the issue's exact input and checks where every record ends: ``events``,
``quarantine`` (with its reason), or counted as a duplicate, and that the counts reconcile.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from datetime import date, datetime, timezone
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from expectations import catalog
from expectations.inputs import Inputs
from expectations.window_changes import partials_materialised
from jobs import cli, ingest_events, minute_partials, sliding_windows
from jobs.errors import ConcurrentWriteError
from jobs.storage import delta_io, delta_write
from jobs.tables import EVENTS, MINUTE_PARTIALS, QUARANTINE, WINDOW_CHANGES, WINDOW_SNAPSHOT, declared_columns
from jobs.windows import window_inputs
from windowing_core import reference
from windowing_core.config import PipelineConfig
from windowing_core.reference import Event

DAY = date(2025, 1, 27)


def ingest(spark, tmp_path, lines: list[str], config: PipelineConfig | None = None):
    """Ingest ``lines`` as one landing file of DAY; the result, the events and the quarantine."""
    folder = tmp_path / "landing" / DAY.isoformat()
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "a.json").write_text("\n".join(lines) + "\n")
    lake = str(tmp_path / "lake")
    result = ingest_events.ingest(spark, str(tmp_path / "landing"), lake, DAY, DAY, config or PipelineConfig())
    assert result.reconciles
    events = delta_io.read_table(spark, EVENTS.path(lake)).orderBy("line").collect()
    quarantine = {r.raw: r.reason for r in delta_io.read_table(spark, QUARANTINE.path(lake)).collect()}
    return result, events, quarantine


GOOD = '{"user_id":"u1","timestamp":"2025-01-27T09:00:00Z","value":3}'


def test_a_value_beyond_a_long_is_quarantined_and_the_rest_of_the_file_accepted(spark, tmp_path):
    huge = '{"user_id":"u2","timestamp":"2025-01-27T10:00:00Z","value":1e20}'
    just_over = '{"user_id":"u2","timestamp":"2025-01-27T10:00:00Z","value":9223372036854775808}'
    result, events, quarantine = ingest(spark, tmp_path, [GOOD, huge, just_over])
    assert quarantine == {huge: "value_out_of_range", just_over: "value_out_of_range"}
    assert [(e.key, e.value) for e in events] == [("u1", 3)]
    assert (result.input_records, result.accepted, result.quarantined) == (3, 1, 2)


def test_an_empty_event_id_is_a_missing_id(spark, tmp_path):
    first = '{"user_id":"u1","timestamp":"2025-01-27T10:00:00Z","event_id":""}'
    second = '{"user_id":"u1","timestamp":"2025-01-27T11:00:00Z","event_id":""}'
    result, events, quarantine = ingest(spark, tmp_path, [first, second])
    assert (result.accepted, result.duplicates, quarantine) == (2, 0, {})
    assert len({e.event_id for e in events}) == 2 and "" not in {e.event_id for e in events}


def test_two_objects_on_a_line_or_trailing_text_are_malformed(spark, tmp_path):
    two = ('{"user_id":"u1","timestamp":"2025-01-27T10:00:00Z"} '
           '{"user_id":"u2","timestamp":"2025-01-27T10:00:00Z"}')
    trailing = '{"user_id":"u3","timestamp":"2025-01-27T10:00:00Z"} trailing'
    comma = '{"user_id":"u4","timestamp":"2025-01-27T10:00:00Z"}, {"user_id":"u5","timestamp":"2025-01-27T10:00:00Z"}'
    result, events, quarantine = ingest(spark, tmp_path, [GOOD, two, trailing, comma])
    assert quarantine == {two: "malformed_json", trailing: "malformed_json", comma: "malformed_json"}
    assert [e.key for e in events] == ["u1"]


def test_a_fraction_in_an_integer_field_is_never_rounded(spark, tmp_path):
    tiny = '{"user_id":"u1","timestamp":"2025-01-27T10:00:00Z","value":1.0000000001}'
    small = '{"user_id":"u1","timestamp":"2025-01-27T10:00:00Z","value":1e-10}'
    as_text = '{"user_id":"u1","timestamp":"2025-01-27T10:00:00Z","value":"1e-10"}'
    whole = ['{"user_id":"w","timestamp":"2025-01-27T10:00:00Z","value":4.0,"event_id":"a"}',
             '{"user_id":"w","timestamp":"2025-01-27T10:00:00Z","value":1.5e3,"event_id":"b"}',
             '{"user_id":"w","timestamp":"2025-01-27T10:00:00Z","value":" 7 ","event_id":"c"}']
    result, events, quarantine = ingest(spark, tmp_path, [tiny, small, as_text, *whole])
    assert quarantine == {tiny: "value_not_integer", small: "value_not_integer", as_text: "value_not_integer"}
    assert [e.value for e in events] == [4, 1500, 7]


def test_keys_are_json_strings_as_given(spark, tmp_path):
    not_strings = [f'{{"user_id":{key},"timestamp":"2025-01-27T10:00:00Z"}}'
                   for key in ("42", "4.5", "true", "false", '{"a":1}', "[1]", '["good1"]')]
    padded = '{"user_id":"  good1  ","timestamp":"2025-01-27T10:00:00Z","event_id":"p"}'
    plain = '{"user_id":"good1","timestamp":"2025-01-27T10:00:00Z","event_id":"q"}'
    result, events, quarantine = ingest(spark, tmp_path, [*not_strings, padded, plain])
    assert quarantine == {line: "key_not_string" for line in not_strings}
    assert sorted(e.key for e in events) == ["  good1  ", "good1"]  # two keys stay two
    assert result.quarantined_by_reason == {"key_not_string": len(not_strings)}


# -- item 14: the command line's errors are one line and a documented exit code ------------------


@pytest.mark.parametrize("day", ["9999-12-31", "0001-01-01"])
def test_a_date_beyond_the_partitioned_days_is_a_bad_argument(day, capsys):
    with pytest.raises(SystemExit) as exit_:
        sliding_windows.main(["--lakehouse", "y", "--date", day])
    assert exit_.value.code == cli.EXIT_BAD_ARGUMENTS
    errors = capsys.readouterr().err.strip().splitlines()
    assert errors[-1].endswith(f"{day} is outside 1970-01-01 .. 9899-12-31, the days panes partitions")


def test_a_missing_landing_folder_run_as_a_module_is_one_line_exit_one(tmp_path):
    """Run as ``python -m``: the job's module is ``__main__`` there, the case that escaped."""
    done = subprocess.run([sys.executable, "-m", "jobs.ingest_events", "--landing", str(tmp_path / "nowhere"),
                           "--lakehouse", str(tmp_path / "lake"), "--date", "2025-01-27"],
                          capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": os.getcwd(), cli.LOG_DIR_ENV: str(tmp_path / "logs")})
    assert done.returncode == cli.EXIT_MISSING_INPUT, done.stderr
    assert "Traceback" not in done.stderr
    errors = [line for line in done.stderr.splitlines() if ": error: " in line]
    assert len(errors) == 1 and "no landing folder" in errors[0] and "nowhere/2025-01-27" in errors[0]
    # Round 2, item 8: the line, not the noise: Spark's log goes to a file the first line names.
    lines = done.stderr.splitlines()
    assert lines[-1] == errors[0] and not [line for line in lines if " WARN " in line or " ERROR " in line], lines
    log = next(line.split("Spark's own log: ", 1)[1] for line in lines if "Spark's own log: " in line)
    assert os.path.dirname(log) == str(tmp_path / "logs") and " WARN " in open(log).read()
    assert any("a small input: the JVM compiles with C1 alone" in line for line in lines)  # no bytes to ingest


def test_a_refused_concurrent_write_is_one_line_naming_the_table(spark, tmp_path, monkeypatch, capsys):
    folder = tmp_path / "landing" / DAY.isoformat()
    folder.mkdir(parents=True)
    (folder / "a.json").write_text(GOOD + "\n")

    def beaten(rows, route, targets, **write):  # what delta_write raises when another run replaced the partitions
        raise ConcurrentWriteError(
            f"another write replaced partitions [('arrival_date', 'in', ['2025-01-27'])] of\n"
            f"{targets['events'].path} after this write started; nothing of this write was committed")

    monkeypatch.setattr(delta_write, "replace_partitions_routed", beaten)
    code = ingest_events.main(["--landing", str(tmp_path / "landing"), "--lakehouse", str(tmp_path / "lake"),
                               "--date", DAY.isoformat()])
    assert code == cli.EXIT_CONCURRENT_WRITE
    errors = [line for line in capsys.readouterr().err.splitlines() if ": error: " in line]
    assert len(errors) == 1 and "lake/events after this write started" in errors[0]


# -- item 4: a window day whose partials were never materialised --------------------------------


def test_windows_over_a_day_without_its_partials_exit_one_and_the_check_fails(spark, tmp_path, capsys):
    landing, lake = tmp_path / "landing", str(tmp_path / "lake")
    for day, hour in ((date(2025, 1, 26), 10), (DAY, 11)):
        folder = landing / day.isoformat()
        folder.mkdir(parents=True)
        (folder / "a.json").write_text(
            f'{{"user_id":"u1","timestamp":"{day}T{hour}:00:00Z"}}\n{{"user_id":"u2","timestamp":"{day}T{hour}:30:00Z"}}\n')
    assert ingest_events.main(["--landing", str(landing), "--lakehouse", lake, "--date", "2025-01-26",
                               "--until", DAY.isoformat()]) == 0
    assert minute_partials.main(["--lakehouse", lake, "--date", "2025-01-26"]) == 0  # not DAY's
    capsys.readouterr()

    assert sliding_windows.main(["--lakehouse", lake, "--date", DAY.isoformat()]) == cli.EXIT_MISSING_INPUT
    errors = [line for line in capsys.readouterr().err.splitlines() if ": error: " in line]
    assert len(errors) == 1 and "minute_partials of event day(s) 2025-01-27 were never materialised" in errors[0]
    assert not delta_io.table_exists(WINDOW_CHANGES.path(lake))  # nothing written

    # The check flags a window day computed before its partials (windows written anyway).
    assert window_inputs.unmaterialised_partials(spark, lake, [date(2025, 1, 26), DAY], PipelineConfig()) == [DAY]
    inputs = Inputs(spark, str(landing), lake, PipelineConfig(), [date(2025, 1, 26), DAY],
                                 {"partials_materialised"})
    outcomes = partials_materialised(inputs)
    assert (outcomes[date(2025, 1, 26)].passed, outcomes[DAY].passed) == (True, False)
    assert "partials_materialised" in {c.name for c in catalog.checks_of(PipelineConfig(), "window_changes")
                                       if c.blocking}

    assert minute_partials.main(["--lakehouse", lake, "--date", DAY.isoformat()]) == 0
    assert sliding_windows.main(["--lakehouse", lake, "--date", DAY.isoformat()]) == 0
    assert partials_materialised(inputs)[DAY].passed


def test_a_bootstrap_over_a_day_whose_partials_were_never_built_exits_one_until_they_are(spark, tmp_path, capsys):
    """Round 2, item 1: the first day's windows bootstrap from the frames of the days before it.
    An event of the day before, landed with the first day, made no frame until that day's partials
    ran: the run must refuse, naming the day, not write sums that leave the event out."""
    first, before = date(2025, 3, 1), date(2025, 2, 28)
    folder = tmp_path / "landing" / first.isoformat()
    folder.mkdir(parents=True)
    (folder / "a.json").write_text('{"user_id":"kb","timestamp":"2025-02-28T20:00:00Z","value":5}\n'
                                   '{"user_id":"kb","timestamp":"2025-03-01T00:00:30Z","value":5}\n'
                                   '{"user_id":"ka","timestamp":"2025-03-01T10:00:00Z","value":1}\n')
    lake, day = str(tmp_path / "lake"), ["--date", first.isoformat()]
    assert ingest_events.main(["--landing", str(tmp_path / "landing"), "--lakehouse", lake, *day]) == 0
    assert minute_partials.main(["--lakehouse", lake, *day]) == 0
    capsys.readouterr()

    assert sliding_windows.main(["--lakehouse", lake, *day]) == cli.EXIT_MISSING_INPUT
    errors = [line for line in capsys.readouterr().err.splitlines() if ": error: " in line]
    assert len(errors) == 1 and "minute_partials of event day(s) 2025-02-28 were never materialised" in errors[0]
    assert not delta_io.table_exists(WINDOW_CHANGES.path(lake))  # nothing written

    assert minute_partials.main(["--lakehouse", lake, "--date", before.isoformat()]) == 0
    assert sliding_windows.main(["--lakehouse", lake, *day]) == 0
    config = PipelineConfig()
    events = [Event(r.key, r.event_time.replace(tzinfo=timezone.utc), r.value, r.event_id, r.arrival_date)
              for r in delta_io.read_table(spark, EVENTS.path(lake)).collect()]
    names = [a.name for a in config.aggregations]
    got = sorted(tuple(r) for r in delta_io.read_table(spark, WINDOW_CHANGES.path(lake))
                 .select("key", "window", "window_end", *names).collect())
    want = sorted((r.key, r.window, r.window_end.replace(tzinfo=None), *r.values)
                  for r in reference.window_changes(events, config, first, first))
    assert got == want
    assert ("kb", "7d", datetime(2025, 3, 1, 0, 1), 2, 10) in got  # the row: both of kb's events


@pytest.fixture(scope="module")
def three_days(spark, tmp_path_factory):
    """A lakehouse of three days of events, their partials and two days of windows (built once)."""
    work = tmp_path_factory.mktemp("three_days")
    landing, base = work / "landing", work / "base"
    for day in (date(2025, 4, 1), date(2025, 4, 2), date(2025, 4, 3)):
        (landing / day.isoformat()).mkdir(parents=True)
        (landing / day.isoformat() / "a.json").write_text("".join(
            f'{{"user_id":"u{i % 3}","timestamp":"{day}T1{i}:00:00Z","value":{i}}}\n' for i in range(6)))
    days = ["--date", "2025-04-01", "--until", "2025-04-03"]
    assert ingest_events.main(["--landing", str(landing), "--lakehouse", str(base), *days]) == 0
    assert minute_partials.main(["--lakehouse", str(base), *days]) == 0
    assert sliding_windows.main(["--lakehouse", str(base), "--date", "2025-04-01", "--until", "2025-04-02"]) == 0
    return base


def _parquet_files(folder):
    return [p for p in sorted(folder.iterdir()) if p.suffix == ".parquet"]


def _overwrite_middle(path, salt=0):
    data = bytearray(path.read_bytes())
    data[len(data) // 2:len(data) // 2 + 64] = bytes((i * 31 + salt) % 256 for i in range(64))
    path.write_bytes(bytes(data))


def test_a_table_file_changed_outside_delta_is_one_line_naming_the_table_and_the_days(three_days, tmp_path, capsys):
    """Round 2, item 6: a partition's files removed, random bytes inside one, a file cut short:
    exit 1 and one line naming the table, the partition and what to make again, not Spark's
    stack traces."""
    base = three_days
    cases = [  # damage, the job run after it, what the line must name
        (lambda lake: shutil.rmtree(lake / "minute_partials" / "event_date=2025-04-02"),
         sliding_windows, ["--date", "2025-04-02"], "minute_partials: the file event_date=2025-04-02/", "is missing"),
        (lambda lake: _overwrite_middle(_parquet_files(lake / "minute_partials" / "event_date=2025-04-03")[0]),
         sliding_windows, ["--date", "2025-04-03"], "minute_partials: the file event_date=2025-04-03/", "is damaged"),
        (lambda lake: shutil.rmtree(lake / "window_snapshot" / "date=2025-04-02"),
         sliding_windows, ["--date", "2025-04-03"], "window_snapshot: the file date=2025-04-02/", "is missing"),
        (lambda lake: [p.write_bytes(p.read_bytes()[:len(p.read_bytes()) // 3])
                       for p in (lake / "events" / "arrival_date=2025-04-02").iterdir() if p.suffix == ".parquet"],
         minute_partials, ["--date", "2025-04-02"], "events: the file arrival_date=2025-04-02/", "is damaged"),
    ]
    for i, (damage, job, args, names, state) in enumerate(cases):
        lake = tmp_path / f"lake{i}"
        shutil.copytree(base, lake)
        damage(lake)
        capsys.readouterr()
        assert job.main(["--lakehouse", str(lake), *args]) == cli.EXIT_MISSING_INPUT
        errors = [line for line in capsys.readouterr().err.splitlines() if ": error: " in line]
        assert len(errors) == 1 and names in errors[0] and state in errors[0], errors
        assert "Materialise " + names.split(":")[0] + " again for " in errors[0]


PARTITIONED = {"events": "arrival_date", "minute_partials": "event_date", "window_snapshot": "date",
               "window_changes": "date"}
WRITES = {"minute_partials": (minute_partials, [(MINUTE_PARTIALS, "event_date")]),
          "sliding_windows": (sliding_windows, [(WINDOW_CHANGES, "date"), (WINDOW_SNAPSHOT, "date")])}


def _damage(lake, table, day, how, salt):
    folder = lake / table / f"{PARTITIONED[table]}={day}"
    if how == "remove_partition":
        shutil.rmtree(folder)
        return
    target = _parquet_files(folder)[salt % len(_parquet_files(folder))]
    if how == "remove_file":
        target.unlink()
    elif how == "overwrite_bytes":
        _overwrite_middle(target, salt)
    else:  # cut short
        target.write_bytes(target.read_bytes()[:len(target.read_bytes()) * (1 + salt % 3) // 4])


def _rows(spark, lake, table, column, day):
    path = table.path(str(lake))
    if not delta_io.table_exists(path):
        return []
    return sorted(map(tuple, delta_io.read_table(spark, path, partition_filters=[(column, "=", day)]).collect()))


@settings(max_examples=4, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(table=st.sampled_from(sorted(PARTITIONED)), day=st.sampled_from(["2025-04-01", "2025-04-02"]),
       how=st.sampled_from(["remove_partition", "remove_file", "overwrite_bytes", "cut_short"]),
       salt=st.integers(0, 255),
       runs=st.lists(st.tuples(st.sampled_from(sorted(WRITES)), st.sampled_from(["2025-04-02", "2025-04-03"])),
                     min_size=1, max_size=2))
def test_a_run_over_a_damaged_table_refuses_in_one_line_or_writes_what_a_clean_run_writes(
        spark, three_days, capsys, table, day, how, salt, runs):
    """Round 2: a random table file or partition damaged outside Delta, then random runs. No run
    may exit 0 with numbers a run over the undamaged tables would not write."""
    with tempfile.TemporaryDirectory() as work:
        clean, damaged = Path(work) / "clean", Path(work) / "damaged"
        shutil.copytree(three_days, clean)
        shutil.copytree(three_days, damaged)
        _damage(damaged, table, day, how, salt)
        for job, run_day in runs:
            module, written = WRITES[job]
            assert module.main(["--lakehouse", str(clean), "--date", run_day]) == 0
            capsys.readouterr()
            code = module.main(["--lakehouse", str(damaged), "--date", run_day])
            errors = [line for line in capsys.readouterr().err.splitlines() if ": error: " in line]
            if code != 0:
                assert code == cli.EXIT_MISSING_INPUT and len(errors) == 1, (code, errors)
                return
            for target, column in written:
                assert _rows(spark, damaged, target, column, run_day) == _rows(spark, clean, target, column, run_day)


# -- item 3: sums beyond a long widen -------------------------------------------------------------


def test_sums_beyond_a_long_widen_and_agree_with_the_oracle(spark, tmp_path):
    big = 2**63 - 1
    lines = [f'{{"user_id":"u1","timestamp":"2025-01-27T10:00:{s:02d}Z","value":{big},"event_id":"e{s}"}}'
             for s in (0, 1)]  # two values of 2^63 - 1 for one key, in one frame
    lines.append(f'{{"user_id":"u1","timestamp":"2025-01-27T12:00:00Z","value":{big},"event_id":"e2"}}')
    folder = tmp_path / "landing" / DAY.isoformat()
    folder.mkdir(parents=True)
    (folder / "a.json").write_text("\n".join(lines) + "\n")
    lake, config = str(tmp_path / "lake"), PipelineConfig()
    ingest_events.ingest(spark, str(tmp_path / "landing"), lake, DAY, DAY, config)
    minute_partials.run(spark, lake, DAY, DAY, config)
    sliding_windows.run(spark, lake, DAY, DAY, config)

    assert ("sum__s", "decimal(38,0)") in declared_columns("minute_partials", config)
    assert ("sum", "decimal(38,0)") in declared_columns("window_changes", config)
    assert ("sum__s", "decimal(38,0)") in declared_columns("window_snapshot", config)
    frames = delta_io.read_table(spark, MINUTE_PARTIALS.path(lake)).orderBy("frame_start").collect()
    assert [f.sum__s for f in frames] == [2 * big, big]
    changes = delta_io.read_table(spark, WINDOW_CHANGES.path(lake)).orderBy("window_end").collect()

    events = [Event("u1", datetime(2025, 1, 27, h, 0, s, tzinfo=timezone.utc), big, f"e{i}", DAY)
              for i, (h, s) in enumerate([(10, 0), (10, 1), (12, 0)])]
    expected = reference.window_changes(events, config, DAY, DAY)
    assert [(c.key, c.window_end.replace(tzinfo=timezone.utc), (c.event_count, c.sum)) for c in changes] == \
        [(r.key, r.window_end, r.values) for r in expected]
    assert [c.sum for c in changes] == [2 * big, 3 * big]
    snapshot = delta_io.read_table(spark, WINDOW_SNAPSHOT.path(lake)).collect()
    assert [(s.sum, s.sum__s) for s in snapshot] == [(3 * big, 3 * big)]


# -- items 2 and 11: what an arrival folder holds ---------------------------------------------------


def test_files_in_subfolders_and_linked_folders_belong_to_their_arrival_day(spark, tmp_path):
    landing = tmp_path / "landing"
    folder = landing / DAY.isoformat()
    (folder / "sub" / "deeper").mkdir(parents=True)
    (folder / "2025-01-28").mkdir()  # a subfolder named after another day is still this day's
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (folder / "top.json").write_text(GOOD.replace("u1", "top") + "\n")
    (folder / "sub" / "deeper" / "nested.json").write_text(GOOD.replace("u1", "nested") + "\n")
    (folder / "2025-01-28" / "dated.json").write_text(GOOD.replace("u1", "dated") + "\n")
    (elsewhere / "linked.json").write_text(GOOD.replace("u1", "linked") + "\n")
    (folder / "link").symlink_to(elsewhere, target_is_directory=True)
    lake = str(tmp_path / "lake")

    result = ingest_events.ingest(spark, str(landing), lake, DAY, DAY, PipelineConfig())
    assert (result.input_records, result.accepted, result.quarantined, result.files) == (4, 4, 0, 4)
    events = delta_io.read_table(spark, EVENTS.path(lake)).collect()
    assert sorted((e.key, e.arrival_date) for e in events) == [(k, DAY) for k in ("dated", "linked", "nested", "top")]


def test_hidden_files_are_counted_not_skipped(spark, tmp_path):
    landing = tmp_path / "landing"
    folder = landing / DAY.isoformat()
    (folder / ".staging").mkdir(parents=True)
    (folder / "a.json").write_text(GOOD + "\n")
    (folder / "_in_flight.json").write_text((GOOD + "\n") * 2)
    (folder / ".upload.json").write_text((GOOD + "\n") * 3)
    (folder / ".staging" / "b.json").write_text(GOOD + "\n")
    (folder / "_SUCCESS").write_text("")  # an empty marker holds no record
    lake = str(tmp_path / "lake")

    result = ingest_events.ingest(spark, str(landing), lake, DAY, DAY, PipelineConfig())
    assert (result.input_records, result.accepted, result.quarantined) == (4, 1, 3)
    assert result.quarantined_by_reason == {"hidden_file": 3}
    assert result.reconciles
    quarantine = delta_io.read_table(spark, QUARANTINE.path(lake)).collect()
    spelled = delta_io.read_table(spark, EVENTS.path(lake)).first().source_file
    names = sorted(q.source_file.removeprefix(spelled.rsplit("/", 1)[0] + "/") for q in quarantine)
    assert names == [".staging/b.json", ".upload.json", "_in_flight.json"]  # spelled as Spark spells paths
    assert {(q.raw, q.reason) for q in quarantine} == {(None, "hidden_file")}

    # The reconciliation's recount (the check's own reading of the landing folder) agrees.
    landing_records = ingest_events.read_landing(spark, str(landing), DAY, DAY)
    assert landing_records.count() == result.input_records
