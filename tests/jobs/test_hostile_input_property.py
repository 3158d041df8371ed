"""Property: landing folders mixing good lines with random bad ones of every kind the hostile
probes found (records, files, names, codecs, links). Every good line reaches its window exactly
(the oracle's change points), and every line and file is accounted for: accepted, or quarantined
with the reason of its kind.

Hypothesis draws few, small cases: each runs ingest, minute partials and sliding windows.
"""

from __future__ import annotations

import bz2
import gzip
import json
import os
import tempfile
import zlib
from collections import Counter
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobs import ingest_events, minute_partials, sliding_windows
from jobs.storage import delta_io
from jobs.tables import QUARANTINE, WINDOW_CHANGES
from windowing_core import reference
from windowing_core.config import PipelineConfig
from windowing_core.reference import Event

DAY = date(2025, 1, 27)
MIDNIGHT = datetime(DAY.year, DAY.month, DAY.day, tzinfo=timezone.utc)
KEYS = ("k1", "  k1  ", "K1", "k2")  # a padded and a differently cased key stay keys of their own


def _stamp(second: int) -> str:
    return (MIDNIGHT + timedelta(seconds=second)).strftime("%Y-%m-%dT%H:%M:%SZ")


# Each bad kind: (its reason, a line from the case's serial number n). The serial makes lines distinct.
BAD_KINDS = {
    "huge_value": ("value_out_of_range", lambda n: f'{{"user_id":"k1","timestamp":"{_stamp(n)}","value":1e20,"n":{n}}}'),
    "tiny_fraction": ("value_not_integer",
                      lambda n: f'{{"user_id":"k1","timestamp":"{_stamp(n)}","value":1.0000000001,"n":{n}}}'),
    "tiny_exponent": ("value_not_integer", lambda n: f'{{"user_id":"k1","timestamp":"{_stamp(n)}","value":1e-10,"n":{n}}}'),
    "number_key": ("key_not_string", lambda n: f'{{"user_id":{n},"timestamp":"{_stamp(n)}"}}'),
    "boolean_key": ("key_not_string", lambda n: f'{{"user_id":true,"timestamp":"{_stamp(n)}","n":{n}}}'),
    "object_key": ("key_not_string", lambda n: f'{{"user_id":{{"id":"k1"}},"timestamp":"{_stamp(n)}","n":{n}}}'),
    "array_key": ("key_not_string", lambda n: f'{{"user_id":["k1"],"timestamp":"{_stamp(n)}","n":{n}}}'),
    "two_objects": ("malformed_json", lambda n: f'{{"user_id":"k1","timestamp":"{_stamp(n)}"}} {{"n":{n}}}'),
    "trailing_text": ("malformed_json", lambda n: f'{{"user_id":"k1","timestamp":"{_stamp(n)}","n":{n}}} trailing'),
    "missing_key": ("missing_key", lambda n: f'{{"user_id":"","timestamp":"{_stamp(n)}","n":{n}}}'),
    "blank_key": ("missing_key", lambda n: f'{{"user_id":"\\t\\u00a0","timestamp":"{_stamp(n)}","n":{n}}}'),
    "infinite_value": ("value_out_of_range", lambda n: f'{{"user_id":"k1","timestamp":"{_stamp(n)}","value":1e400,"n":{n}}}'),
}


def _random_bytes(path: Path, n: int) -> None:
    path.write_bytes(bytes((n * 7 + i * 13) % 256 for i in range(300)))


# Each bad file: how to make it in a folder (n makes its name distinct). Each is one
# unreadable_file record, and the good files beside it are read.
BAD_FILES = {
    "corrupt_bz2": lambda folder, n: _random_bytes(folder / f"corrupt{n}.json.bz2", n),
    "cut_bz2": lambda folder, n: (folder / f"cut{n}.json.bz2").write_bytes(
        bz2.compress("".join(f'{{"user_id":"k{i}","n":{i}}}\n' for i in range(3000)).encode())[:120]),
    "random_deflate": lambda folder, n: _random_bytes(folder / f"random{n}.deflate", n),
    "random_lz4": lambda folder, n: _random_bytes(folder / f"random{n}.json.lz4", n),
    "colon_name": lambda folder, n: (folder / f"colon:{n}.json").write_text(f'{{"user_id":"k1","n":{n}}}\n'),
    "dangling_link": lambda folder, n: (folder / f"dangling{n}.json").symlink_to(folder / "nowhere.json"),
    "fifo": lambda folder, n: os.mkfifo(folder / f"fifo{n}.json"),
    "loop_link": lambda folder, n: (folder / f"loop{n}").symlink_to(folder),
}
CODECS = {"": lambda text: text.encode(), ".gz": lambda text: gzip.compress(text.encode()),
          ".bz2": lambda text: bz2.compress(text.encode()), ".deflate": lambda text: zlib.compress(text.encode())}

good_line = st.tuples(st.sampled_from(KEYS), st.integers(0, 86399), st.integers(-5, 2**62),
                      st.booleans(), st.booleans())  # key, second, value, empty event_id, in a subfolder
bad_line = st.tuples(st.sampled_from(sorted(BAD_KINDS)), st.booleans())  # kind, in a subfolder
# Hypothesis tries small cases first: the lower bounds make even the first a mix of every part.
case = st.tuples(st.lists(good_line, min_size=3, max_size=12), st.lists(bad_line, min_size=4, max_size=10),
                 st.integers(1, 3),  # lines of a hidden file
                 st.lists(st.sampled_from(sorted(BAD_FILES)), min_size=2, max_size=5, unique=True),
                 st.sampled_from(sorted(CODECS)))  # how the subfolder's good file is compressed


@settings(max_examples=2, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(case)
def test_every_good_line_reaches_its_window_and_every_line_is_accounted_for(spark, drawn):
    goods, bads, hidden_lines, bad_files, codec = drawn
    config = PipelineConfig()
    with tempfile.TemporaryDirectory() as work:
        folder = Path(work) / "landing" / DAY.isoformat()
        (folder / "sub").mkdir(parents=True)
        files: dict[Path, list[str]] = {folder / "a.json": [], folder / "sub" / "b.json": []}
        events, n = [], 0
        for key, second, value, empty_id, nested in goods:
            n += 1
            record = {"user_id": key, "timestamp": _stamp(second), "value": value, "event_id": "" if empty_id else f"g{n}"}
            files[folder / "sub" / "b.json" if nested else folder / "a.json"].append(json.dumps(record))
            events.append(Event(key, MIDNIGHT + timedelta(seconds=second), value, f"g{n}", DAY))
        expected_reasons = Counter()
        for kind, nested in bads:
            n += 1
            reason, line = BAD_KINDS[kind]
            files[folder / "sub" / "b.json" if nested else folder / "a.json"].append(line(n))
            expected_reasons[reason] += 1
        if hidden_lines:  # good lines, but in a file Spark never reads: one hidden_file record
            files[folder / "_in_flight.json"] = [json.dumps({"user_id": "k9", "timestamp": _stamp(i)})
                                                 for i in range(hidden_lines)]
            expected_reasons["hidden_file"] += 1
        for i, kind in enumerate(bad_files):  # in the day's folder or its subfolder
            BAD_FILES[kind](folder / "sub" if i % 2 else folder, i)
            expected_reasons["unreadable_file"] += 1
        for path, lines in files.items():
            text = "".join(line + "\n" for line in lines)
            if path.parent.name == "sub":
                path.with_name(path.name + codec).write_bytes(CODECS[codec](text))
            else:
                path.write_text(text)
        lake = str(Path(work) / "lake")

        result = ingest_events.ingest(spark, str(Path(work) / "landing"), lake, DAY, DAY, config)
        minute_partials.run(spark, lake, DAY, DAY, config)
        sliding_windows.run(spark, lake, DAY, DAY, config)

        visible = len(goods) + len(bads)
        assert result.input_records == visible + (1 if hidden_lines else 0) + len(bad_files)
        assert (result.accepted, result.duplicates, result.late) == (len(goods), 0, 0)
        assert result.quarantined_by_reason == dict(expected_reasons)
        assert result.reconciles
        quarantined = Counter(r.reason for r in delta_io.read_table(spark, QUARANTINE.path(lake)).collect())
        assert quarantined == expected_reasons

        changes = sorted((r.key, r.window, r.window_end.replace(tzinfo=timezone.utc), (r.event_count, r.sum))
                         for r in delta_io.read_table(spark, WINDOW_CHANGES.path(lake)).collect())
        oracle = sorted((c.key, c.window, c.window_end, c.values)
                        for c in reference.window_changes(events, config, DAY, DAY))
        assert changes == oracle
