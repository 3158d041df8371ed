"""The online store's side in PostgreSQL: connecting without leaking a credential, the store's
table and its marks table (``<table>_as_of``: each window's latest day loaded), their columns
and types, and refusing a table another configuration made."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

import psycopg2
from psycopg2 import sql

from jobs.errors import OnlineStoreError, StoreMismatchError
from windowing_core.config import PipelineConfig
from windowing_core.online import PASSWORD_VARIABLE, OnlineSpec

_POSTGRES_TYPES = {"bigint": "bigint", "int": "integer", "double": "double precision", "float": "real",
                   "string": "text", "boolean": "boolean", "timestamp": "timestamp with time zone", "date": "date",
                   "binary": "bytea"}


def postgres_type(ddl: str) -> str:
    """The PostgreSQL type of a Spark DDL type: decimals keep their precision and scale, arrays
    and maps are ``jsonb`` (an application reads them as JSON)."""
    if ddl.startswith("decimal"):
        return ddl.replace("decimal", "numeric").replace(" ", "")
    if ddl.startswith(("array<", "map<", "struct<")):
        return "jsonb"
    return _POSTGRES_TYPES[ddl]


def store_columns(config: PipelineConfig) -> list[tuple[str, str]]:
    """The store's columns with their PostgreSQL types, in stored order: (key, window) is the
    primary key; a composite key's fields follow ``key`` (its JSON array), one column each, for
    an application's ``WHERE user_id = ... AND country = ...``."""
    return [("key", "text"), *[(f, "text") for f in config.key_fields], ("window", "text"),
            ("window_start", "timestamp with time zone"),
            ("window_end", "timestamp with time zone"), ("as_of", "timestamp with time zone"),
            ("event_count", "bigint"), *[(a.name, postgres_type(a.output_type)) for a in config.aggregations]]


@contextmanager
def connected(spec: OnlineSpec, password: str | None = None) -> Iterator[Any]:
    """A connection to the store, with the password from ``PANES_ONLINE_PASSWORD``; an error
    that cannot connect is one line without any credential."""
    password = os.environ.get(PASSWORD_VARIABLE) if password is None else password
    try:
        connection = psycopg2.connect(spec.url, password=password or None, connect_timeout=10,
                                      application_name="panes")
    except psycopg2.OperationalError as err:
        raise OnlineStoreError(f"cannot connect to the online store {store_name(spec)}: {first_line(err)}") from None
    try:
        yield connection
    finally:
        connection.close()


def store_name(spec: OnlineSpec) -> str:
    """The store as messages and metadata name it: host, port, database and table; no user or password."""
    parts = urlsplit(spec.url)
    return f"{parts.hostname or 'localhost'}:{parts.port or 5432}{parts.path or '/'} table {spec.table}"


def first_line(err: Exception) -> str:
    return str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__


def table_identifier(spec: OnlineSpec) -> sql.Composed:
    schema, table = spec.schema_and_table
    return sql.SQL(".").join([sql.Identifier(schema), sql.Identifier(table)]) if schema else sql.Identifier(table)


def identifiers(columns: list[tuple[str, str]]) -> sql.Composed:
    return sql.SQL(", ").join(sql.Identifier(c) for c, _ in columns)


def marks_table(spec: OnlineSpec) -> str:
    """The table beside the store that says, per window, the latest day loaded (its ``as_of``)."""
    return f"{spec.table}_as_of"


def marks_identifier(spec: OnlineSpec) -> sql.Composed:
    return table_identifier(OnlineSpec(spec.url, marks_table(spec)))


def ensure_tables(cursor: Any, spec: OnlineSpec, config: PipelineConfig) -> None:
    """Create the store's tables where they are missing; refuse a store whose columns this
    configuration does not write (another configuration's), before anything is written."""
    columns = store_columns(config)
    # Only where missing: CREATE, even IF NOT EXISTS, needs the right to create in the schema,
    # which a user of tables an administrator made need not have.
    cursor.execute("SELECT to_regclass(%s), to_regclass(%s)", [table_identifier(spec).as_string(cursor),
                                                               marks_identifier(spec).as_string(cursor)])
    table, marks = cursor.fetchone()
    if table is None:
        # Every row changes every day (its as_of at least): with half of each page free, the
        # update of a row finds room beside it and leaves the index alone (a HOT update).
        # Measured at 673,074 rows, four daily loads: the upsert took 4.6, 7.4, 9.0, 9.1 s at
        # PostgreSQL's default fill and 3.1, 2.1, 2.2, 2.3 s at half (/work/scratch/prof_online2.py).
        cursor.execute(sql.SQL("CREATE TABLE {} ({}, PRIMARY KEY (key, \"window\")) WITH (fillfactor = 50)").format(
            table_identifier(spec), sql.SQL(", ").join(sql.SQL("{} {}").format(sql.Identifier(c), sql.SQL(t))
                                                       for c, t in columns)))
    if marks is None:
        cursor.execute(sql.SQL("CREATE TABLE {} (\"window\" text PRIMARY KEY, "
                               "as_of timestamp with time zone NOT NULL, day date NOT NULL, "
                               "loaded_at timestamp with time zone NOT NULL DEFAULT now())"
                               ).format(marks_identifier(spec)))
    cursor.execute("SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute "
                   "WHERE attrelid = %s::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
                   [table_identifier(spec).as_string(cursor)])
    held = [tuple(row) for row in cursor.fetchall()]
    if sorted(held) != sorted(columns):
        def spelled(cs: list[tuple[str, str]]) -> str:
            return ", ".join(f"{c} {t}" for c, t in cs)
        raise StoreMismatchError(f"online table {spec.table} has columns ({spelled(held)}) but this configuration "
                                 f"writes ({spelled(columns)}): drop the table, or name another online.table, "
                                 "and load the days again")


def held_marks(cursor: Any, spec: OnlineSpec) -> dict[str, datetime]:
    cursor.execute(sql.SQL("SELECT \"window\", as_of FROM {}").format(marks_identifier(spec)))
    return dict(cursor.fetchall())
