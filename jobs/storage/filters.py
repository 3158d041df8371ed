"""Partition filters: deltalake's tuples, ``(column, op, value)`` with op one of ``=, !=, <,
<=, >, >=, in, not in``, on partition columns only. Values may be strings, numbers, booleans,
dates or datetimes; they are compared as the partition column's type. A list of lists is an OR
of ANDs. delta-rs prunes files with them, and Spark reads and replaces with their SQL form."""

from __future__ import annotations

from datetime import date, datetime, timezone
from typing import Any

_OPS = ("=", "!=", "<", "<=", ">", ">=", "in", "not in")


Filter = tuple[str, str, Any]


def _literal(value: Any) -> str:
    """A filter value in Delta's partition-value spelling."""
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            value = value.astimezone(timezone.utc).replace(tzinfo=None)
        return value.isoformat(sep=" ", timespec="microseconds")
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def conjunction(filters: list[Filter] | None) -> list[tuple[str, str, str | list[str]]]:
    normalised = []
    for item in filters or []:
        if not isinstance(item, (tuple, list)) or len(item) != 3:
            raise ValueError(f"partition filter {item!r} is not a (column, op, value) tuple")
        column, op, value = item
        op = str(op).strip().lower()
        if op not in _OPS:
            raise ValueError(f"partition filter {item!r}: op must be one of {', '.join(_OPS)}")
        if op in ("in", "not in"):
            if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
                raise ValueError(f"partition filter {item!r}: '{op}' needs a list of values")
            normalised.append((column, op, [_literal(v) for v in value]))
        else:
            normalised.append((column, op, _literal(value)))
    return normalised


def disjunction(filters: list[Filter] | list[list[Filter]] | None) -> list[list[tuple]]:
    if not filters:
        return []
    if all(isinstance(f, list) for f in filters):
        return [conjunction(c) for c in filters if c]
    return [conjunction(filters)]


def interval(column: str, start: datetime, end: datetime) -> list[Filter]:
    """The rows of ``column`` in ``[start, end)``: a sub-daily partition's rows (``row_filters``
    of a write), half-open so that consecutive intervals share no row."""
    if not start < end:
        raise ValueError(f"interval of {column}: {start} is not before {end}")
    return [(column, ">=", start), (column, "<", end)]


def check_filter_columns(filters: list[tuple], partition_columns: list[str], path: str) -> None:
    outside = sorted({c for c, _, _ in filters} - set(partition_columns))
    if outside:
        raise ValueError(f"partition filters on {outside} for {path}, whose partition columns are "
                         f"{list(partition_columns)}: filter on partition columns only")


def sql_predicate(conjunctions: list[list[tuple]]) -> str:
    def lit(v: str) -> str:
        return "'" + v.replace("\\", "\\\\").replace("'", "\\'") + "'"

    def term(column: str, op: str, value: str | list[str]) -> str:
        name = "`" + column.replace("`", "``") + "`"
        if op in ("in", "not in"):
            if not value:  # SQL has no empty IN list
                return "FALSE" if op == "in" else "TRUE"
            return f"{name} {op.upper()} ({', '.join(lit(v) for v in value)})"
        return f"{name} {op} {lit(value)}"

    return " OR ".join("(" + " AND ".join(term(*t) for t in c) + ")" for c in conjunctions)
