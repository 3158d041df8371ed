"""Where the events come from: landing folders of JSON lines (no ``source:``, or other ones:
``source: {landing: /data/orders}``) or a table.

    source:
      table: db.clicks        # or path: /data/clicks, with format: delta | parquet
      time: ts                # the event-time column; default: timestamp
      arrival: loaded_at      # when each row arrived, its arrival day; default: its event day
      id: click_id            # the event-id column; default: none, an id made from the row
      name: clicks            # its ingest's name in a configuration of groups (default: the table's)

The key and the declared fields are the columns of their names. Each row is read as a landing
line would be, with the same checks and reasons (``jobs.ingest.table_source``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from windowing_core.named_table import COLUMN, check_absolute, check_column, check_location
from windowing_core.window_spec import refuse_unknown

SOURCE_FIELDS = {"path", "table", "format", "time", "arrival", "id", "name", "landing"}
LANDING_FIELDS = {"landing", "name"}


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
    # Landing folders of their own (``<landing>/<arrival day>/``), read as the default ones are;
    # None: a table (``path`` or ``table``).
    landing: str | None = None

    def __post_init__(self) -> None:
        if self.landing is not None:
            if not isinstance(self.landing, str) or not self.landing.strip():
                raise ValueError(f"source.landing must be a folder's path, got {self.landing!r}")
            if self.path is not None or self.table is not None or self.format is not None:
                raise ValueError("source: give landing, or a path or a table, one of them")
            if self.name is not None:
                check_column("source.name", self.name)
            return
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
    def is_table(self) -> bool:
        """A table of events, not landing folders."""
        return self.landing is None

    @property
    def location(self) -> str:
        """The landing folder, the path or the table: what quarantined rows and reports name as
        their source."""
        return self.landing or self.path or self.table

    @property
    def ingest_name(self) -> str:
        """What names its shared ingest in a configuration of groups (the folder of its tables
        and their assets' key prefix): ``name``, else the table's own last name."""
        if self.name is not None:
            return self.name
        last = (self.table.rsplit(".", 1)[-1] if self.table else
                (self.path or self.landing).rstrip("/").rsplit("/", 1)[-1])
        name = re.sub(r"[^A-Za-z0-9_]", "_", last)
        return name if COLUMN.fullmatch(name) else f"source_{name}"

    def columns(self) -> list[str]:
        """The columns this source names besides the key and the fields (none for landing folders)."""
        return [c for c in (self.time, self.arrival, self.id) if c is not None] if self.is_table else []

    @classmethod
    def from_dict(cls, raw: Any) -> SourceSpec:
        if not isinstance(raw, dict):
            raise ValueError("source: expected a mapping with a table (or a path) and its time column")
        refuse_unknown(raw, SOURCE_FIELDS, "source")
        if "landing" in raw:
            others = sorted(set(raw) - LANDING_FIELDS)
            if others:
                raise ValueError(f"source: landing folders take no {', '.join(others)} (each record says its "
                                 "own time, arrival and id)")
            check_absolute("source.landing", raw["landing"], field="landing")
            return cls(landing=raw["landing"], name=raw.get("name"))
        check_absolute("source", raw.get("path"))
        return cls(path=raw.get("path"), table=raw.get("table"), format=raw.get("format"),
                   time=raw.get("time", "timestamp"), arrival=raw.get("arrival"), id=raw.get("id"),
                   name=raw.get("name"))
