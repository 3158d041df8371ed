"""A job killed between the commits of its tables never lets the next run go on from them.

The windows job commits window_changes, then window_snapshot. Killed in between, the two
tables are from different runs: the next day would continue from a stale snapshot and write
wrong change points with exit 0 (issue 30, item 6). Every commit of one run carries the same
write id and the run's days; a next run refuses, in one line, unless its days cover the
unfinished run's, which rewrites every table of them.
"""

from __future__ import annotations

from collections import Counter
from datetime import date, timedelta

import pytest

from jobs import delta_io, ingest_events, minute_partials, sliding_windows
from jobs.tables import WINDOW_CHANGES, WINDOW_SNAPSHOT
from tests.landing import ensure_days, random_landing
from windowing_core.config import PipelineConfig

FIRST = date(2025, 1, 28)
D2, D3 = FIRST + timedelta(days=1), FIRST + timedelta(days=2)


class Killed(BaseException):
    """A kill: no ``except Exception`` in the job catches it."""


def window_tables(spark, lakehouse: str) -> dict[str, Counter]:
    return {t.name: Counter(tuple(r) for r in delta_io.read_table(spark, t.path(lakehouse)).collect())
            for t in (WINDOW_CHANGES, WINDOW_SNAPSHOT)}


def test_a_run_killed_between_its_commits_is_finished_before_any_other_day(spark, tmp_path, monkeypatch):
    landing, config = tmp_path / "landing", PipelineConfig()
    random_landing(landing, 5, FIRST, 3, events_per_day=30, max_delay_days=0)
    ensure_days(landing, FIRST, D3)
    lakehouse = str(tmp_path / "lakehouse")
    ingest_events.ingest(spark, str(landing), lakehouse, FIRST, D3, config)
    minute_partials.run(spark, lakehouse, FIRST, D3, config)
    sliding_windows.run(spark, lakehouse, FIRST, FIRST, config)

    write = delta_io._write
    def killed_after_the_first_commit(df, target, meta):
        if target.name == WINDOW_SNAPSHOT.name:
            raise Killed()
        return write(df, target, meta)
    monkeypatch.setattr(delta_io, "_write", killed_after_the_first_commit)
    with pytest.raises(Killed):
        sliding_windows.run(spark, lakehouse, D2, D2, config)
    monkeypatch.setattr(delta_io, "_write", write)

    with pytest.raises(delta_io.IncompleteWriteError, match=r"^window_changes holds a write whose window_snapshot "
                       r"commit never landed .*: run days 2025-01-29 \.\. 2025-01-29 again"):
        sliding_windows.run(spark, lakehouse, D3, D3, config)
    sliding_windows.run(spark, lakehouse, D2, D3, config)  # covers the unfinished days: goes on

    clean = str(tmp_path / "clean")
    ingest_events.ingest(spark, str(landing), clean, FIRST, D3, config)
    minute_partials.run(spark, clean, FIRST, D3, config)
    for day in (FIRST, D2, D3):
        sliding_windows.run(spark, clean, day, day, config)
    assert window_tables(spark, lakehouse) == window_tables(spark, clean)
