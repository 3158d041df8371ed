"""Ingest: each kind of bad record lands in quarantine with its reason, and nothing disappears."""

import bz2
import gzip
import json
import os
import zlib
from collections import Counter
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from jobs import ingest_events
from jobs.ingest import landing_files, parse, quarantine
from jobs.storage import delta_io
from jobs.tables import EVENTS, LATE_EVENTS, QUARANTINE
from tests.landing import random_landing
from windowing_core.config import PipelineConfig
from windowing_core.run_interval import RunInterval

DAY = date(2025, 1, 30)

BAD = {
    "malformed_json": ['{"user_id": "u1", "timestamp": ', "plain text", "[1, 2]", '"a string"'],
    "missing_key": ['{"timestamp": "2025-01-30T10:00:00Z"}', '{"user_id": null, "timestamp": "2025-01-30T10:00:00Z"}',
                    '{"user_id": "  ", "timestamp": "2025-01-30T10:00:00Z"}',
                    # only blanks of any kind: a tab, a newline, a no-break space
                    *(f'{{"user_id": "{blank}", "timestamp": "2025-01-30T10:00:00Z"}}' for blank in
                      (r"\t", r"\n", r" \u00a0 ", "\u2003"))],
    "key_not_string": ['{"user_id": 42, "timestamp": "2025-01-30T12:00:00Z", "value": "7", "event_id": "b"}'],
    "missing_timestamp": ['{"user_id": "u1"}', '{"user_id": "u1", "timestamp": null}'],
    "unparseable_timestamp": ['{"user_id": "u1", "timestamp": "yesterday"}',
                              '{"user_id": "u1", "timestamp": "2025-13-45T99:00:00Z"}'],
    "timestamp_out_of_range": ['{"user_id": "u1", "timestamp": "1969-12-31T23:59:59Z"}',
                               '{"user_id": "u1", "timestamp": "2025-01-31T00:00:00Z"}'],
    "value_not_numeric": ['{"user_id": "u1", "timestamp": "2025-01-30T10:00:00Z", "value": "abc"}',
                          '{"user_id": "u1", "timestamp": "2025-01-30T10:00:00Z", "value": true}'],
    "value_not_integer": ['{"user_id": "u1", "timestamp": "2025-01-30T10:00:00Z", "value": 2.5}'],
    "value_out_of_range": ['{"user_id": "u1", "timestamp": "2025-01-30T10:00:00Z", "value": 1e30}',
                           '{"user_id": "u1", "timestamp": "2025-01-30T10:00:00Z", "value": -1e400}'],
}
GOOD = [
    {"user_id": "u1", "timestamp": "2025-01-30T10:00:00Z", "event_id": "a"},
    {"user_id": "u1", "timestamp": "2025-01-30T10:00:00Z", "event_id": "a"},  # duplicate
    {"user_id": "u2", "timestamp": "2025-01-30T11:00:00.250+01:00", "value": 3},  # no id: hashed
    {"user_id": "42", "timestamp": "2025-01-30T12:00:00Z", "value": "7", "event_id": "b"},
    {"user_id": "u3", "timestamp": "2025-01-30T13:00:00Z", "value": 4.0, "event_id": "c"},
    {"user_id": "u4", "timestamp": "2025-01-26T13:00:00Z", "event_id": "d"},  # 4 days late
]
# Below the smallest double: 0 to JSON parsers (Python's json too), so 0 here, as documented.
TINY = '{"user_id": "u5", "timestamp": "2025-01-30T14:00:00Z", "value": 1e-400, "event_id": "t"}'


def test_every_record_ends_in_exactly_one_place(spark, tmp_path):
    folder = tmp_path / "landing" / DAY.isoformat()
    folder.mkdir(parents=True)
    bad_lines = [line for lines in BAD.values() for line in lines]
    (folder / "a.json").write_text("\n".join([*bad_lines, TINY]) + "\n\n")  # a blank line is no record
    (folder / "b.json.gz").write_bytes(gzip.compress("\n".join(json.dumps(r) for r in GOOD).encode()))
    lake = str(tmp_path / "lake")

    result = ingest_events.ingest(spark, str(tmp_path / "landing"), lake, DAY, DAY, PipelineConfig())

    assert result.input_records == len(bad_lines) + len(GOOD) + 1
    assert (result.accepted, result.duplicates, result.late) == (5, 1, 1)
    assert result.quarantined_by_reason == {reason: len(lines) for reason, lines in BAD.items()}
    assert result.reconciles

    quarantined = {(r.raw, r.reason) for r in delta_io.read_table(spark, QUARANTINE.path(lake)).collect()}
    assert quarantined == {(line, reason) for reason, lines in BAD.items() for line in lines}
    events = {r.key: (r.value, str(r.event_time)) for r in delta_io.read_table(spark, EVENTS.path(lake)).collect()}
    assert events == {"u1": (1, "2025-01-30 10:00:00"), "u2": (3, "2025-01-30 10:00:00.250000"),
                      "42": (7, "2025-01-30 12:00:00"), "u3": (4, "2025-01-30 13:00:00"),
                      "u5": (0, "2025-01-30 14:00:00")}
    late = delta_io.read_table(spark, LATE_EVENTS.path(lake)).collect()
    assert [(r.key, r.reason, r.event_date) for r in late] == [("u4", "beyond_allowed_lateness", date(2025, 1, 26))]


def test_the_key_field_is_configurable(spark, tmp_path):
    folder = tmp_path / "landing" / DAY.isoformat()
    folder.mkdir(parents=True)
    (folder / "a.json").write_text('{"account": "acme", "timestamp": "2025-01-30T10:00:00Z", "value": 5}\n'
                                   '{"user_id": "u1", "timestamp": "2025-01-30T10:00:00Z"}\n')
    lake = str(tmp_path / "lake")
    config = PipelineConfig(key_field="account")
    result = ingest_events.ingest(spark, str(tmp_path / "landing"), lake, DAY, DAY, config)
    assert (result.accepted, result.quarantined_by_reason) == (1, {"missing_key": 1})


def test_a_group_reads_landing_folders_of_its_own_into_its_sources_ingest(spark, tmp_path, capsys):
    """``source: {landing: ...}``: the command line ingests that folder (``--source`` names it,
    no ``--landing``), into the source's folder of the lakehouse."""
    folder = tmp_path / "orders" / DAY.isoformat()
    folder.mkdir(parents=True)
    (folder / "a.json").write_text('{"user_id": "u1", "timestamp": "2025-01-30T10:00:00Z", "value": 5}\nnot json\n')
    config = tmp_path / "groups.yaml"
    orders = {"source": {"landing": str(tmp_path / "orders")}}
    config.write_text(json.dumps({"groups": {"views": {}, "bought": orders}}))
    lake = tmp_path / "lake"
    argv = ["--lakehouse", str(lake), "--date", DAY.isoformat(), "--config", str(config)]
    assert ingest_events.main([*argv, "--source", "orders"]) == 0
    assert "1 accepted" in capsys.readouterr().out
    assert [r.key for r in delta_io.read_table(spark, EVENTS.path(str(lake / "orders"))).collect()] == ["u1"]
    assert delta_io.read_table(spark, QUARANTINE.path(str(lake / "orders"))).count() == 1
    assert not (lake / "events").exists()
    with pytest.raises(SystemExit) as exit_:
        ingest_events.main([*argv, "--source", "nowhere"])
    assert exit_.value.code == 2
    assert capsys.readouterr().err.strip().endswith(
        "error: bad configuration: no source nowhere; the configuration reads (the landing folders), orders")


def test_each_line_is_parsed_once(spark, tmp_path):
    """Five fields are read from each line; Spark's optimizer would parse it once per field."""
    folder = tmp_path / "landing" / DAY.isoformat()
    folder.mkdir(parents=True)
    (folder / "a.json").write_text('{"user_id": "u1", "timestamp": "2025-01-30T10:00:00Z", "value": 5}\n')
    config = PipelineConfig()
    classified = (ingest_events.read_landing(spark, str(tmp_path / "landing"), DAY, DAY)
                  .transform(parse.with_file_positions)
                  .transform(parse.with_parsed_fields, config)
                  .transform(quarantine.with_reason, config))
    plan = classified._jdf.queryExecution().optimizedPlan().toString()
    assert plan.count("parseJson(concat(") == 1, plan


def test_a_day_of_unreadable_files_is_quarantined_whole(spark, tmp_path):
    folder = tmp_path / "landing" / DAY.isoformat()
    folder.mkdir(parents=True)
    (folder / "not-gzip.json.gz").write_bytes(b"plain text")
    (folder / "truncated.json.gz").write_bytes(gzip.compress(b'{"user_id": "u1"}\n' * 100)[:-12])
    lake = str(tmp_path / "lake")
    result = ingest_events.ingest(spark, str(tmp_path / "landing"), lake, DAY, DAY, PipelineConfig())
    assert (result.input_records, result.files, result.accepted) == (2, 2, 0)
    assert result.quarantined_by_reason == {"truncated_gzip": 1, "unreadable_file": 1}
    assert result.reconciles
    assert delta_io.read_table(spark, EVENTS.path(lake)).count() == 0


def test_a_range_run_checks_every_days_compressed_files_at_once_and_counts_each_on_its_own_day(spark, tmp_path,
                                                                                              monkeypatch):
    """One check of the compressed files for all the run's days (``landing_files.read_folders``):
    each refused file is still its own day's record, and each day's good files are read. Checked
    on the driver (a small day) or in Spark tasks, the records are the same to the byte."""
    first, second = DAY, DAY + timedelta(days=1)
    for day, broken in ((first, "a.json.gz"), (second, "b.json.gz")):
        folder = tmp_path / "landing" / day.isoformat()
        folder.mkdir(parents=True)
        (folder / broken).write_bytes(gzip.compress(b'{"user_id": "u1"}\n' * 100)[:-12])
        (folder / "good.json.gz").write_bytes(gzip.compress(
            f'{{"user_id": "u{day.day}", "timestamp": "{day}T10:00:00Z"}}\n'.encode()))
    (tmp_path / "landing" / second.isoformat() / "c.json.gz").write_bytes(b"plain text")
    lake = str(tmp_path / "lake")
    result = ingest_events.ingest(spark, str(tmp_path / "landing"), lake, first, second, PipelineConfig())
    assert {d: (r.accepted, r.quarantined_by_reason) for d, r in result.by_day.items()} == {
        first: (1, {"truncated_gzip": 1}), second: (1, {"truncated_gzip": 1, "unreadable_file": 1})}
    quarantined = {(Path(r.source_file).name, r.arrival_date) for r in
                   delta_io.read_table(spark, QUARANTINE.path(lake)).collect()}
    assert quarantined == {("a.json.gz", first), ("b.json.gz", second), ("c.json.gz", second)}
    assert result.reconciles
    monkeypatch.setattr(landing_files, "DRIVER_CHECKED_BYTES", 0)  # any compressed byte: Spark's tasks check
    in_tasks = str(tmp_path / "lake-tasks")
    assert ingest_events.ingest(spark, str(tmp_path / "landing"), in_tasks, first, second, PipelineConfig()) == result
    for table in (QUARANTINE, EVENTS):
        assert sorted(delta_io.read_table(spark, table.path(in_tasks)).collect()) == \
            sorted(delta_io.read_table(spark, table.path(lake)).collect()), table.name


def test_every_file_a_landing_folder_can_hold_is_read_or_counted_never_stops_the_day(spark, tmp_path):
    """A corrupt or cut bzip2, random bytes named .deflate or .lz4, a ':' in a name, a dangling
    link, a FIFO and a link back to its own folder: each is one ``unreadable_file`` record, the
    good files beside them (plain, bzip2, deflate, through a linked folder) are read, and the day
    ends (Spark's own listing would follow the loop forever)."""
    folder = tmp_path / "landing" / DAY.isoformat()
    (folder / "sub").mkdir(parents=True)
    lines = lambda tag, n: "".join(f'{{"user_id":"u{i}","timestamp":"{DAY}T10:00:00Z","event_id":"{tag}{i}"}}\n'
                                   for i in range(n)).encode()
    (folder / "good.json").write_bytes(lines("p", 3))
    (folder / "good.json.bz2").write_bytes(bz2.compress(lines("b", 4)) + bz2.compress(lines("B", 1)))
    (folder / "sub" / "good.json.deflate").write_bytes(zlib.compress(lines("d", 5)))
    (folder / "corrupt.json.bz2").write_bytes(bytes(range(256)) * 2)
    (folder / "cut.json.bz2").write_bytes(bz2.compress(lines("c", 2000))[:120])
    (folder / "random.deflate").write_bytes(bytes(range(7, 255)) * 3)
    (folder / "random.json.lz4").write_bytes(bytes(range(3, 200)) * 3)
    (folder / "colon:name.json").write_bytes(lines("x", 2))
    (folder / "dangling.json").symlink_to(tmp_path / "nowhere.json")
    os.mkfifo(folder / "fifo.json")
    (folder / "loop").symlink_to(folder)
    (folder / "linked").symlink_to(folder / "sub")  # a link to a folder is followed: its file is read twice
    lake = str(tmp_path / "lake")
    result = ingest_events.ingest(spark, str(tmp_path / "landing"), lake, DAY, DAY, PipelineConfig())
    refused = {"corrupt.json.bz2", "cut.json.bz2", "random.deflate", "random.json.lz4", "colon:name.json",
               "dangling.json", "fifo.json", "loop"}
    quarantine = delta_io.read_table(spark, QUARANTINE.path(lake)).collect()
    assert {(q.source_file.rsplit("/", 1)[1].replace("%3A", ":"), q.reason, q.raw) for q in quarantine} == {
        (name, "unreadable_file", None) for name in refused}
    assert result.accepted == 3 + 5 + 5 and result.duplicates == 5  # sub/ and linked/ hold the same events
    assert result.reconciles


def test_lines_are_numbered_within_each_file_whatever_the_tasks_that_read_it(spark, tmp_path):
    """Files read in several tasks (small splits), small files packed into one task, blank lines
    and gzip: each record's line is its place among its file's non-blank lines."""
    folder = tmp_path / "landing" / DAY.isoformat()
    (folder / "sub").mkdir(parents=True)
    expected = {}
    for name, lines in {"a.json": 300, "b.json": 7, "sub/c.json": 1, "d.json.gz": 40}.items():
        text = "".join(f'{{"user_id": "u{i}", "pad": "{"x" * (i % 50)}"}}\n' + ("\n" if i % 9 == 0 else "")
                       for i in range(lines))
        path = folder / name
        path.write_bytes(gzip.compress(text.encode()) if name.endswith(".gz") else text.encode())
        expected.update({(path.name, json.loads(line)["user_id"]): n
                         for n, line in enumerate((t for t in text.splitlines() if t.strip()), start=1)})
    saved = spark.conf.get("spark.sql.files.maxPartitionBytes")
    spark.conf.set("spark.sql.files.maxPartitionBytes", "2048")  # a.json is read in several tasks
    try:
        positioned = (ingest_events.read_landing(spark, str(tmp_path / "landing"), DAY, DAY)
                      .transform(parse.with_file_positions).persist())
        assert positioned.select("line.task").distinct().count() > 2
        numbered = {(r["source_file"].rsplit("/", 1)[-1], json.loads(r["raw"])["user_id"]): r["line"]
                    for r in parse.with_line_numbers(positioned).collect()}
        positioned.unpersist()
    finally:
        spark.conf.set("spark.sql.files.maxPartitionBytes", saved)
    assert numbered == expected


PART_CUTS = (9, 14)  # a day in three parts: [00:00, 09:00), [09:00, 14:00), [14:00, 24:00)


def test_a_day_ingested_in_parts_in_any_order_writes_what_its_whole_run_writes(spark, tmp_path, monkeypatch):
    """Hour folders (and a 13:45 one), files in the day's own folder and in folders that are no
    part (``24``, ``7``), copies of one event in several parts with other payloads: the parts run
    in order, or out of it and one again, leave the rows of one run of the whole day, and each
    part's counts reconcile. The later parts written are found from the Delta log's statistics,
    and, out of order, from the data (as where a file has no statistics)."""
    first = DAY - timedelta(days=2)
    landing = random_landing(tmp_path / "landing", 45, first, 3, events_per_day=60, max_delay_days=2,
                             part_hours=(0, 3, 9, 13, 17, 23))
    day_folder = tmp_path / "landing" / DAY.isoformat()
    for name, hour in [("24", 4), ("7", 5), ("1345", 6)]:
        (day_folder / name).mkdir()
        (day_folder / name / "x.json").write_text("\n".join(
            json.dumps({"user_id": "u9", "timestamp": f"{DAY}T0{hour}:00:00Z", "event_id": f"{name}-{i}",
                        "value": i}) for i in range(3)) + "\n" + json.dumps(
            {"user_id": "u9", "timestamp": f"{DAY}T01:00:00Z", "event_id": "e1", "value": hour}) + "\n")
    (day_folder / "_SUCCESS").write_text("")
    # the day's end, though its name sorts before every hour folder's: an hour's copy wins over it
    at_13 = next(e for e in landing.events if e.arrival_part and e.arrival_part.hour == 13 and e.arrival_date == DAY)
    (day_folder / "0-early.json").write_text(json.dumps(
        {"user_id": at_13.key, "timestamp": f"{DAY}T05:00:00Z", "event_id": at_13.event_id, "value": 99}) + "\n")
    assert len({e.arrival_part for e in landing.events if e.arrival_date == DAY}) == 7  # six hours and the day's end

    def tables(lake):
        return {t.name: sorted(tuple(r) for r in delta_io.read_table(spark, t.path(lake)).collect())
                for t in (EVENTS, QUARANTINE, LATE_EVENTS)}

    hourly = PipelineConfig(partition=3600)  # each run's counts per part too (``by_part``)
    whole = ingest_events.ingest(spark, str(tmp_path / "landing"), str(tmp_path / "whole"), DAY, DAY, hourly)
    midnight = datetime(DAY.year, DAY.month, DAY.day, tzinfo=UTC)
    bounds = [midnight + timedelta(hours=h) for h in (0, *PART_CUTS, 24)]
    parts = [RunInterval(a, b) for a, b in zip(bounds, bounds[1:])]
    counts = ("input_records", "accepted", "quarantined", "duplicates", "late")
    for order in [(0, 1, 2), (1, 2, 0, 1)]:
        lake, runs = str(tmp_path / "parts" / "".join(map(str, order))), []
        if order[0]:  # no file with statistics
            monkeypatch.setattr(delta_io, "file_ranges", lambda *args, **kwargs: [None])
        for i in order:
            runs.append(ingest_events.ingest(spark, str(tmp_path / "landing"), lake, DAY, DAY, hourly,
                                             interval=parts[i]))
            assert runs[-1].reconciles and runs[-1].input_records, (order, i, runs[-1])
        assert tables(lake) == tables(str(tmp_path / "whole")), order
        # in order, the parts count the day once; out of order, the first part, run after the
        # others, redoes them all, and counts the whole day
        counted = runs if list(order) == sorted(order) else [runs[order.index(0)]]
        assert [sum(getattr(r, c) for r in counted) for c in counts] == [getattr(whole, c) for c in counts], order
        # and so do their parts' counts: each part's copies dropped are its own
        assert {p: r for run in counted for p, r in run.by_part.items()} == whole.by_part, order
    # a part's counts add up to its day's, the duplicates observed at the copies kept included,
    # and its rows kept are the tables' rows of that part
    assert len(whole.by_part) == 8  # six hours, 13:45 and the day's end
    assert [sum(getattr(r, c) for r in whole.by_part.values()) for c in counts] == [getattr(whole, c) for c in counts]
    kept = Counter(r.arrival_part.replace(tzinfo=UTC) for t in (EVENTS, LATE_EVENTS)
                   for r in delta_io.read_table(spark, t.path(str(tmp_path / "whole"))).collect())
    assert {p: r.accepted + r.late for (_, p), r in whole.by_part.items() if r.accepted + r.late} == dict(kept)
    rows = delta_io.read_table(spark, EVENTS.path(str(tmp_path / "whole"))).collect()
    assert [r.source_file.split("/")[-2] for r in rows if r.event_id == at_13.event_id] == ["13"]
    assert {r.arrival_part.hour for r in rows if "/1345/" in r.source_file} == {13}
    assert {r.arrival_part.date() for r in rows if "/24/" in r.source_file or "/7/" in r.source_file} \
        == {DAY + timedelta(days=1)}
