"""``tables_written_whole``: the tables one job writes together hold one run's rows, for the
tables whose jobs commit several (ingest, windows)."""

from __future__ import annotations

from datetime import date

from expectations.check import Outcome
from expectations.inputs import Inputs
from jobs.storage import commits, delta_io
from jobs.tables import Table, written_together


def tables_written_whole(inputs: Inputs, table: Table) -> dict[date, Outcome]:
    """Per day: whether the tables ``table``'s job writes together hold one run's rows of it
    (``commits.unfinished_write``); the jobs refuse to go on from torn tables, this says so in
    Dagster, for the days the stopped run wrote."""
    together = written_together(table, inputs.config)
    paths = [t.path(inputs.lakehouse_root) for t in together]
    torn = commits.unfinished_write(paths)
    looked_at = {"tables": ", ".join(t.name for t in together),
                 "table_versions": ", ".join(f"{t.name} {delta_io.table_version(p)}" if delta_io.table_exists(p)
                                             else f"{t.name} none" for t, p in zip(together, paths))}
    return {d: Outcome(False, {"problem": str(torn), "reached": list(torn.reached), "missed": list(torn.missed),
                               **looked_at})
            if torn is not None and torn.holds(d) else Outcome(True, looked_at) for d in inputs.days}
