"""Each table's columns as Dagster's column schema, so the UI's asset page lists them with their
types and meaning. They come from the one declaration the jobs write and the checks hold the
tables to (``jobs.tables.declared_columns``), so the catalog cannot drift from the data."""

import dagster as dg

from jobs.tables import Table, column_notes, declared_columns
from windowing_core.config import PipelineConfig


def column_schema(table: Table, config: PipelineConfig) -> dict[str, dg.TableSchema]:
    """Definition metadata for ``table``'s asset spec."""
    notes = column_notes(table.name, config)
    columns = [dg.TableColumn(name, ddl, description=notes[name]) for name, ddl in declared_columns(table.name, config)]
    return {"dagster/column_schema": dg.TableSchema(columns=columns)}
