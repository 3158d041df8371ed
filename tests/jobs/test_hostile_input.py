"""Issue 30: nothing a user feeds panes stops a day or silently changes its numbers.

Each test feeds the issue's exact input and checks where every record ends: ``events``,
``quarantine`` (with its reason), or counted as a duplicate, and that the counts reconcile.
"""

from __future__ import annotations

from datetime import date

from jobs import delta_io, ingest_events
from jobs.tables import EVENTS, QUARANTINE
from windowing_core.config import PipelineConfig

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
