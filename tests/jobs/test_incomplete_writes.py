"""A job killed between the commits of its tables never lets the next run go on from them.

The windows job commits window_changes, then window_snapshot. Killed in between, the two
tables are from different runs: the next day would continue from a stale snapshot and write
wrong change points with exit 0 (issue 30, item 6). Every commit of one run carries the same
write id and the run's days; a next run refuses, in one line, unless its days cover the
unfinished run's, which rewrites every table of them.
"""

from __future__ import annotations

from collections import Counter
from datetime import date, datetime, timedelta

import pytest

from expectations.inputs import Inputs
from expectations.written_whole import tables_written_whole
from jobs import errors, ingest_events, minute_partials, sliding_windows
from jobs.storage import delta_io, delta_write
from jobs.tables import EVENTS, INTERVAL_STATE, QUARANTINE, WINDOW_CHANGES, WINDOW_SNAPSHOT
from tests.landing import ensure_days, random_landing
from windowing_core.config import PipelineConfig
from windowing_core.run_interval import RunInterval

FIRST = date(2025, 1, 28)
D2, D3 = FIRST + timedelta(days=1), FIRST + timedelta(days=2)


class Killed(BaseException):
    """A kill: no ``except Exception`` in the job catches it."""


def window_tables(spark, lakehouse: str) -> dict[str, Counter]:
    return {t.name: Counter(tuple(r) for r in delta_io.read_table(spark, t.path(lakehouse)).collect())
            for t in (WINDOW_CHANGES, WINDOW_SNAPSHOT)}


def hour_of_changes(spark, lakehouse: str, interval: RunInterval) -> Counter:
    changes = delta_io.read_table(spark, WINDOW_CHANGES.path(lakehouse))
    return Counter(tuple(r) for r in changes.where((changes.window_end >= interval.start)
                                                   & (changes.window_end < interval.until)).collect())


def killing_the_write_to(table, monkeypatch):
    """``delta_write._write`` that dies at ``table``'s commit, after the commits before it."""
    write = delta_write._write

    def killed_at_the_table(df, target, meta, **how):
        if target.name == table.name:
            raise Killed()
        return write(df, target, meta, **how)
    monkeypatch.setattr(delta_write, "_write", killed_at_the_table)
    return lambda: monkeypatch.setattr(delta_write, "_write", write)


def written_whole(spark, landing, lakehouse, table, config, days) -> dict:
    inputs = Inputs(spark, str(landing), lakehouse, config, days, {"tables_written_whole"})
    return {d: outcome.passed for d, outcome in tables_written_whole(inputs, table).items()}


def test_a_run_killed_between_its_commits_is_finished_before_any_other_day(spark, tmp_path, monkeypatch):
    landing, config = tmp_path / "landing", PipelineConfig()
    random_landing(landing, 5, FIRST, 3, events_per_day=30, max_delay_days=0)
    ensure_days(landing, FIRST, D3)
    lakehouse = str(tmp_path / "lakehouse")
    ingest_events.ingest(spark, str(landing), lakehouse, FIRST, D3, config)
    minute_partials.run(spark, lakehouse, FIRST, D3, config)
    sliding_windows.run(spark, lakehouse, FIRST, FIRST, config)

    restore = killing_the_write_to(WINDOW_SNAPSHOT, monkeypatch)
    with pytest.raises(Killed):
        sliding_windows.run(spark, lakehouse, D2, D2, config)
    restore()
    # the blocking check says so in Dagster, for the day the stopped run wrote
    assert written_whole(spark, landing, lakehouse, WINDOW_CHANGES, config, [FIRST, D2, D3]) == {
        FIRST: True, D2: False, D3: True}

    with pytest.raises(errors.IncompleteWriteError, match=r"^window_changes holds a write whose window_snapshot "
                       r"commit never landed .*: run days 2025-01-29 \.\. 2025-01-29 again"):
        sliding_windows.run(spark, lakehouse, D3, D3, config)
    sliding_windows.run(spark, lakehouse, D2, D3, config)  # covers the unfinished days: goes on
    assert all(written_whole(spark, landing, lakehouse, WINDOW_CHANGES, config, [FIRST, D2, D3]).values())

    # A run below a day commits the change points and interval_state, and the snapshot only in
    # the part ending the day; each write names its tables, so a range run between two parts
    # leaves nothing torn, and a part killed before its state commits is torn like a day.
    morning, noon = (RunInterval(datetime(2025, 1, 30, h), datetime(2025, 1, 30, h + 1)) for h in (9, 12))
    versions = {t.name: delta_io.table_version(t.path(lakehouse)) for t in (WINDOW_CHANGES, WINDOW_SNAPSHOT)}
    sliding_windows.run(spark, lakehouse, D3, D3, config, interval=morning)
    assert delta_io.table_version(WINDOW_SNAPSHOT.path(lakehouse)) == versions[WINDOW_SNAPSHOT.name]
    assert delta_io.table_version(WINDOW_CHANGES.path(lakehouse)) == versions[WINDOW_CHANGES.name] + 1
    # the next hour continues from the morning's state (found in the log's statistics: one window)
    ten = RunInterval(datetime(2025, 1, 30, 10), datetime(2025, 1, 30, 11))
    assert set(sliding_windows.run(spark, lakehouse, D3, D3, config, interval=ten)["baseline"].values()) == {"carried"}
    carried_hour = hour_of_changes(spark, lakehouse, ten)
    sliding_windows.run(spark, lakehouse, D2, D3, config)
    restore = killing_the_write_to(INTERVAL_STATE, monkeypatch)
    with pytest.raises(Killed):
        sliding_windows.run(spark, lakehouse, D3, D3, config, interval=noon)
    restore()
    assert written_whole(spark, landing, lakehouse, WINDOW_CHANGES, config, [D2, D3]) == {D2: True, D3: False}
    with pytest.raises(errors.IncompleteWriteError, match=r"^window_changes holds a write whose interval_state "
                       r"commit never landed .*: run 2025-01-30T12:00:00 \.\. 2025-01-30T13:00:00 \(or its day\)"):
        sliding_windows.run(spark, lakehouse, D3, D3, config, interval=morning)
    sliding_windows.run(spark, lakehouse, D3, D3, config, interval=noon)  # its own interval: goes on
    assert all(written_whole(spark, landing, lakehouse, WINDOW_CHANGES, config, [D2, D3]).values())
    sliding_windows.run(spark, lakehouse, D2, D3, config)  # and empties the parts' state of its days
    assert delta_io.read_table(spark, INTERVAL_STATE.path(lakehouse)).isEmpty()

    clean = str(tmp_path / "clean")
    ingest_events.ingest(spark, str(landing), clean, FIRST, D3, config)
    minute_partials.run(spark, clean, FIRST, D3, config)
    for day in (FIRST, D2, D3):
        sliding_windows.run(spark, clean, day, day, config)
    assert window_tables(spark, lakehouse) == window_tables(spark, clean)
    assert carried_hour and carried_hour == hour_of_changes(spark, clean, ten)


def test_an_ingest_killed_between_events_and_quarantine_fails_the_check_until_it_is_run_again(
        spark, tmp_path, monkeypatch):
    landing, config = tmp_path / "landing", PipelineConfig()
    random_landing(landing, 5, FIRST, 2, events_per_day=30, max_delay_days=0)
    ensure_days(landing, FIRST, D2)
    lakehouse = str(tmp_path / "lakehouse")
    ingest_events.ingest(spark, str(landing), lakehouse, FIRST, D2, config)
    assert all(written_whole(spark, landing, lakehouse, EVENTS, config, [FIRST, D2]).values())

    restore = killing_the_write_to(QUARANTINE, monkeypatch)
    with pytest.raises(Killed):
        ingest_events.ingest(spark, str(landing), lakehouse, D2, D2, config)
    restore()
    assert written_whole(spark, landing, lakehouse, EVENTS, config, [FIRST, D2]) == {FIRST: True, D2: False}
    with pytest.raises(errors.IncompleteWriteError, match=r"^events holds a write whose quarantine commit"):
        ingest_events.ingest(spark, str(landing), lakehouse, FIRST, FIRST, config)
    ingest_events.ingest(spark, str(landing), lakehouse, D2, D2, config)
    assert all(written_whole(spark, landing, lakehouse, EVENTS, config, [FIRST, D2]).values())
