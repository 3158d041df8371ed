"""The types a measured field of an event can declare, and what each means in Spark and Python.

A configuration declares fields as ``long``, ``double``, ``decimal(P,S)``, ``string`` or
``boolean``; everything downstream speaks the Spark DDL type (``bigint``, ``double``,
``decimal(12,2)``, ``string``, ``boolean``), which is what a column of ``events`` holds and what
an aggregation is told it reads (``Aggregation.value_type``). Python holds the same values as
``int``, ``float``, ``decimal.Decimal``, ``str`` and ``bool``.

Decimals are limited to 18 digits (``MAX_DECIMAL_PRECISION``): the unscaled value of every
declared decimal, like every long, then fits 64 bits, so a sum kept in 38 digits
(``decimal(38,S)``) holds 10**20 of the largest values without overflowing, and the exact
moments of variance use one integer arithmetic for both (``windowing_core.aggregations``).
"""

from __future__ import annotations

import re

MAX_DECIMAL_PRECISION = 18
_DECIMAL = re.compile(r"decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)")
_SIMPLE = {"long": "bigint", "double": "double", "string": "string", "boolean": "boolean"}
DECLARED_NAMES = ("long", "double", "decimal(P,S)", "string", "boolean")

INTEGER, DECIMAL, DOUBLE, STRING, BOOLEAN = "integer", "decimal", "double", "string", "boolean"
NUMERIC = frozenset({INTEGER, DECIMAL, DOUBLE})
EXACT = frozenset({INTEGER, DECIMAL})
"""Numeric families whose sums are exact integers (a decimal as its unscaled integer)."""
ANY = frozenset({INTEGER, DECIMAL, DOUBLE, STRING, BOOLEAN})


def spark_type(declared: object, where: str) -> str:
    """The Spark DDL type of a declared type (``long`` -> ``bigint``); a one-line error naming
    ``where`` (``fields.amount``) otherwise."""
    text = declared.strip().lower() if isinstance(declared, str) else None
    if text in _SIMPLE:
        return _SIMPLE[text]
    match = _DECIMAL.fullmatch(text or "")
    if not match:
        raise ValueError(f"{where}: unknown type {declared!r}; use one of {', '.join(DECLARED_NAMES)}")
    precision, scale = int(match[1]), int(match[2])
    if not 1 <= precision <= MAX_DECIMAL_PRECISION or scale > precision:
        raise ValueError(f"{where}: {declared} needs 1 <= P <= {MAX_DECIMAL_PRECISION} and S <= P "
                         "(its unscaled values fit 64 bits, so sums of them stay exact in 38 digits)")
    return f"decimal({precision},{scale})"


def family(ddl: str) -> str:
    """``integer``, ``decimal``, ``double``, ``string`` or ``boolean``."""
    if ddl in ("bigint", "int", "smallint", "tinyint"):
        return INTEGER
    if ddl.startswith("decimal"):
        return DECIMAL
    if ddl in ("double", "float"):
        return DOUBLE
    if ddl in (STRING, BOOLEAN):
        return ddl
    raise ValueError(f"not a field type: {ddl!r}")


def precision_and_scale(ddl: str) -> tuple[int, int]:
    """``(P, S)`` of a decimal, ``(19, 0)`` for a long."""
    match = _DECIMAL.fullmatch(ddl)
    return (int(match[1]), int(match[2])) if match else (19, 0)


def scale(ddl: str) -> int:
    return precision_and_scale(ddl)[1]


def declared_name(ddl: str) -> str:
    """How the configuration spells a Spark type (``bigint`` -> ``long``)."""
    return {"bigint": "long"}.get(ddl, ddl)
