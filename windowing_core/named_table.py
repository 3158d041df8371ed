"""A table a configuration names, to read from: a path (Delta or Parquet) or a catalog table.

The spine (``spine:``) and a table source of events (``source:``) are both one; the rules for
naming one are here once, and ``jobs.named_tables`` reads it.
"""

from __future__ import annotations

import re

FORMATS = ("delta", "parquet")
COLUMN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
TABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*){0,2}")
URI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:/")
"""A URI as Hadoop's file systems read it: a scheme, then a path (``s3a://b/x``, ``file:/x``)."""


def check_location(where: str, path: object, table: object, fmt: object) -> None:
    """A one-line error naming ``where`` unless exactly one of ``path`` and ``table`` is given,
    each well formed, with a ``format`` only for a path."""
    if (path is None) == (table is None):
        raise ValueError(f"{where}: give a path or a table, one of them")
    if path is not None and (not isinstance(path, str) or not path.strip()):
        raise ValueError(f"{where}.path must be a non-empty string, got {path!r}")
    if table is not None and (not isinstance(table, str) or not TABLE_NAME.fullmatch(table)):
        raise ValueError(f"{where}.table must be a table name such as db.labels, got {table!r}")
    if fmt is not None and fmt not in FORMATS:
        raise ValueError(f"{where}.format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    if table is not None and fmt is not None:
        raise ValueError(f"{where}.format: a table's format is the catalog's; give it for a path only")


def check_absolute(where: str, path: object, field: str = "path") -> None:
    """A relative path would be read from whatever folder the job starts in (a shell's, the
    Dagster code server's, a cluster driver's): the same file would name other data."""
    if isinstance(path, str) and path.strip() and not (path.startswith("/") or URI.match(path)):
        label = where if where.endswith(f".{field}") else f"{where}.{field}"
        raise ValueError(f"{label} must be an absolute path or a URI (/data/labels, s3a://bucket/labels): "
                         f"a relative one depends on the folder each job starts in, got {path!r}")


def check_column(where: str, column: object) -> None:
    if not isinstance(column, str) or not COLUMN.fullmatch(column):
        raise ValueError(f"{where} must be a column name (letters, digits, underscores), got {column!r}")
