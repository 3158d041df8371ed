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
    if not isinstance(sql, str) or not sql.strip():
        raise ValueError(f"{where}: expected a Spark SQL expression as a string, got {sql!r}")
    try:
        parsed = [e for e in sqlglot.parse(sql, dialect="spark") if e is not None]
    except sqlglot.errors.SqlglotError as err:
        raise ValueError(f"{where}: {sql!r} does not parse as Spark SQL: {_first_line(err)}") from None
    if len(parsed) != 1:
        raise ValueError(f"{where}: {sql!r} is {len(parsed)} statements, not one expression")
    expression = parsed[0]
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
