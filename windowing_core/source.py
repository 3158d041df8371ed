"""Where the events come from: landing folders of JSON lines (no ``source:``) or a table.

    source:
      table: db.clicks        # or path: /data/clicks, with format: delta | parquet
      time: ts                # the event-time column; default: timestamp
      arrival: loaded_at      # when each row arrived, its arrival day; default: its event day
      id: click_id            # the event-id column; default: none, an id made from the row
      name: clicks            # its ingest's name in a configuration of groups (default: the table's)

The key and the declared fields are the columns of their names. Each row is read as a landing
line would be, with the same checks and reasons (``jobs.table_source``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from windowing_core.named_table import COLUMN, check_absolute, check_column, check_location
from windowing_core.window_spec import refuse_unknown

SOURCE_FIELDS = {"path", "table", "format", "time", "arrival", "id", "name"}


@dataclass(frozen=True)
class SourceSpec:
    """A table of events and which of its columns are the event time, the arrival and the id."""

    path: str | None = None
    table: str | None = None
    format: str | None = None
    time: str = "timestamp"
    arrival: str | None = None
    id: str | None = None
    name: str | None = None

    def __post_init__(self) -> None:
        check_location("source", self.path, self.table, self.format)
        named = [(label, getattr(self, label)) for label in ("time", "arrival", "id")
                 if getattr(self, label) is not None]
        for label, column in named:
            check_column(f"source.{label}", column)
        if self.name is not None:
            check_column("source.name", self.name)
        columns = [c for _, c in named]
        if len(set(columns)) < len(columns):
            raise ValueError(f"source: time, arrival and id must be different columns, got {', '.join(columns)}")

    @property
    def location(self) -> str:
        """The path or the table: what quarantined rows and reports name as their source."""
        return self.path if self.path is not None else self.table

    @property
    def ingest_name(self) -> str:
        """What names its shared ingest in a configuration of groups (the folder of its tables
        and their assets' key prefix): ``name``, else the table's own last name."""
        if self.name is not None:
            return self.name
        last = self.table.rsplit(".", 1)[-1] if self.table else self.path.rstrip("/").rsplit("/", 1)[-1]
        name = re.sub(r"[^A-Za-z0-9_]", "_", last)
        return name if COLUMN.fullmatch(name) else f"source_{name}"

    def columns(self) -> list[str]:
        """The columns this source names besides the key and the fields."""
        return [c for c in (self.time, self.arrival, self.id) if c is not None]

    @classmethod
    def from_dict(cls, raw: Any) -> SourceSpec:
        if not isinstance(raw, dict):
            raise ValueError("source: expected a mapping with a table (or a path) and its time column")
        refuse_unknown(raw, SOURCE_FIELDS, "source")
        check_absolute("source", raw.get("path"))
        return cls(path=raw.get("path"), table=raw.get("table"), format=raw.get("format"),
                   time=raw.get("time", "timestamp"), arrival=raw.get("arrival"), id=raw.get("id"),
                   name=raw.get("name"))
