"""A day's ``window_snapshot`` as the online store takes it: the served windows, the one instant
each window's rows are of, the rows read with delta-rs (no Spark), keys as the store holds them,
and the rows as PostgreSQL's COPY reads them (nested values as JSON, bytes as bytea's hex)."""

from __future__ import annotations

import io
import json
import math
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from jobs.errors import MissingInputError, OnlineStoreError
from jobs.storage import commits, delta_io
from jobs.tables import WINDOW_SNAPSHOT
from windowing_core.config import PipelineConfig
from windowing_core.window_spec import WindowSpec, from_epoch_seconds, to_epoch_seconds

DAY = timedelta(days=1)


def served_windows(config: PipelineConfig) -> tuple[WindowSpec, ...]:
    """The windows the store holds: every one with a snapshot (sliding, tumbling, cumulating)."""
    return config.windows


def day_as_of(spec: WindowSpec, day: date) -> datetime:
    """The instant ``window_snapshot`` of ``day`` is of for this window: the day's last window end."""
    midnight = to_epoch_seconds(datetime(day.year, day.month, day.day, tzinfo=timezone.utc) + DAY)
    return from_epoch_seconds(spec.end_at_or_after(midnight) - spec.every)


@dataclass
class DaySnapshot:
    """A day's ``window_snapshot`` of the served windows: each row's key, window and values, and
    per window the one window ``[window_start, as_of)`` every row of it is of (the day's last
    window end: ``ends``). The times are per window, not per row, so they are not copied per row."""

    day: date
    rows: pa.Table
    ends: dict[str, tuple[datetime, datetime]]

    def of(self, windows: list[WindowSpec]) -> DaySnapshot:
        names = pa.array([w.name for w in windows], pa.string())
        return DaySnapshot(self.day, self.rows.filter(pc.is_in(self.rows["window"], value_set=names)),
                           {w.name: self.ends[w.name] for w in windows})


def value_columns(config: PipelineConfig) -> list[str]:
    """The columns copied per row: the key, the window, a composite key's fields and the values."""
    return ["key", "window", *config.key_fields, "event_count", *[a.name for a in config.aggregations]]


def stored_key(config: PipelineConfig, text: str) -> str:
    """A key as the store holds it: itself, or for a composite key its JSON array, as ingest
    writes it (``["u00042","DE"]``, whatever spacing it is given in); a one-line ``ValueError``
    for anything else."""
    if not config.key_fields:
        return text
    fields = ", ".join(config.key_fields)
    try:
        values = json.loads(text)
    except ValueError:
        values = None
    if not isinstance(values, list) or len(values) != len(config.key_fields) or not all(
            isinstance(v, str) for v in values):
        example = json.dumps([f"<{f}>" for f in config.key_fields], separators=(",", ":"))
        raise ValueError(f"the key is {fields}: give it as a JSON array of {len(config.key_fields)} strings "
                         f"({example}), got {text!r}")
    return json.dumps(values, separators=(",", ":"), ensure_ascii=False)


def read_snapshot(lakehouse: str, day: date, config: PipelineConfig) -> DaySnapshot:
    """``window_snapshot`` of ``day``; a window with more than one ``(window_start, as_of)`` in
    it is refused (panes writes one per window and day)."""
    path = WINDOW_SNAPSHOT.path(lakehouse)
    rows = delta_io.read_arrow(path, partition_filters=[("date", "=", day.isoformat())],
                               columns=[*value_columns(config), "window_start", "as_of"])
    if rows.num_rows == 0 and not commits.wrote_day(path, day):
        # Loading a day never materialised would empty the store and mark it as of that day.
        raise MissingInputError(f"window_snapshot holds no rows of {day} and no run wrote {day}: materialise the "
                                f"windows of {day} first")
    found = {r["window"]: r for r in rows.group_by("window").aggregate(
        [(c, f) for c in ("window_start", "as_of") for f in ("min", "max")]).to_pylist()}
    ends = {}
    for w in served_windows(config):
        if w.name not in found:  # no key holds events: the day's end all the same
            as_of = day_as_of(w, day)
            ends[w.name] = (from_epoch_seconds(w.window_start(to_epoch_seconds(as_of))), as_of)
            continue
        r = found[w.name]
        if (r["window_start_min"], r["as_of_min"]) != (r["window_start_max"], r["as_of_max"]):
            raise OnlineStoreError(f"window_snapshot of {day} holds rows of window {w.name} as of "
                                   f"{r['as_of_min']} .. {r['as_of_max']}: not one day's snapshot as panes writes it")
        ends[w.name] = (r["window_start_min"], r["as_of_min"])
    return DaySnapshot(day, rows.select(value_columns(config)), ends).of(list(served_windows(config)))


def jsonb_text(value: Any) -> str:
    """JSON for jsonb: decimals as exact numbers, non-finite doubles as PostgreSQL's to_jsonb
    spells them (``"NaN"``), times in ISO 8601, a map's keys as text."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, Decimal)):
        return str(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else json.dumps("NaN" if math.isnan(value) else
                                                                   ("Infinity" if value > 0 else "-Infinity"))
    if isinstance(value, (datetime, date)):
        return json.dumps(value.isoformat())
    if isinstance(value, bytes):
        return json.dumps(value.hex())
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(_text(k))}:{jsonb_text(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(jsonb_text(v) for v in value) + "]"
    return json.dumps(value)


def _text(key: Any) -> str:
    """A map's key as a JSON object's: text (times in ISO 8601)."""
    return key.isoformat() if isinstance(key, (datetime, date)) else str(key)


def _copy_text(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """A column as COPY's CSV reads it: nested values as JSON, bytes as bytea's hex; the rest as
    Arrow writes them (doubles in their shortest exact spelling, times with their zone)."""
    kind = column.type
    if pa.types.is_map(kind):  # Arrow gives a map as its (key, value) pairs
        return pa.chunked_array([pa.array([None if v is None else jsonb_text({_text(k): x for k, x in v})
                                           for v in column.to_pylist()], pa.string())])
    if pa.types.is_list(kind) or pa.types.is_struct(kind) or pa.types.is_large_list(kind):
        return pa.chunked_array([pa.array([None if v is None else jsonb_text(v) for v in column.to_pylist()],
                                          pa.string())])
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
        return pa.chunked_array([pa.array([None if v is None else "\\x" + v.hex() for v in column.to_pylist()],
                                          pa.string())])
    return column


def copy_csv(rows: pa.Table) -> io.BytesIO:
    converted = pa.table({name: _copy_text(rows[name]) for name in rows.column_names})
    buffer = io.BytesIO()
    pacsv.write_csv(converted, buffer, pacsv.WriteOptions(include_header=False))
    buffer.seek(0)
    return buffer
