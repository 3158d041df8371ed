"""Aggregations a configuration defines in Spark SQL (``kind: custom``), as Jet's
``AggregateOperation`` or Flink's ``AggregateFunction`` let a user write one.

``partials`` names a few built-in partials, each ``sum``, ``count``, ``min`` or ``max`` of a row
expression over the event's fields; ``value`` finishes them, an expression over the partials'
names alone::

    ctr: {kind: custom, partials: {clicks: "sum(clicked)", views: "count(*)"}, value: "clicks / views"}

Each partial is the built-in aggregation of that name over its expression (typed at load by
``expressions.row_type``), so the custom one slides as they do: by combine and deduct when every
partial is a ``count`` or an exact ``sum``, over tiles otherwise. The row expressions run in Spark
(the oracle takes their values per event as given, as it does ``columns``). The value is a
deterministic function of the finished partials, defined here twice on one parsed tree, in
Python (the oracle's) and as Spark columns: numbers in it are doubles (a partial's exact sum is
rounded once, as ``mean`` divides once), strings and booleans as they are, a division by zero is
null (``try_divide``: a window without events must not fail the day), as is a value that does
not fit ``type: long``. The subset is what both
sides compute bit for bit: arithmetic, comparisons, logic, ``CASE``, ``IF``, ``coalesce``,
``nullif``, ``greatest``, ``least`` and ``abs``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from functools import reduce
from typing import TYPE_CHECKING, Any

from pyspark.sql import functions as F
from sqlglot import exp

from windowing_core.aggregations.base import DEFAULT_FIELD, Aggregation, Partial, PartialField
from windowing_core.aggregations.sums import Count, Sum
from windowing_core.aggregations.tiles import Max, Min
from windowing_core.expressions import branches_of, parse, references, row_type
from windowing_core.field_types import BOOLEAN, DOUBLE, NUMERIC, STRING, family

if TYPE_CHECKING:
    from pyspark.sql import Column
    from pyspark.sql.window import WindowSpec

PARTIAL_FUNCTIONS = {"sum": Sum, "count": Count, "min": Min, "max": Max}
VALUE_TYPES = {"double": "double", "long": "bigint", "string": "string", "boolean": "boolean"}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_VALUE_NODES = (exp.Paren, exp.Column, exp.Literal, exp.Boolean, exp.Null, exp.Neg, exp.Add, exp.Sub, exp.Mul,
                exp.Div, exp.SafeDivide, exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE, exp.And, exp.Or, exp.Not,
                exp.Is, exp.Case, exp.If, exp.Coalesce, exp.Nullif, exp.Greatest, exp.Least, exp.Abs)
_ARITHMETIC = (exp.Neg, exp.Add, exp.Sub, exp.Mul, exp.Div, exp.SafeDivide, exp.Abs)
_COMPARISONS = (exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE)
_BRANCHES = (exp.Case, exp.If, exp.Coalesce, exp.Nullif, exp.Greatest, exp.Least)


class Custom(Aggregation):
    """``value`` over named partials (``partials``: name to ``sum(expr)``, ``count(*)``,
    ``count(expr)``, ``min(expr)`` or ``max(expr)``), of type ``type`` (inferred: double for a
    number). ``fields`` are the events' measured fields and their types, which the partials'
    expressions may read."""

    def __init__(self, name: str, partials: Mapping[str, str], value: str, type: str | None = None,
                 fields: tuple[tuple[str, str], ...] = ((DEFAULT_FIELD, "bigint"),)) -> None:
        self.name, self.field, self.value_type = name, DEFAULT_FIELD, "struct"
        self.params = {"partials": dict(partials or {}), "value": value, "type": type}
        where = f"aggregations.{name}"
        if not isinstance(partials, Mapping) or not partials:
            raise ValueError(f"{where}.partials: expected a mapping of partial name to sum(...), count(...), "
                             'min(...) or max(...), for example {clicks: "sum(clicked)", views: "count(*)"}')
        types = dict(fields)
        self.parts: list[tuple[str, str, Aggregation]] = []  # (name, row expression, the built-in partial)
        for part, sql in partials.items():
            if not isinstance(part, str) or not _NAME.fullmatch(part) or "__" in part:
                raise ValueError(f"{where}.partials.{part}: a partial's name uses letters, digits and single "
                                 "underscores, starting with a letter or underscore")
            function, argument = _partial(sql, f"{where}.partials.{part}", types)
            argument_type = row_type(argument, f"{where}.partials.{part}", types)
            if function == "sum" and family(argument_type) not in NUMERIC:
                raise ValueError(f"{where}.partials.{part}: sum needs a number, {argument!r} is {argument_type}")
            self.parts.append((part, argument, PARTIAL_FUNCTIONS[function](part, f"{name}.{part}", argument_type)))
        if len({p.lower() for p, _, _ in self.parts}) != len(self.parts):
            raise ValueError(f"{where}.partials: two partials' names differ only in case")
        read = sorted({r for _, a, _ in self.parts for r in references(a, where, list(types))})
        self._read_types = {r: types[r] for r in read}
        self.tree = parse(value, f"{where}.value")
        families = {p.lower(): _value_family(a.output_type) for p, _, a in self.parts}
        inferred = _check_value(self.tree, f"{where}.value", value, families)
        self.output_type = _output_type(inferred, type, f"{where}.type")
        self.family = family(self.output_type)
        self.invertible = all(a.invertible for _, _, a in self.parts)
        self.fields = tuple(PartialField(p, f.spark_type) for p, _, a in self.parts for f in a.fields)

    @property
    def reads(self) -> tuple[str, ...]:
        return tuple(self._read_types)

    @property
    def read_types(self) -> dict[str, str]:
        return dict(self._read_types)

    def _identity(self) -> tuple:
        return (type(self), self.name, repr(self.params), repr(sorted(self.read_types.items())))

    def __repr__(self) -> str:
        return f"Custom({self.name!r}, {self.params['partials']!r}, {self.params['value']!r})"

    @property
    def description(self) -> str:
        partials = ", ".join(f"{p} = {sql}" for p, sql in self.params["partials"].items())
        return f"{self.params['value']} over the window's {partials}"

    def partial_notes(self) -> dict[str, str]:
        return {p: f"the partial {p} = {self.params['partials'][p]}" for p, _, _ in self.parts}

    @property
    def row_expressions(self) -> tuple[tuple[str, str, str], ...]:
        """``(name, row expression, type)`` of each partial's input: the per-event values Spark
        computes and the oracle reads back by ``name`` (``event_value``)."""
        return tuple((a.field, argument, a.value_type) for _, argument, a in self.parts)

    def event_value(self, field: Callable[[str], Any]) -> tuple:
        return tuple(field(a.field) for _, _, a in self.parts)

    def spark_value(self) -> Column:
        return F.struct(*[F.expr(argument).cast(a.value_type).alias(f"p{i}")
                          for i, (_, argument, a) in enumerate(self.parts)])

    # -- the partial: the parts' partials side by side ------------------------------------------

    def _split(self, partial: Partial | list) -> list:
        pieces, at = [], 0
        for _, _, a in self.parts:
            pieces.append(partial[at:at + len(a.fields)])
            at += len(a.fields)
        return pieces

    def empty(self) -> Partial:
        return tuple(x for _, _, a in self.parts for x in a.empty())

    def accumulate(self, partial: Partial, value: Any, at: Any = None) -> Partial:
        return tuple(x for (_, _, a), p, v in zip(self.parts, self._split(partial), value, strict=True)
                     for x in a.accumulate(p, v, at))

    def combine(self, a: Partial, b: Partial) -> Partial:
        return tuple(x for (_, _, g), p, q in zip(self.parts, self._split(a), self._split(b), strict=True)
                     for x in g.combine(p, q))

    def deduct(self, a: Partial, b: Partial) -> Partial:
        if not self.invertible:
            return super().deduct(a, b)
        return tuple(x for (_, _, g), p, q in zip(self.parts, self._split(a), self._split(b), strict=True)
                     for x in g.deduct(p, q))

    def finish(self, partial: Partial) -> Any:
        values = {}
        for (part, _, a), p in zip(self.parts, self._split(partial), strict=True):
            v = a.finish(p)
            values[part.lower()] = float(v) if v is not None and family(a.output_type) in NUMERIC else v
        return _cast(_evaluate(self.tree, values), self.output_type)

    def spark_accumulate(self, value: Column, at: Column) -> list[Column]:
        return [c for i, (_, _, a) in enumerate(self.parts) for c in a.spark_accumulate(value[f"p{i}"], at)]

    def spark_merge(self, fields: list[Column], over: WindowSpec | None = None) -> list[Column]:
        return [c for (_, _, a), f in zip(self.parts, self._split(fields), strict=True) for c in a.spark_merge(f, over)]

    def spark_finish(self, fields: list[Column]) -> Column:
        values = {}
        for (part, _, a), f in zip(self.parts, self._split(fields), strict=True):
            # a window over tiles without events merges to null fields: the part's empty value
            v = F.coalesce(a.spark_finish(f), a.spark_empty_value())
            values[part.lower()] = v.cast("double") if family(a.output_type) in NUMERIC else v
        value = _spark(self.tree, values)
        return value.try_cast(self.output_type) if self.output_type == "bigint" else value.cast(self.output_type)


def _partial(sql: Any, where: str, types: dict[str, str]) -> tuple[str, str]:
    """``sum(expr)`` as ``("sum", "expr")``; ``count(*)`` counts every event, ``count(1)``."""
    tree = parse(sql, where)
    functions = ", ".join(PARTIAL_FUNCTIONS)
    if not isinstance(tree, exp.AggFunc):
        raise ValueError(f"{where}: {sql!r} is not one of {functions} of a row expression "
                         "(arithmetic over partials belongs in value)")
    name = tree.sql_name().lower() if not isinstance(tree, exp.Anonymous) else tree.name.lower()
    if name not in PARTIAL_FUNCTIONS:
        raise ValueError(f"{where}: {sql!r}: {name} is not a partial's function; use {functions} "
                         "(a mean is sum / count in value)")
    argument = tree.this
    if isinstance(argument, exp.Distinct) or tree.expressions:
        raise ValueError(f"{where}: {sql!r}: {name} takes one row expression, without DISTINCT")
    if isinstance(argument, exp.Star) and name == "count":
        return name, "1"
    if argument is None or isinstance(argument, exp.Star):
        raise ValueError(f"{where}: {sql!r}: {name} needs a row expression")
    for node in argument.find_all(exp.AggFunc):
        raise ValueError(f"{where}: {sql!r} nests an aggregate ({node.sql(dialect='spark')})")
    text = argument.sql(dialect="spark")
    references(text, where, list(types))
    return name, text


def _value_family(ddl: str) -> str:
    return DOUBLE if family(ddl) in NUMERIC else family(ddl)


def _check_value(node: exp.Expression, where: str, sql: str, families: dict[str, str]) -> str | None:
    """The family of the value's result (None: always null); a one-line error for anything
    outside the subset, an unknown partial, or operands that do not fit."""
    if not isinstance(node, _VALUE_NODES) or (isinstance(node, (exp.Greatest, exp.Least)) and not node.expressions):
        name = node.name if isinstance(node, exp.Anonymous) else node.sql(dialect="spark")
        for inner in node.find_all(exp.AggFunc):
            raise ValueError(f"{where}: {sql!r}: {inner.sql(dialect='spark')} aggregates; the value sees the "
                             f"partials ({', '.join(families)}) by name")
        raise ValueError(f"{where}: {sql!r}: {name} is not in a value's subset: arithmetic, comparisons, AND, OR, "
                         "NOT, IS NULL, CASE, IF, coalesce, nullif, greatest, least, abs")
    if isinstance(node, exp.Column):
        if node.table or node.name.lower() not in families:
            raise ValueError(f"{where}: {sql!r} refers to {node.sql(dialect='spark')}, which is none of the "
                             f"partials ({', '.join(families)})")
        return families[node.name.lower()]
    if isinstance(node, exp.Paren):
        return _check_value(node.this, where, sql, families)
    if isinstance(node, exp.Null):
        return None
    if isinstance(node, exp.Boolean):
        return BOOLEAN
    if isinstance(node, exp.Literal):
        return STRING if node.is_string else DOUBLE
    if isinstance(node, exp.Is):
        if not isinstance(node.expression, exp.Null):
            raise ValueError(f"{where}: {sql!r}: only IS NULL and IS NOT NULL")
        _check_value(node.this, where, sql, families)
        return BOOLEAN
    operands = _operands(node)
    found = [_check_value(o, where, sql, families) for o in operands]
    present = {f for f in found if f is not None}

    def need(wanted: str) -> None:
        if present - {wanted}:
            raise ValueError(f"{where}: {sql!r}: {node.sql(dialect='spark')} needs {wanted} operands, got "
                             f"{', '.join(sorted(present))}")

    if isinstance(node, _ARITHMETIC):
        need(DOUBLE)
        return DOUBLE
    if isinstance(node, (exp.And, exp.Or, exp.Not)):
        need(BOOLEAN)
        return BOOLEAN
    if isinstance(node, _COMPARISONS):
        if len(present) > 1:
            need(present.pop())
        return BOOLEAN
    if isinstance(node, (exp.Case, exp.If)):
        conditions = [i.this for i in node.args["ifs"]] if isinstance(node, exp.Case) else [node.this]
        for c in conditions:
            if _check_value(c, where, sql, families) not in (BOOLEAN, None):
                raise ValueError(f"{where}: {sql!r}: a condition must be true or false: {c.sql(dialect='spark')}")
        found = [_check_value(o, where, sql, families) for o in branches_of(node)]
        present = {f for f in found if f is not None}
    if len(present) > 1:
        raise ValueError(f"{where}: {sql!r}: {node.sql(dialect='spark')} mixes {' and '.join(sorted(present))}")
    return present.pop() if present else None


def _operands(node: exp.Expression) -> list[exp.Expression]:
    if isinstance(node, (exp.Case, exp.If)):
        return []  # checked apart: conditions and branches
    if isinstance(node, _BRANCHES):
        return branches_of(node)
    return [n for n in (node.this, node.args.get("expression")) if n is not None]


def _output_type(inferred: str | None, declared: Any, where: str) -> str:
    if declared is None:
        if inferred is None:
            raise ValueError(f"{where.rsplit('.', 1)[0]}.value: always null")
        return "double" if inferred == DOUBLE else inferred
    text = declared.strip().lower() if isinstance(declared, str) else None
    if text not in VALUE_TYPES:
        raise ValueError(f"{where}: {declared!r}: a value is one of {', '.join(VALUE_TYPES)} (numbers in it are "
                         "doubles; round or cast in a reader for a decimal)")
    wanted = VALUE_TYPES[text]
    if inferred is not None and _value_family(wanted) != inferred:
        raise ValueError(f"{where}: {declared} does not fit the value, which is a {inferred}")
    return wanted


# -- the value, in Python and in Spark: one tree, the same rules -----------------------------------


def _order(a: Any, b: Any) -> int:
    """Spark's order of two non-null values: NaN equals NaN and is above every other double."""
    if isinstance(a, float) and isinstance(b, float) and (math.isnan(a) or math.isnan(b)):
        return (math.isnan(a) - math.isnan(b))
    return (a > b) - (a < b)


_COMPARE = {exp.EQ: lambda o: o == 0, exp.NEQ: lambda o: o != 0, exp.LT: lambda o: o < 0,
            exp.LTE: lambda o: o <= 0, exp.GT: lambda o: o > 0, exp.GTE: lambda o: o >= 0}


def _evaluate(node: exp.Expression, values: dict[str, Any]) -> Any:
    """The value as Spark computes it (``_spark``), in Python: null propagates, as in SQL."""
    if isinstance(node, exp.Paren):
        return _evaluate(node.this, values)
    if isinstance(node, exp.Column):
        return values[node.name.lower()]
    if isinstance(node, exp.Null):
        return None
    if isinstance(node, exp.Boolean):
        return node.this
    if isinstance(node, exp.Literal):
        return node.this if node.is_string else float(node.this)
    if isinstance(node, exp.Is):
        return _evaluate(node.this, values) is None
    if isinstance(node, exp.And):
        a, b = _evaluate(node.this, values), _evaluate(node.expression, values)
        return False if False in (a, b) else None if None in (a, b) else True
    if isinstance(node, exp.Or):
        a, b = _evaluate(node.this, values), _evaluate(node.expression, values)
        return True if True in (a, b) else None if None in (a, b) else False
    if isinstance(node, exp.Case):
        for branch in node.args["ifs"]:
            if _evaluate(branch.this, values) is True:
                return _evaluate(branch.args["true"], values)
        return _evaluate(node.args.get("default") or exp.Null(), values)
    if isinstance(node, exp.If):
        chosen = node.args["true"] if _evaluate(node.this, values) is True else node.args.get("false") or exp.Null()
        return _evaluate(chosen, values)
    operands = [_evaluate(o, values) for o in _operands(node)]
    if isinstance(node, exp.Coalesce):
        return next((v for v in operands if v is not None), None)
    if isinstance(node, (exp.Greatest, exp.Least)):
        present = [v for v in operands if v is not None]
        sign = 1 if isinstance(node, exp.Greatest) else -1
        return reduce(lambda a, b: b if sign * _order(b, a) > 0 else a, present) if present else None
    if isinstance(node, exp.Nullif):
        a, b = operands
        return None if a is not None and b is not None and _order(a, b) == 0 else a
    if None in operands:
        return None
    if isinstance(node, exp.Not):
        return not operands[0]
    if isinstance(node, exp.Neg):
        return -operands[0]
    if isinstance(node, exp.Abs):
        return abs(operands[0])
    a, b = operands
    if isinstance(node, _COMPARISONS):
        return _COMPARE[type(node)](_order(a, b))
    if isinstance(node, exp.Add):
        return a + b
    if isinstance(node, exp.Sub):
        return a - b
    if isinstance(node, exp.Mul):
        return a * b
    return None if b == 0 else a / b  # exp.Div, exp.SafeDivide


def _spark(node: exp.Expression, values: dict[str, Column]) -> Column:
    """The value as a Spark column: ``_evaluate``'s twin, node for node."""
    if isinstance(node, exp.Paren):
        return _spark(node.this, values)
    if isinstance(node, exp.Column):
        return values[node.name.lower()]
    if isinstance(node, exp.Null):
        return F.lit(None)
    if isinstance(node, exp.Boolean):
        return F.lit(node.this)
    if isinstance(node, exp.Literal):
        return F.lit(node.this if node.is_string else float(node.this))
    if isinstance(node, exp.Is):
        return _spark(node.this, values).isNull()
    if isinstance(node, exp.Case):
        branches = node.args["ifs"]
        chosen = F.when(_spark(branches[0].this, values), _spark(branches[0].args["true"], values))
        for branch in branches[1:]:
            chosen = chosen.when(_spark(branch.this, values), _spark(branch.args["true"], values))
        return chosen.otherwise(_spark(node.args.get("default") or exp.Null(), values))
    if isinstance(node, exp.If):
        return F.when(_spark(node.this, values), _spark(node.args["true"], values)).otherwise(
            _spark(node.args.get("false") or exp.Null(), values))
    operands = [_spark(o, values) for o in _operands(node)]
    simple = {exp.Coalesce: F.coalesce, exp.Greatest: F.greatest, exp.Least: F.least, exp.Nullif: F.nullif,
              exp.Abs: F.abs, exp.Not: lambda a: ~a, exp.Neg: lambda a: -a, exp.Div: F.try_divide,
              exp.SafeDivide: F.try_divide, exp.Add: lambda a, b: a + b, exp.Sub: lambda a, b: a - b,
              exp.Mul: lambda a, b: a * b, exp.And: lambda a, b: a & b, exp.Or: lambda a, b: a | b,
              exp.EQ: lambda a, b: a == b, exp.NEQ: lambda a, b: a != b, exp.LT: lambda a, b: a < b,
              exp.LTE: lambda a, b: a <= b, exp.GT: lambda a, b: a > b, exp.GTE: lambda a, b: a >= b}
    return simple[type(node)](*operands)


_LONG = (-(2**63), 2**63 - 1)


def _cast(value: Any, output_type: str) -> Any:
    """Spark's ``try_cast`` of a double to a long: truncated toward zero, saturating where the
    double rounds to the range's end (2**63), null where it is not finite or beyond it (a value
    must not fail the day)."""
    if value is None or output_type != "bigint":
        return value
    if math.isnan(value) or not float(_LONG[0]) <= value <= float(_LONG[1]):
        return None
    return max(_LONG[0], min(int(value), _LONG[1]))
