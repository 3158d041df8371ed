"""How a generated record becomes a landing line and a file: JSON objects one per line, as
producers send them, and the broken lines a real feed carries."""

from __future__ import annotations

import gzip
import json
import os
import random
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

MALFORMED_KINDS = ("not_json", "truncated_json", "missing_key", "null_key", "bad_timestamp", "bad_value")
NOT_JSON_LINES = (
    "<html><body><h1>502 Bad Gateway</h1></body></html>",
    "GET /products/42?ref=mail HTTP/1.1",
    "user_id=u00042&ts=1738241110",
    "event_id,user_id,timestamp,value",
)


def _json_text(value: Any) -> str:
    """A JSON value as written: a decimal in its own digits, never through a float."""
    return str(value) if isinstance(value, Decimal) else json.dumps(value)


def record_line(record: dict[str, Any]) -> str:
    """One record as a line: ``json.dumps``'s text, with decimals in their own digits."""
    return "{" + ", ".join(f"{json.dumps(name)}: {_json_text(value)}" for name, value in record.items()) + "}"


def event_record(key_field: str, key: object, timestamp: object, value: object = None,
                 event_id: str | None = None) -> dict[str, object]:
    """An event as a producer sends it: ``value`` and ``event_id`` only where there is one."""
    record: dict[str, object] = {key_field: key, "timestamp": timestamp}
    if value is not None:
        record["value"] = value
    if event_id is not None:
        record["event_id"] = event_id
    return record


def malformed_line(rng: random.Random, kind: str, key_field: str, key: str, timestamp: str, event_id: str) -> str:
    """A line of one of :data:`MALFORMED_KINDS`, which ingest must quarantine."""
    if kind == "not_json":
        return rng.choice(NOT_JSON_LINES)
    if kind == "truncated_json":
        whole = record_line(event_record(key_field, key, timestamp, rng.randint(1, 5), event_id))
        return whole[: rng.randrange(5, len(whole) - 5)]
    if kind == "missing_key":
        return record_line({"timestamp": timestamp, "value": 1, "event_id": event_id})
    if kind == "null_key":
        return record_line(event_record(key_field, None, timestamp, 1, event_id))
    if kind == "bad_timestamp":
        return record_line(event_record(key_field, key, "yesterday", 1, event_id))
    if kind == "bad_value":
        return record_line(event_record(key_field, key, timestamp, "abc", event_id))
    raise ValueError(f"unknown malformed kind {kind!r}")


def write_file(path: Path, lines: Sequence[str], *, gzipped: bool, modified: float | None = None) -> Path:
    """The lines as one file, replaced atomically so a reader never sees half of it; gzipped
    with no time in its header, so the same lines give the same bytes. ``modified`` sets the
    file's time (a job may take arrival time from it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = ("\n".join(lines) + "\n").encode("utf-8")
    if gzipped:
        data = gzip.compress(data, compresslevel=6, mtime=0)
    temporary = path.parent / f".{path.name}.tmp"
    temporary.write_bytes(data)
    os.replace(temporary, path)
    if modified is not None:
        os.utime(path, (modified, modified))
    return path
