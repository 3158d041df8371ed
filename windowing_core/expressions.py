"""The configuration's Spark SQL expressions (``where``, ``columns``), checked when it loads.

They run in Spark, row by row, before the partials; here they are only parsed, with sqlglot's
Spark dialect, so that a configuration that cannot work fails in the Dagster process or the
job's command line at load, in one line, without a JVM. Spark's analyser still has the last
word on what sqlglot cannot know (the types, a function it does not list).
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp

NOT_REPEATABLE = frozenset({
    "rand", "random", "randn", "uuid", "shuffle", "now", "current_timestamp", "current_date",
    "localtimestamp", "monotonically_increasing_id", "spark_partition_id", "input_file_name",
})
"""Functions whose value differs between runs: a re-run of a day must write the same rows."""
_NOT_REPEATABLE_NODES = (exp.Rand, exp.Randn, exp.Uuid, exp.Shuffle, exp.CurrentTimestamp, exp.CurrentDate,
                         exp.CurrentTime)


def references(sql: object, where: str, names: list[str]) -> set[str]:
    """The column names one row expression refers to, all among ``names`` (compared without
    case, as Spark resolves them). A one-line ``ValueError`` naming ``where`` otherwise, and for
    anything that is not one expression over one row: several statements, a query, an
    aggregate or window function, a function that differs between runs."""
    expression = parse(sql, where)
    if isinstance(expression, (exp.Query, exp.Command)) or any(expression.find_all(exp.Query)):
        raise ValueError(f"{where}: {sql!r}: a query is not a row expression")
    for node in expression.find_all(exp.AggFunc, exp.Window):
        raise ValueError(f"{where}: {sql!r}: {node.sql(dialect='spark')} aggregates rows; "
                         "an expression here sees one event")
    for node in expression.find_all(exp.Func):
        name = (node.name if isinstance(node, exp.Anonymous) else node.sql_name()).lower()
        if isinstance(node, _NOT_REPEATABLE_NODES) or name in NOT_REPEATABLE:
            raise ValueError(f"{where}: {sql!r}: {name} differs between runs, so a re-run would not "
                             "write the same rows")
    known = {n.lower(): n for n in names}
    found = set()
    for column in expression.find_all(exp.Column):
        if column.table:
            raise ValueError(f"{where}: {sql!r}: refer to a field by its name alone, not {column.sql(dialect='spark')}")
        if column.name.lower() not in known:
            raise ValueError(f"{where}: {sql!r} refers to {column.name!r}, which is none of "
                             f"{', '.join(names)}")
        found.add(known[column.name.lower()])
    return found


def _first_line(err: Exception) -> str:
    return str(err).splitlines()[0] if str(err) else type(err).__name__


def parse(sql: object, where: str) -> exp.Expression:
    """One Spark SQL expression, parsed; a one-line ``ValueError`` naming ``where`` otherwise."""
    if not isinstance(sql, str) or not sql.strip():
        raise ValueError(f"{where}: expected a Spark SQL expression as a string, got {sql!r}")
    try:
        parsed = [e for e in sqlglot.parse(sql, dialect="spark") if e is not None]
    except sqlglot.errors.SqlglotError as err:
        raise ValueError(f"{where}: {sql!r} does not parse as Spark SQL: {_first_line(err)}") from None
    if len(parsed) != 1:
        raise ValueError(f"{where}: {sql!r} is {len(parsed)} statements, not one expression")
    return parsed[0]


# -- the Spark type of a row expression, known at load -----------------------------------------

MAX_PRECISION = 38
_CAST_TYPES = {"BIGINT": "bigint", "INT": "bigint", "SMALLINT": "bigint", "TINYINT": "bigint", "DOUBLE": "double",
               "TEXT": "string", "VARCHAR": "string", "STRING": "string", "BOOLEAN": "boolean"}
_PREDICATES = (exp.Predicate, exp.Not, exp.And, exp.Or, exp.Is, exp.Between, exp.In, exp.Like)


def row_type(sql: str, where: str, types: dict[str, str]) -> str:
    """The Spark DDL type of a row expression over fields of the given ``types``, by Spark's own
    rules (decimal precision and scale as ``DecimalPrecision`` gives them, with its default loss
    of precision past 38 digits): an aggregate's partial must be typed before Spark runs. Covers
    arithmetic, comparisons and logic, ``CASE``/``IF``/``coalesce``/``nullif``/``greatest``/
    ``least``/``abs`` and ``cast``; anything else is a one-line error asking for a ``cast``."""
    known = {name.lower(): ddl for name, ddl in types.items()}
    found = _type_of(parse(sql, where), where, sql, known)
    if found == "null":
        raise ValueError(f"{where}: {sql!r} is always null")
    return _ddl(found)


def _ddl(t: str | tuple) -> str:
    if isinstance(t, tuple):
        return "bigint" if t[0] == "literal" else f"decimal({t[1]},{t[2]})"
    return t


def _decimal(t: str | tuple) -> tuple[str, int, int] | None:
    """A numeric exact type as a decimal: a long is decimal(20,0), an integer literal as many
    digits as it has (Spark's ``DecimalType.fromLiteral``); None for others."""
    if isinstance(t, tuple):
        return ("decimal", t[1], 0) if t[0] == "literal" else t
    if t == "bigint":
        return ("decimal", 20, 0)
    if t.startswith("decimal"):
        p, s = (int(x) for x in t[len("decimal("):-1].split(","))
        return ("decimal", p, s)
    return None


def _bounded(precision: int, scale: int) -> tuple[str, int, int]:
    """Spark's ``adjustPrecisionScale``: past 38 digits, keep the integer digits and give up
    scale, down to 6 digits at least."""
    if precision <= MAX_PRECISION:
        return ("decimal", precision, scale)
    int_digits = precision - scale
    return ("decimal", MAX_PRECISION, max(MAX_PRECISION - int_digits, min(scale, 6)))


def _is_integer(t: str | tuple) -> bool:
    return t == "bigint" or (isinstance(t, tuple) and t[0] == "literal")


def _numeric(t: str | tuple) -> bool:
    return _is_integer(t) or t == "double" or isinstance(t, tuple) or t.startswith("decimal")


def _arithmetic(node: exp.Expression, a: str | tuple, b: str | tuple) -> str | tuple:
    if "null" in (a, b):
        return b if a == "null" else a
    if isinstance(node, exp.Div) and _is_integer(a) and _is_integer(b):
        return "double"
    if _is_integer(a) and _is_integer(b):
        return "bigint"
    if "double" in (a, b):
        return "double"
    (_, p1, s1), (_, p2, s2) = _decimal(a), _decimal(b)
    if isinstance(node, (exp.Add, exp.Sub)):
        scale = max(s1, s2)
        return _bounded(max(p1 - s1, p2 - s2) + scale + 1, scale)
    if isinstance(node, exp.Mul):
        return _bounded(p1 + p2 + 1, s1 + s2)
    if isinstance(node, exp.Div):
        scale = max(6, s1 + p2 + 1)
        return _bounded(p1 - s1 + s2 + scale, scale)
    scale = max(s1, s2)  # exp.Mod
    return _bounded(min(p1 - s1, p2 - s2) + scale, scale)


def _common(types: list, where: str, sql: str) -> str | tuple:
    """The type branches of ``CASE``, ``coalesce`` and the like widen to (Spark's
    ``findWiderTypeForDecimal``, where an integer literal is an int, decimal(10,0), not its
    digits as in arithmetic)."""
    present = [t for t in types if t != "null"]
    if not present:
        return "null"
    if all(t == present[0] for t in present):
        return present[0]
    if not all(_numeric(t) for t in present):
        raise ValueError(f"{where}: {sql!r} mixes {' and '.join(sorted({_ddl(t) for t in present}))} in one value")
    if "double" in present:
        return "double"
    if all(_is_integer(t) for t in present):
        return "bigint"
    decimals = [("decimal", 10 if t[1] <= 9 else 20, 0) if t[0] == "literal" else _decimal(t) for t in present]
    scale = max(s for _, _, s in decimals)
    return ("decimal", min(max(p - s for _, p, s in decimals) + scale, MAX_PRECISION), scale)


def branches_of(node: exp.Expression) -> list[exp.Expression]:
    """The expressions a CASE, IF, coalesce, nullif, greatest or least may return (a missing
    ELSE is a null): their types make the result's."""
    if isinstance(node, exp.Case):
        return [i.args["true"] for i in node.args["ifs"]] + [node.args.get("default") or exp.Null()]
    if isinstance(node, exp.If):
        return [node.args["true"], node.args.get("false") or exp.Null()]
    if isinstance(node, exp.Nullif):
        return [node.this, node.expression]
    return [node.this, *node.expressions]


def _type_of(node: exp.Expression, where: str, sql: str, known: dict[str, str]) -> str | tuple:
    if isinstance(node, exp.Paren):
        return _type_of(node.this, where, sql, known)
    if isinstance(node, exp.Column):
        return known[node.name.lower()]
    if isinstance(node, exp.Null):
        return "null"
    if isinstance(node, exp.Boolean) or isinstance(node, _PREDICATES):
        return "boolean"
    if isinstance(node, exp.Literal):
        if node.is_string:
            return "string"
        text = node.this.lower()
        if "e" in text:
            return "double"
        if "." not in text:
            return ("literal", len(text.lstrip("-").lstrip("0")) or 1)
        whole, fraction = text.lstrip("-").split(".")
        scale = len(fraction)
        return ("decimal", max(len(whole.lstrip("0")) + scale, scale, 1), scale)
    if isinstance(node, (exp.Cast, exp.TryCast)):
        to = node.to
        if to.this == exp.DataType.Type.DECIMAL:
            params = [int(p.this.this) for p in to.expressions] or [10, 0]
            return ("decimal", params[0], params[1] if len(params) > 1 else 0)
        name = to.this.name if hasattr(to.this, "name") else str(to.this)
        if name in _CAST_TYPES:
            return _CAST_TYPES[name]
        raise ValueError(f"{where}: {sql!r}: cast to {to.sql(dialect='spark')} is not a field type "
                         "(long, double, decimal(P,S), string, boolean)")
    if isinstance(node, (exp.Neg, exp.Abs)):
        inner = _type_of(node.this, where, sql, known)
        return "bigint" if isinstance(inner, tuple) and inner[0] == "literal" else inner
    if isinstance(node, (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod)):
        a, b = (_type_of(n, where, sql, known) for n in (node.this, node.expression))
        for t in (a, b):
            if t != "null" and not _numeric(t):
                raise ValueError(f"{where}: {sql!r}: arithmetic over a {_ddl(t)}")
        return _arithmetic(node, a, b)
    if isinstance(node, (exp.Case, exp.If, exp.Coalesce, exp.Nullif, exp.Greatest, exp.Least)):
        # nullif's type is its first argument's: the second is only compared with it
        branches = branches_of(node)[:1] if isinstance(node, exp.Nullif) else branches_of(node)
        return _common([_type_of(b, where, sql, known) for b in branches], where, sql)
    name = node.name if isinstance(node, exp.Anonymous) else node.sql_name() if isinstance(node, exp.Func) else node.key
    raise ValueError(f"{where}: {sql!r}: the type of {name.lower()} is not known before Spark runs; "
                     f"cast it, for example cast({node.sql(dialect='spark')} AS double)")
