"""Delta Lake I/O for every panes job: one table format, two writers.

With the Delta jars on the Spark classpath (a cluster, a laptop that can download them) tables
are read and written by delta-spark. Without them (CI, where only PyPI is reachable) delta-rs
commits what Spark writes: a Python data source lets every task write its own Parquet files,
and the driver commits them all in one Delta transaction. Either way a partition replace is a
single atomic commit, readers only ever see committed snapshots, and no table passes through
the driver; a write whose partitions another replaced after it started commits nothing
(``ConcurrentWriteError`` with delta-rs). ``PANES_DELTA_WRITER=delta-rs|delta-spark`` forces one
writer.

Partition filters are deltalake's tuples, ``(column, op, value)`` with op one of ``=, !=, <,
<=, >, >=, in, not in``, on partition columns only. Values may be strings, numbers, booleans,
dates or datetimes; they are compared as the partition column's type.
"""

from __future__ import annotations

import json
import math
import os
import time
import uuid
import weakref
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any
from urllib.parse import unquote, urlparse

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from deltalake import CommitProperties, DeltaTable, Schema
from deltalake.exceptions import CommitFailedError, DeltaError, TableNotFoundError
from deltalake.transaction import AddAction, create_table_with_add_actions
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.datasource import DataSource, DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.types import (
    ArrayType, BooleanType, DataType, DecimalType, FractionalType, IntegralType,
    MapType, StructField, StructType,
)

WRITER_ENV = "PANES_DELTA_WRITER"
DELTA_RS = "delta-rs"
DELTA_SPARK = "delta-spark"

_SOURCE_NAME = "panes_delta"
_OPS = ("=", "!=", "<", "<=", ">", ">=", "in", "not in")
_NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"
# Spark reads the data files itself, so tables whose files need Delta-aware decoding are refused.
_READABLE_FEATURES = {"timestampNtz", "v2Checkpoint", "vacuumProtocolCheck"}
_STATS_STRING_LIMIT = 32  # longer strings would need Delta's truncation rules; no min/max instead
_ROW_GROUP_ROWS = 1 << 19  # rows a task buffers per file before writing a row group
_META = "panes."  # prefix of the keys delta-rs commits carry, so the driver can find its commit
_COMMIT_ATTEMPTS = 5  # commits of one write, where others' commits to other partitions came first

Filter = tuple[str, str, Any]
_REGISTERED: weakref.WeakSet = weakref.WeakSet()  # sessions that know the panes_delta source


class MissingTableError(Exception):
    """A job's input has not been materialised yet: a clear, one-line operator error."""

    def __init__(self, path: str):
        name = os.path.basename(str(path).rstrip("/")) or str(path)
        super().__init__(f"no Delta table at {path}: materialise {name} first")
        self.path = str(path)


class ConcurrentWriteError(Exception):
    """Another write replaced partitions this one replaces while this one ran."""


class StampMismatchError(ValueError):
    """A write or read of a table whose rows were made under another stamp (``Target.stamp``)."""


# ---------------------------------------------------------------------------------------------
# public API


def table_exists(path: str) -> bool:
    return DeltaTable.is_deltatable(_uri(path))


def table_version(path: str) -> int:
    return _open(path).version()


def table_columns(path: str) -> list[str]:
    """The table's column names, partition columns last, from its Delta log."""
    return _spark_schema(_open(path)).fieldNames()


def column_max(path: str, column: str) -> Any:
    """The largest value of a column from the Delta log's file statistics: no data is read.

    None where the table is missing or has no statistics for the column. Timestamp statistics
    are widened to whole milliseconds, so this is for reporting (watermark lags), not joins.
    """
    if not table_exists(path):
        return None
    actions = pa.table(_open(path).get_add_actions(flatten=True))
    name = f"max.{column}"
    if name not in actions.column_names or actions.num_rows == 0:
        return None
    return pc.max(actions[name]).as_py()


def row_count(path: str, *, partition_filters: list[Filter] | None = None) -> int:
    """Rows in the matching partitions, from the Delta log's file statistics: no data is read.

    Files without statistics count as holding rows, so this is 0 only where the partitions
    are surely empty. A missing table raises MissingTableError.
    """
    actions = _add_actions(path, partition_filters)
    return sum(1 if records is None else records for records in actions["num_records"].to_pylist())


def commit_stamp(path: str, key: str) -> str | None:
    """The value of ``key`` in the stamp of the table's newest write that carries one
    (``Target.stamp``), among its last 50 commits; None where none does (a table written before
    stamps, or by another tool)."""
    for commit in _open(path).history(limit=50):
        if _META + key in commit:
            return str(commit[_META + key])
        try:
            user = json.loads(commit.get("userMetadata") or "null")  # a delta-spark write's
        except ValueError:
            continue
        if isinstance(user, dict) and key in user:
            return str(user[key])
    return None


def require_stamp(path: str, stamp: dict[str, str]) -> None:
    """Refuse a table whose newest stamp differs from ``stamp`` (keys it lacks pass)."""
    for key, value in stamp.items():
        held = commit_stamp(path, key)
        if held is not None and held != str(value):
            raise StampMismatchError(
                f"{path} holds rows made with {key} {held}, and this job's is {value}: a table holds "
                f"rows of one {key}. To change it, move the table (and the tables made from it) aside "
                f"and materialise every partition again (a backfill)")


def file_ranges(path: str, columns: list[str], *,
                partition_filters: list[Filter] | None = None) -> list[dict[str, tuple[Any, Any]] | None]:
    """Each matching file's ``(min, max)`` of ``columns`` from the Delta log's statistics: no
    data is read. Files without rows are left out; a file without statistics for one of the
    columns (or with only nulls in it) is None, so a caller that needs them all reads the data
    instead. A missing table raises MissingTableError.
    """
    actions = _add_actions(path, partition_filters)
    missing = [c for c in columns if f"min.{c}" not in actions.column_names]
    bounds = {c: (actions[f"min.{c}"].to_pylist(), actions[f"max.{c}"].to_pylist())
              for c in columns if c not in missing}
    ranges = []
    for i, records in enumerate(actions["num_records"].to_pylist()):
        if records == 0:
            continue
        known = {c: (low[i], high[i]) for c, (low, high) in bounds.items()}
        complete = not missing and records is not None and None not in (v for pair in known.values() for v in pair)
        ranges.append(known if complete else None)
    return ranges


def _add_actions(path: str, partition_filters: list[Filter] | None) -> pa.Table:
    """The Delta log's add actions (statistics flattened) of the files in the matching partitions."""
    table = _open(path)
    filters = _conjunction(partition_filters)
    _check_filter_columns(filters, table.metadata().partition_columns, path)
    # File names are unique (a UUID each); their folders are spelled differently in the log.
    names = {f.rsplit("/", 1)[-1] for f in table.file_uris(file_pruning_predicate=[filters] if filters else None)}
    actions = pa.table(table.get_add_actions(flatten=True))
    matching = [unquote(file.rsplit("/", 1)[-1]) in names for file in actions["path"].to_pylist()]
    return actions.filter(pa.array(matching, pa.bool_()))


def read_table(spark: SparkSession, path: str, *,
               partition_filters: list[Filter] | list[list[Filter]] | None = None,
               columns: list[str] | None = None) -> DataFrame:
    """The table's current snapshot, pruned to the matching partitions.

    Only files the snapshot references are read, so files of an uncommitted or failed write
    in the same folder stay invisible. A list of lists of filters is an OR of ANDs.
    """
    conjunctions = _dnf(partition_filters)
    if _choose_writer(spark) == DELTA_SPARK:
        if not table_exists(path):
            raise MissingTableError(path)
        df = spark.read.format("delta").load(_uri(path))
        if conjunctions:
            df = df.where(_sql_predicate(conjunctions))
        return df.select(*columns) if columns else df

    table = _open(path)
    _check_readable(table, path)
    schema = _spark_schema(table)
    partition_columns = table.metadata().partition_columns
    for conjunction in conjunctions:
        _check_filter_columns(conjunction, partition_columns, path)
    files = table.file_uris(file_pruning_predicate=conjunctions or None)
    if files:
        df = (spark.read.schema(schema).option("basePath", _base_path(table.table_uri))
              .parquet(*files).select(*schema.fieldNames()))
    else:
        df = spark.createDataFrame([], schema)
    return df.select(*columns) if columns else df


def vacuum(path: str, *, retain_hours: int | None = None, dry_run: bool = False,
           enforce_retention: bool = True) -> tuple[int, int]:
    """Delete the files of the table at ``path`` that no version within its retention needs.

    Those are the files a replace removed longer than ``retain_hours`` ago (default: the table's
    ``delta.deletedFileRetentionDuration``, 7 days), and files no version references that are
    older than that (what a killed run left: delta-rs' ``full`` vacuum). Returns the files and
    bytes deleted, or that would be with ``dry_run``. Below the table's own retention delta-rs
    refuses unless ``enforce_retention`` is off: a run still reading an older version, or still
    writing, could then lose its files.
    """
    table = _open(path)
    options = {"retention_hours": retain_hours, "enforce_retention_duration": enforce_retention, "full": True}
    try:
        doomed = table.vacuum(dry_run=True, **options)
        fs, root = pafs.FileSystem.from_uri(_uri(path))
        sizes = {p: info.size or 0 for p, info in
                 zip(doomed, fs.get_file_info([f"{root}/{unquote(p)}" for p in doomed]))}
        deleted = doomed if dry_run else table.vacuum(dry_run=False, **options)
    except DeltaError as err:
        if "retention period" in str(err):
            raise ValueError(f"{path}: {err}") from None
        raise
    return len(deleted), sum(sizes.get(p, 0) for p in deleted)


def replace_partitions(df: DataFrame, path: str, *, partition_by: list[str],
                       partition_filters: list[Filter]) -> dict:
    """Replace every row matching ``partition_filters`` with ``df``, in one atomic commit.

    Re-running a partition therefore gives the same contents, and a run that dies part-way
    leaves the previous version in place. Every row of ``df`` must fall inside the filters
    (an AND of partition-column filters; an empty list replaces the whole table): the rows are
    never collected to check, but the written files' partition values are, and a write with
    a file outside the filters is aborted. An empty ``df`` empties the matching partitions.
    The table is created, partitioned by ``partition_by``, if it does not exist.
    """
    target = _Target.of(None, path, df.columns, partition_by, partition_filters, df.columns)
    df = df.select(*target.columns)
    if _choose_writer(df.sparkSession) == DELTA_SPARK:
        return _replace_with_delta_spark(df, path, target.partition_by, target.filters)
    return _replace_with_delta_rs(df, [target], route=None)[0]


@dataclass(frozen=True)
class Target:
    """One table of a routed write: its path and columns, and the partitions it replaces."""

    path: str
    columns: list[str]
    partition_by: list[str]
    partition_filters: list[Filter]
    # What the rows were made with that every row of the table must share (the frames' bucket):
    # each commit carries it, and a write whose stamp differs from the table's is refused.
    stamp: dict[str, str] = field(default_factory=dict)


def replace_partitions_routed(df: DataFrame, route: str, targets: dict[str, Target]) -> dict[str, dict]:
    """``replace_partitions`` of several tables from one pass over ``df``.

    Each row goes to the target its ``route`` column names, with that target's columns; rows
    routed nowhere are an error. A job whose tables are all cut from one expensive result
    writes them this way instead of caching the result and reading it once per table. Each
    table gets its own atomic commit, in the order given, as separate ``replace_partitions``
    calls would; a target no row reaches has its matching partitions emptied.
    """
    resolved = [_Target.of(name, t.path, t.columns, t.partition_by, t.partition_filters, df.columns, t.stamp)
                for name, t in targets.items()]
    for t in resolved:
        if t.stamp and table_exists(t.path):
            require_stamp(t.path, t.stamp)
    if _choose_writer(df.sparkSession) == DELTA_SPARK:
        df = df.persist()  # delta-spark writes one table per pass: evaluate df once for all of them
        try:
            return {t.name: _replace_with_delta_spark(df.where(df[route] == t.name).select(*t.columns),
                                                      t.path, t.partition_by, t.filters, t.stamp)
                    for t in resolved}
        finally:
            df.unpersist()
    written = _replace_with_delta_rs(df.select(*{c: None for t in resolved for c in t.columns}, route),
                                     resolved, route=route)
    return {t.name: w for t, w in zip(resolved, written)}


# ---------------------------------------------------------------------------------------------
# paths, filters, schemas


def _uri(path: str) -> str:
    path = str(path)
    return path.rstrip("/") if "://" in path else os.path.abspath(path)


def _base_path(table_uri: str) -> str:
    """The table root spelled the way ``file_uris`` spells the files (local: a plain path)."""
    parsed = urlparse(table_uri)
    if parsed.scheme == "file":
        return unquote(parsed.path).rstrip("/") or "/"
    return table_uri.rstrip("/")


def _open(path: str):
    try:
        return DeltaTable(_uri(path))
    except TableNotFoundError:
        raise MissingTableError(path) from None


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


def _conjunction(filters: list[Filter] | None) -> list[tuple[str, str, str | list[str]]]:
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


def _dnf(filters: list[Filter] | list[list[Filter]] | None) -> list[list[tuple]]:
    if not filters:
        return []
    if all(isinstance(f, list) for f in filters):
        return [_conjunction(c) for c in filters if c]
    return [_conjunction(filters)]


def _check_filter_columns(filters: list[tuple], partition_columns: list[str], path: str) -> None:
    outside = sorted({c for c, _, _ in filters} - set(partition_columns))
    if outside:
        raise ValueError(f"partition filters on {outside} for {path}, whose partition columns are "
                         f"{list(partition_columns)}: filter on partition columns only")


def _sql_predicate(conjunctions: list[list[tuple]]) -> str:
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


def _spark_schema(table) -> StructType:
    """The table's schema with partition columns last, as Spark's Parquet reader returns them."""
    fields = from_arrow_schema(pa.schema(table.schema().to_arrow())).fields
    by_name = {f.name: f for f in fields}
    partitions = table.metadata().partition_columns
    return StructType([f for f in fields if f.name not in partitions] + [by_name[p] for p in partitions])


def _check_readable(table, path: str) -> None:
    protocol = table.protocol()
    features = set(protocol.reader_features or [])
    if protocol.min_reader_version == 2 or features - _READABLE_FEATURES:
        needs = sorted(features - _READABLE_FEATURES) or ["columnMapping"]
        raise ValueError(f"Delta table at {path} uses reader features {needs} that the delta-rs "
                         "path cannot read through Spark's Parquet reader; read it with delta-spark")


def _nullable(data_type: DataType) -> DataType:
    """Nullable all the way down, as delta-spark creates tables, so a column that happens to
    be non-null in one run does not change the table's schema in the next."""
    if isinstance(data_type, StructType):
        return StructType([StructField(f.name, _nullable(f.dataType), True, f.metadata)
                           for f in data_type.fields])
    if isinstance(data_type, ArrayType):
        return ArrayType(_nullable(data_type.elementType), True)
    if isinstance(data_type, MapType):
        return MapType(_nullable(data_type.keyType), _nullable(data_type.valueType), True)
    return data_type


def _arrow_schema(schema: StructType):
    return to_arrow_schema(_nullable(schema), timezone="UTC")


def _types_only(node: Any) -> Any:
    """A Delta schema's JSON without nullability or field metadata, for comparing types."""
    if isinstance(node, dict):
        return {k: _types_only(v) for k, v in node.items()
                if k not in ("nullable", "containsNull", "valueContainsNull", "metadata")}
    if isinstance(node, list):
        return [_types_only(v) for v in node]
    return node


def _check_compatible(table, schema: StructType, partition_by: list[str], path: str) -> None:
    """delta-rs would silently rewrite the table's schema and partitioning; refuse instead."""
    existing_partitions = list(table.metadata().partition_columns)
    if existing_partitions != partition_by:
        raise ValueError(f"{path} is partitioned by {existing_partitions}, not {partition_by}")

    def columns(delta_schema) -> dict:
        return {f["name"]: _types_only(f["type"]) for f in json.loads(delta_schema.to_json())["fields"]}

    old, new = columns(table.schema()), columns(Schema.from_arrow(_arrow_schema(schema)))
    if old != new:
        diff = sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k))
        raise ValueError(f"schema of the data written to {path} differs from the table's in {diff}: "
                         f"table {[(k, old.get(k)) for k in diff]}, data {[(k, new.get(k)) for k in diff]}. "
                         "A table keeps the columns it was created with (its other partitions have "
                         "them): to write these, move the table aside and materialise its partitions again")


# ---------------------------------------------------------------------------------------------
# writer choice


def _delta_spark_available(spark: SparkSession) -> bool:
    try:
        return bool(spark._jvm.org.apache.spark.util.Utils.classIsLoadable("io.delta.tables.DeltaTable"))
    except Exception:  # Spark Connect, or no JVM gateway: only the delta-rs path can work
        return False


def _choose_writer(spark: SparkSession) -> str:
    forced = os.environ.get(WRITER_ENV, "").strip()
    if forced not in ("", DELTA_RS, DELTA_SPARK):
        raise ValueError(f"{WRITER_ENV}={forced!r}: expected {DELTA_RS!r} or {DELTA_SPARK!r}")
    if forced == DELTA_RS:
        return DELTA_RS
    available = _delta_spark_available(spark)
    if forced == DELTA_SPARK and not available:
        raise RuntimeError(f"{WRITER_ENV}=delta-spark but io.delta.tables.DeltaTable is not on the Spark "
                           "classpath: add the delta-spark jars (spark.jars.packages) or unset it")
    return DELTA_SPARK if available else DELTA_RS


# ---------------------------------------------------------------------------------------------
# delta-spark


def _replace_with_delta_spark(df: DataFrame, path: str, partition_by: list[str],
                              filters: list[tuple], stamp: dict[str, str] | None = None) -> dict:
    from delta.tables import DeltaTable as SparkDeltaTable
    from pyspark.sql import functions as F

    uri = _uri(path)
    user_metadata = json.dumps({"writeId": uuid.uuid4().hex, **(stamp or {})})  # finds the commit, and stamps it
    writer = df.write.format("delta").mode("overwrite").option("userMetadata", user_metadata)
    if filters:
        writer = writer.option("replaceWhere", _sql_predicate([filters]))
    writer.partitionBy(*partition_by).save(uri)
    commit = (SparkDeltaTable.forPath(df.sparkSession, uri).history(20)
              .where(F.col("userMetadata") == user_metadata).select("version", "operationMetrics").first())
    metrics = commit["operationMetrics"] or {}
    return {"rows_written": int(metrics.get("numOutputRows", 0)),
            "files_written": int(metrics.get("numFiles", 0)),
            "writer": DELTA_SPARK, "table_version": int(commit["version"])}


# ---------------------------------------------------------------------------------------------
# delta-rs: Spark tasks write Parquet, the driver commits


@dataclass(frozen=True)
class _Target:
    """A table one write replaces partitions of, validated: ``columns`` with partitions last."""

    name: str | None
    path: str
    columns: list[str]
    partition_by: list[str]
    filters: list[tuple]
    stamp: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, name: str | None, path: str, columns: list[str], partition_by: list[str],
           partition_filters: list[Filter], available: list[str], stamp: dict[str, str] | None = None) -> _Target:
        missing = [c for c in [*columns, *partition_by] if c not in available]
        if missing:
            raise ValueError(f"columns {missing} of {path} are not columns of the data written")
        filters = _conjunction(partition_filters)
        _check_filter_columns(filters, partition_by, path)
        # Spark puts partition columns last when it reads; writing them last keeps one column order.
        ordered = [c for c in columns if c not in partition_by] + list(partition_by)
        return cls(name, path, ordered, list(partition_by), filters, {k: str(v) for k, v in (stamp or {}).items()})


def _replace_with_delta_rs(df: DataFrame, targets: list[_Target], route: str | None) -> list[dict]:
    """One Spark write feeding every target (by ``route``, or all rows to the only target)."""
    fields = {f.name: f for f in df.schema.fields}
    specs = [_write_spec(t, StructType([fields[c] for c in t.columns])) for t in targets]
    if df.sparkSession not in _REGISTERED:
        df.sparkSession.dataSource.register(_PanesDeltaSource)
        _REGISTERED.add(df.sparkSession)
    df.write.format(_SOURCE_NAME).mode("overwrite").option("spec", json.dumps(
        {"route": route, "targets": specs})).save()
    return [_written(t.path, spec["write_id"]) for t, spec in zip(targets, specs)]


def _write_spec(target: _Target, schema: StructType) -> dict:
    """What the tasks and the commit of one target's write need, as JSON. ``read_version`` is
    the table's version as the write starts: the commit compares its partitions then and now."""
    table = _open(target.path) if table_exists(target.path) else None
    if table is not None:
        _check_compatible(table, schema, target.partition_by, target.path)
    return {"name": target.name, "uri": _uri(target.path), "partition_by": target.partition_by,
            "filters": target.filters, "write_id": uuid.uuid4().hex, "schema": schema.json(), "stamp": target.stamp,
            "read_version": None if table is None else table.version()}


def _written(path: str, write_id: str) -> dict:
    # commit() ran in a Python worker, not here: find its commit by the id it carries.
    for commit in _open(path).history(limit=50):
        if commit.get(_META + "writeId") == write_id:
            return {"rows_written": int(commit[_META + "rowsWritten"]),
                    "files_written": int(commit[_META + "filesWritten"]),
                    "writer": DELTA_RS, "table_version": int(commit["version"])}
    raise RuntimeError(f"write {write_id} to {path} finished but its commit is not in the table's history")


@dataclass
class _Written(WriterCommitMessage):
    adds: list[dict] = field(default_factory=list)


class _PanesDeltaSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return _SOURCE_NAME

    def writer(self, schema: StructType, overwrite: bool) -> _TaskWriter:
        return _TaskWriter(json.loads(self.options["spec"]), schema)


class _TaskWriter(DataSourceArrowWriter):
    def __init__(self, spec: dict, schema: StructType):
        self.route = spec["route"]
        self.targets = spec["targets"]
        self.schemas = [StructType.fromJson(json.loads(t["schema"])) for t in self.targets]

    def write(self, iterator) -> _Written:
        files = [_TaskFiles(t, s) for t, s in zip(self.targets, self.schemas)]
        try:
            for batch in iterator:
                if self.route is None:
                    files[0].append(batch)
                    continue
                routes = batch.column(self.route)
                routed = 0
                for target, task_files in zip(self.targets, files):
                    rows = batch.filter(pc.equal(routes, target["name"]))
                    routed += rows.num_rows
                    task_files.append(rows)
                if routed != batch.num_rows:
                    unknown = pc.unique(pc.filter(routes, pc.invert(pc.is_in(routes, pa.array(
                        [t["name"] for t in self.targets])).fill_null(False)))).to_pylist()
                    raise ValueError(f"rows routed by {self.route!r} to {unknown}, which are none of the "
                                     f"targets {[t['name'] for t in self.targets]}")
            return _Written([{**a, "target": i} for i, f in enumerate(files) for a in f.close()])
        except BaseException:
            for task_files in files:
                task_files.discard()
            raise

    def commit(self, messages: list[_Written | None]) -> None:
        """Every table's commit, in order; each is checked first, so that one refused commits
        nothing (but for a race of milliseconds, which ``abort`` then survives)."""
        adds = [a for m in messages if m is not None for a in m.adds]
        writes = [(_Commit(target, schema), [a for a in adds if a["target"] == i])
                  for i, (target, schema) in enumerate(zip(self.targets, self.schemas))]
        for write, its_adds in writes:
            write.check(its_adds)
        for write, its_adds in writes:
            write.commit(its_adds)

    def abort(self, messages: list[_Written | None]) -> None:
        """Delete the write's files, but those a table holds: a routed write's first commits
        stand if a later one failed."""
        roots = [pafs.FileSystem.from_uri(t["uri"]) for t in self.targets]
        held = [_file_names(t["uri"]) for t in self.targets]
        for add in (a for m in messages if m is not None for a in m.adds):
            if add["path"].rsplit("/", 1)[-1] in held[add["target"]]:
                continue
            fs, root = roots[add["target"]]
            try:
                fs.delete_file(f"{root}/{add['path']}")
            except (FileNotFoundError, OSError):
                pass


def _file_names(uri: str) -> set[str]:
    """The names of the files ``uri``'s table holds now."""
    table = DeltaTable(uri) if DeltaTable.is_deltatable(uri) else None
    return {path.rsplit("/", 1)[-1] for path in _partition_files(table, [])}


class _Commit:
    """The one place a delta-rs write becomes visible.

    Runs overlap: a backfill beside the daily schedule, a late firing beside a backfill. As
    with delta-spark, a write fails with ``ConcurrentWriteError``, committing nothing, if
    another replaced its partitions after it started (the later commit of two runs of a day
    is not always the one that read the newer events), and commits where others changed other
    partitions only. delta-rs itself refuses an overwrite whenever any commit came between
    opening the table and committing, so such a refusal is retried on the newer version.
    """

    def __init__(self, spec: dict, schema: StructType):
        self.spec, self.schema, self.uri = spec, schema, spec["uri"]
        self.filters = [tuple(f) for f in spec["filters"]]  # JSON made them lists; delta-rs wants tuples
        started = spec["read_version"]
        self.at_start = _partition_files(None if started is None else DeltaTable(self.uri, version=started),
                                         self.filters)

    def check(self, adds: list[dict]) -> None:
        """Refuse, before any table of the write commits, rows outside the partitions it
        replaces, and partitions another write replaced meanwhile."""
        types = {f.name: f.dataType for f in self.schema.fields}
        for add in adds:
            if not _inside(add["partition_values"], self.filters, types):
                raise ValueError(f"rows with partition values {add['partition_values']} fall outside "
                                 f"partition_filters {self.filters} of {self.uri}; nothing was committed")
        self._latest()

    def _latest(self) -> DeltaTable | None:
        """The table as it is now, unless another write replaced this one's partitions since
        this one started."""
        table = DeltaTable(self.uri) if DeltaTable.is_deltatable(self.uri) else None
        if _partition_files(table, self.filters) != self.at_start:
            where = f"partitions {self.filters}" if self.filters else "the whole table"
            started = self.spec["read_version"]
            then = "no table" if started is None else f"version {started}"
            now = "no table" if table is None else f"version {table.version()}"
            raise ConcurrentWriteError(
                f"another write replaced {where} of {self.uri} after this write started (at {then}, now "
                f"{now}); nothing of this write was committed: run it again once the other has finished")
        return table

    def commit(self, adds: list[dict]) -> None:
        partition_by, filters = self.spec["partition_by"], self.filters
        actions = [AddAction(path=a["path"], size=a["size"], partition_values=a["partition_values"],
                             modification_time=a["modification_time"], data_change=True, stats=a["stats"])
                   for a in adds]
        properties = CommitProperties(custom_metadata={
            _META + "writeId": self.spec["write_id"],
            _META + "rowsWritten": sum(a["rows"] for a in adds),
            _META + "filesWritten": len(adds),
            **{_META + k: v for k, v in self.spec["stamp"].items()},
        })
        for attempt in range(1, _COMMIT_ATTEMPTS + 1):
            table = self._latest()
            try:
                if table is not None:
                    table.create_write_transaction(actions, mode="overwrite", schema=table.schema(),
                                                   partition_by=partition_by, partition_filters=filters or None,
                                                   commit_properties=properties)
                else:
                    schema = Schema.from_arrow(_arrow_schema(self.schema))
                    create_table_with_add_actions(self.uri, schema, actions, mode="error",
                                                  partition_by=partition_by, commit_properties=properties)
                return
            except DeltaError as err:
                # A commit that came first, or (creating the table) a table that appeared meanwhile.
                raced = (isinstance(err, CommitFailedError) if table is not None
                         else DeltaTable.is_deltatable(self.uri))
                if not raced or attempt == _COMMIT_ATTEMPTS:
                    raise
                time.sleep(0.05 * attempt)  # others commit in milliseconds


def _partition_files(table: DeltaTable | None, filters: list[tuple]) -> set[str]:
    """The files a replace of ``filters`` would remove from ``table`` as it is."""
    if table is None:
        return set()
    return set(table.file_uris(file_pruning_predicate=[filters] if filters else None))


def _inside(values: dict[str, str | None], filters: list[tuple], types: dict[str, DataType]) -> bool:
    def key(text: str | None, data_type: DataType) -> Any:
        if text is None:
            return None
        if isinstance(data_type, IntegralType):
            return int(text)
        if isinstance(data_type, FractionalType) and not isinstance(data_type, DecimalType):
            return float(text)
        if isinstance(data_type, DecimalType):
            return Decimal(text)
        if isinstance(data_type, BooleanType):
            return text.lower()
        return text  # dates and timestamps: Delta's spelling sorts chronologically

    compare = {"=": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
               "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}
    for column, op, expected in filters:
        data_type = types[column]
        actual = key(values.get(column), data_type)
        if actual is None:  # SQL: a null partition value matches no comparison
            return False
        if op in ("in", "not in"):
            hit = any(actual == key(e, data_type) for e in expected)
            if hit != (op == "in"):
                return False
        elif not compare[op](actual, key(expected, data_type)):
            return False
    return True


# ---------------------------------------------------------------------------------------------
# one task's files


def _partition_value(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bytes):
        raise ValueError("binary partition columns are not supported")
    return _literal(value)


_HIVE_ESCAPED = set('"#%\'*/:=?\\\x7f{[]^') | {chr(c) for c in range(1, 32)}


def _hive_escape(text: str) -> str:
    """Spark's partition-folder escaping, so its partition discovery reads the value back."""
    return "".join(f"%{ord(ch):02X}" if ch in _HIVE_ESCAPED else ch for ch in text)


class _TaskFiles:
    """One open Parquet file per partition a task sees; the partition columns stay out of the
    files, as Delta keeps them in the log."""

    def __init__(self, spec: dict, schema: StructType):
        self.fs, self.root = pafs.FileSystem.from_uri(spec["uri"])
        self.partition_by = spec["partition_by"]
        self.data_columns = [f.name for f in schema.fields if f.name not in self.partition_by]
        arrow = _arrow_schema(schema)
        self.file_schema = pa.schema([arrow.field(c) for c in self.data_columns])
        self.task = _task_id()
        self.open: dict[tuple, _OpenFile] = {}
        self.done: list[dict] = []

    def append(self, batch) -> None:
        table = pa.Table.from_batches([batch])
        if table.num_rows == 0:
            return
        for key, rows in self._split(table):
            if key not in self.open:
                self.open[key] = self._new_file(key)
            self.open[key].write(rows.select(self.data_columns).cast(self.file_schema))
        if sum(f.pending_rows for f in self.open.values()) >= _ROW_GROUP_ROWS:
            for file in self.open.values():  # a task holds at most one row group's worth, however
                file.flush()                 # many partitions it writes

    def _split(self, table):
        if not self.partition_by:
            yield (), table
            return
        single = self._single_key(table)
        if single is not None:  # the usual case (one day per write): no group_by, no take
            yield single, table
            return
        index = table.select(self.partition_by).append_column("_row", pa.array(np.arange(table.num_rows)))
        groups = index.group_by(self.partition_by, use_threads=False).aggregate([("_row", "list")])
        rows = groups.column("_row_list")
        for i in range(groups.num_rows):
            key = tuple(groups.column(c)[i].as_py() for c in self.partition_by)
            yield key, table.take(rows[i].values)

    def _single_key(self, table) -> tuple | None:
        key = []
        for c in self.partition_by:
            column = table.column(c)
            if column.null_count:
                return None
            low, high = pc.min_max(column).values()
            if low != high:
                return None
            key.append(low.as_py())
        return tuple(key)

    def _new_file(self, key: tuple) -> _OpenFile:
        values = {c: _partition_value(v) for c, v in zip(self.partition_by, key)}
        folders = [f"{_hive_escape(c)}={_NULL_PARTITION if v is None else _hive_escape(v)}"
                   for c, v in values.items()]
        relative = "/".join([*folders, f"part-{self.task:05d}-{uuid.uuid4()}.c000.snappy.parquet"])
        return _OpenFile(self.fs, f"{self.root}/{relative}", relative, values, self.file_schema)

    def close(self) -> list[dict]:
        while self.open:
            _, file = self.open.popitem()
            self.done.append(file.close())
        return self.done

    def discard(self) -> None:
        paths = [f.full_path for f in self.open.values()] + [f"{self.root}/{d['path']}" for d in self.done]
        for file in self.open.values():
            file.abandon()
        for full_path in paths:
            try:
                self.fs.delete_file(full_path)
            except OSError:
                pass


class _OpenFile:
    """A Parquet file written in row groups of up to ``_ROW_GROUP_ROWS``, flushed by its task:
    Spark hands the task Arrow batches of 10,000 rows, and a row group each made files 1.5
    times larger and slower to write and read (bench/writer_cost.py)."""

    def __init__(self, fs, full_path: str, relative: str, partition_values: dict, schema):
        folder = full_path.rsplit("/", 1)[0]
        fs.create_dir(folder, recursive=True)
        self.fs, self.full_path, self.relative = fs, full_path, relative
        self.partition_values = partition_values
        self.stream = fs.open_output_stream(full_path)
        self.writer = pq.ParquetWriter(self.stream, schema, compression="snappy")
        self.stats = _Stats(schema)
        self.pending: list = []
        self.pending_rows = 0

    def write(self, table) -> None:
        self.pending.append(table)
        self.pending_rows += table.num_rows

    def flush(self) -> None:
        if self.pending:
            table = pa.concat_tables(self.pending)
            self.pending, self.pending_rows = [], 0
            self.writer.write_table(table, row_group_size=_ROW_GROUP_ROWS)
            self.stats.update(table)

    def close(self) -> dict:
        self.flush()
        self.writer.close()
        self.stream.close()
        return {"path": self.relative,  # as stored: delta-rs URI-encodes it in the log itself
                "size": self.fs.get_file_info(self.full_path).size,
                "partition_values": self.partition_values,
                "modification_time": int(time.time() * 1000),
                "rows": self.stats.rows,
                "stats": self.stats.to_json()}

    def abandon(self) -> None:
        for closeable in (self.writer, self.stream):
            try:
                closeable.close()
            except Exception:
                pass


class _Stats:
    """Delta's per-file statistics (numRecords, nullCount, minValues, maxValues), so readers
    can skip files; min/max only where they are exact and simple to spell."""

    def __init__(self, schema):
        self.rows = 0
        self.nulls: dict[str, int] = {}
        self.low: dict[str, Any] = {}
        self.high: dict[str, Any] = {}
        self.bounded: set[str] = set()
        for f in schema:
            if pa.types.is_nested(f.type):
                continue
            self.nulls[f.name] = 0
            t = f.type
            if (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_date32(t)
                    or pa.types.is_timestamp(t) or pa.types.is_string(t) or pa.types.is_large_string(t)):
                self.bounded.add(f.name)

    def update(self, table) -> None:
        self.rows += table.num_rows
        for name in list(self.nulls):
            column = table.column(name)
            self.nulls[name] += column.null_count
            if name not in self.bounded or column.null_count == len(column):
                continue
            if pa.types.is_floating(column.type) and pc.any(pc.is_nan(column)).as_py():
                self.bounded.discard(name)  # NaN sorts above everything in Spark: no safe max
                continue
            low, high = (v.as_py() for v in pc.min_max(column).values())
            self.low[name] = low if name not in self.low else min(self.low[name], low)
            self.high[name] = high if name not in self.high else max(self.high[name], high)

    def to_json(self) -> str:
        low, high = {}, {}
        for name in self.bounded & self.low.keys():
            a, b = _stat(self.low[name], up=False), _stat(self.high[name], up=True)
            if a is not None and b is not None:
                low[name], high[name] = a, b
        return json.dumps({"numRecords": self.rows, "minValues": low, "maxValues": high,
                           "nullCount": self.nulls}, separators=(",", ":"))


def _stat(value: Any, *, up: bool) -> Any:
    """A bound as Delta stats spell it; timestamps widened to whole milliseconds, which is all
    some readers parse."""
    if isinstance(value, datetime):
        floor = value.replace(microsecond=value.microsecond // 1000 * 1000)
        if up and floor != value:
            floor += timedelta(milliseconds=1)
        text = floor.replace(tzinfo=None).isoformat(timespec="milliseconds")
        return text + "Z" if value.tzinfo is not None else text
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        return value if len(value) <= _STATS_STRING_LIMIT else None
    return value


def _task_id() -> int:
    from pyspark import TaskContext

    context = TaskContext.get()
    return context.partitionId() if context is not None else 0
