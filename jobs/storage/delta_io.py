"""Delta Lake reads for every panes job, and what the log alone can answer, with delta-rs.

Every write is Spark's own Delta writer (``jobs.storage.delta_write``): a partition replace is
``mode("overwrite")`` with ``replaceWhere`` on the partition predicate, one atomic commit, so
re-running a partition gives the same contents and a run killed part-way leaves the previous
version readable. Data is read
through Spark (``format("delta")``). What the Delta log answers without reading data (does the
table exist, its version, rows per partition, a column's bounds, the stamp of its last write) is
asked of delta-rs, which reads the same log with no Spark session at hand: Dagster's metadata,
the UI's column schema, checks on statistics. Any Delta reader reads every table.

Concurrent writers lose nothing. A Delta commit is a put-if-absent of the log's next entry, and
delta-spark's log stores make it atomic only inside one driver: on a local or mounted file system
HDFSLogStore synchronises its exists-then-rename within its JVM, and on S3
S3SingleDriverLogStore within its driver. Two runs (a late firing beside a backfill, each with its
own driver) could overwrite each other's entry. So on a file system every write holds an
exclusive lock on its table for its whole length (``fcntl.lockf`` on ``.<table>.lock`` beside
it; the operating system releases it when the process dies, so a killed run never leaves a
table locked). Object storage has no such lock: there Dagster's pool lets one run at a time
write the lakehouse (orchestration), and writers outside Dagster need Delta's
``S3DynamoDBLogStore`` (docs/guides/cluster-and-object-storage.md).

Partition filters are deltalake's tuples, ``(column, op, value)`` with op one of ``=, !=, <,
<=, >, >=, in, not in``, on partition columns only. Values may be strings, numbers, booleans,
dates or datetimes; they are compared as the partition column's type.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
from deltalake import DeltaTable, Schema
from deltalake.exceptions import DeltaError, TableNotFoundError
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.types import ArrayType, DataType, MapType, StructField, StructType

from jobs.errors import (
    DamagedTableError, IncompleteWriteError, MissingTableError, StampMismatchError,
)

_OPS = ("=", "!=", "<", "<=", ">", ">=", "in", "not in")

Filter = tuple[str, str, Any]


# ---------------------------------------------------------------------------------------------
# what the log answers (delta-rs)


def table_exists(path: str) -> bool:
    """Whether a Delta table is at ``path``; a folder that is one no longer is an error."""
    _check_log(path)
    return DeltaTable.is_deltatable(_rs_uri(path), storage_options=_storage_options(path))


def holds_delta_log(path: str) -> bool:
    """Whether ``path`` is a Delta table, without refusing a folder of plain data files (a
    Parquet spine): for inputs that may be either."""
    return DeltaTable.is_deltatable(_rs_uri(path), storage_options=_storage_options(path))


def table_version(path: str) -> int:
    return open_table(path).version()


def table_columns(path: str) -> list[str]:
    """The table's column names, partition columns last, from its Delta log."""
    return _spark_schema(open_table(path)).fieldNames()


def column_max(path: str, column: str) -> Any:
    """The largest value of a column from the Delta log's file statistics: no data is read.

    None where the table is missing or has no statistics for the column. Timestamp statistics
    are widened to whole milliseconds, so this is for reporting (watermark lags), not joins.
    """
    if not table_exists(path):
        return None
    actions = pa.table(open_table(path).get_add_actions(flatten=True))
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


def partition_row_counts(path: str, column: str, *,
                         partition_filters: list[Filter] | None = None) -> dict[str, int] | None:
    """Rows per value of the partition column ``column`` in the matching partitions, exactly,
    from the log's file statistics (no data read); None where the log cannot say exactly (a file
    without a row count, or with a deletion vector), so the caller counts with Spark instead."""
    actions = _add_actions(path, partition_filters)
    dv = [c for c in actions.column_names if c.startswith("deletion_vector")]
    if any(actions[c].null_count < actions.num_rows for c in dv):
        return None
    records = actions["num_records"].to_pylist()
    if any(n is None for n in records):
        return None
    counts: dict[str, int] = {}
    for value, n in zip(actions[f"partition.{column}"].to_pylist(), records):
        counts[str(value)] = counts.get(str(value), 0) + n
    return counts


def commit_stamp(path: str, key: str) -> str | None:
    """The value of ``key`` in the stamp of the table's newest write that carries one
    (``Target.stamp``), among its last 50 commits; None where none does (a table written before
    stamps, or by another tool)."""
    for commit in open_table(path).history(limit=50):
        user = _user_metadata(commit)
        if key in user:
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


def wrote_day(path: str, day: date) -> bool:
    """Whether a routed write of the table's history says it wrote ``day`` (its run's days,
    ``first`` .. ``last``): a day that holds no rows is told apart from a day never written.
    Reads the whole log's commit entries (the data is not read); a day whose commits the log's
    retention dropped is not found."""
    return any(m.get("first", "9") <= day.isoformat() <= m.get("last", "")
               for m in map(_user_metadata, open_table(path).history()))


@dataclass(frozen=True)
class UnfinishedWrite:
    """A routed write that committed some of its tables and not the others: ``reached`` hold
    its rows of days ``first .. last``, ``missed`` an earlier run's (table names)."""

    reached: tuple[str, ...]
    missed: tuple[str, ...]
    first: str | None
    last: str | None

    def covered_by(self, first: date, last: date) -> bool:
        """Whether a run of ``first .. last`` rewrites every day of this write, in every table."""
        return bool(self.first and self.last and first.isoformat() <= self.first and self.last <= last.isoformat())

    def holds(self, day: date) -> bool:
        """Whether ``day``'s partitions are torn (all days, where the write did not say its days)."""
        return not (self.first and self.last) or self.first <= day.isoformat() <= self.last

    def __str__(self) -> str:
        days = f"days {self.first} .. {self.last}" if self.first else "its days"
        return (f"{', '.join(self.reached)} holds a write whose {', '.join(self.missed)} commit never landed (a run "
                f"stopped between its commits): run {days} again, alone or in a range that covers them, before "
                "other days")


def unfinished_write(paths: list[str]) -> UnfinishedWrite | None:
    """The write that reached only some of the tables at ``paths``, or None where their newest
    write ids agree (or a table is not made yet, or carries none).

    A job writing several tables commits them one after the other; killed between two commits,
    it leaves them from different runs. The newest of the differing writes is the unfinished
    one. Answered from the last 50 commits of each log: no data is read.
    """
    newest = {}
    for path in paths:
        if not table_exists(path):
            return None
        for commit in open_table(path).history(limit=50):
            meta = _user_metadata(commit)
            if "writeId" in meta:
                newest[path] = (commit.get("timestamp") or 0, meta)
                break
        else:
            return None
    if len({meta["writeId"] for _, meta in newest.values()}) <= 1:
        return None
    _, unfinished = max(newest.values(), key=lambda pair: pair[0])

    def names(reached: bool) -> tuple[str, ...]:
        return tuple(sorted(os.path.basename(p.rstrip("/")) for p, (_, m) in newest.items()
                            if (m["writeId"] == unfinished["writeId"]) == reached))

    return UnfinishedWrite(names(True), names(False), unfinished.get("first"), unfinished.get("last"))


def require_whole_writes(paths: list[str], first: date, last: date) -> None:
    """Refuse to run days ``first .. last`` over tables one routed write reached only in part
    (``unfinished_write``): a next run reading them would continue from stale state (the window
    changes of a day beside the day before's snapshot) with exit 0. Only a run whose days cover
    the unfinished write's days, which rewrites them all, may go on."""
    torn = unfinished_write(paths)
    if torn is not None and not torn.covered_by(first, last):
        raise IncompleteWriteError(str(torn))


def _user_metadata(commit: dict) -> dict:
    try:
        user = json.loads(commit.get("userMetadata") or "null")
    except ValueError:
        return {}
    return user if isinstance(user, dict) else {}


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
    table = open_table(path)
    filters = conjunction(partition_filters)
    check_filter_columns(filters, table.metadata().partition_columns, path)
    # File names are unique (a UUID each); their folders are spelled differently in the log.
    names = {f.rsplit("/", 1)[-1] for f in table.file_uris(file_pruning_predicate=[filters] if filters else None)}
    actions = pa.table(table.get_add_actions(flatten=True))
    matching = [unquote(file.rsplit("/", 1)[-1]) in names for file in actions["path"].to_pylist()]
    return actions.filter(pa.array(matching, pa.bool_()))


def read_table(spark: SparkSession, path: str, *,
               partition_filters: list[Filter] | list[list[Filter]] | None = None,
               columns: list[str] | None = None) -> DataFrame:
    """The table's current snapshot, pruned to the matching partitions (an OR of ANDs where
    ``partition_filters`` is a list of lists). Files no commit references (a killed run's) stay
    invisible, as with any Delta reader.

    The read is pinned to the version current now (``versionAsOf``), so a run reads one version
    however often its plan runs. It also spares the run Spark's recaching: a write re-plans every
    cached plan that reads the written table at its latest version (``recacheByPlan``), and the
    windows job's cached result reads the day before's snapshot it then writes: re-planned for
    nothing, 4.9 s of a 29.9 s day (pipeline oracle seed 8)."""
    table = open_table(path)
    conjunctions = _dnf(partition_filters)
    for conjunction in conjunctions:
        check_filter_columns(conjunction, table.metadata().partition_columns, path)
    df = spark.read.format("delta").option("versionAsOf", table.version()).load(spark_path(path))
    if conjunctions:
        df = df.where(sql_predicate(conjunctions))
    return df.select(*columns) if columns else df


def read_arrow(path: str, *, partition_filters: list[Filter] | None = None,
               columns: list[str] | None = None) -> pa.Table:
    """The matching partitions' rows as Arrow, read by delta-rs: for a job that needs no Spark
    (the online store's load reads a day's snapshot and hands it to PostgreSQL's COPY)."""
    table = open_table(path)
    filters = conjunction(partition_filters)
    check_filter_columns(filters, table.metadata().partition_columns, path)
    return table.to_pyarrow_table(partitions=filters or None, columns=columns)


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
    table = open_table(path)
    options = {"retention_hours": retain_hours, "enforce_retention_duration": enforce_retention, "full": True}
    try:
        doomed = table.vacuum(dry_run=True, **options)
        fs, root = file_system(path)
        sizes = {p: info.size or 0 for p, info in
                 zip(doomed, fs.get_file_info([f"{root}/{unquote(p)}" for p in doomed]))}
        deleted = doomed if dry_run else table.vacuum(dry_run=False, **options)
    except DeltaError as err:
        if "retention period" in str(err):
            raise ValueError(f"{path}: {err}") from None
        raise
    return len(deleted), sum(sizes.get(p, 0) for p in deleted)


# ---------------------------------------------------------------------------------------------
# paths, filters, schemas


def is_local(path: str) -> bool:
    return "://" not in str(path) or str(path).startswith("file:")


def spark_path(path: str) -> str:
    """The table's location as Spark's Hadoop file systems name it (``s3a://`` for S3)."""
    return _uri(path)


def _uri(path: str) -> str:
    path = str(path)
    if path.startswith("file:"):
        return unquote(urlparse(path).path).rstrip("/") or "/"
    return path.rstrip("/") if "://" in path else os.path.abspath(path)


def _rs_uri(path: str) -> str:
    """The location as delta-rs and pyarrow name it: ``s3://`` where Hadoop says ``s3a://``."""
    uri = _uri(path)
    return "s3://" + uri[len("s3a://"):] if uri.startswith("s3a://") else uri


def file_system(path: str) -> tuple[pafs.FileSystem, str] | None:
    """pyarrow's file system holding ``path``, and the path inside it, for the listings Spark
    does not make (files it hides, vacuum's sizes): local folders, S3 (``s3a://`` as ``s3://``,
    configured by the same ``AWS_*`` variables as delta-rs, endpoint included) and whatever else
    pyarrow knows (``gs://``, ``hdfs://``); None for a scheme it does not."""
    uri = _rs_uri(path)
    if uri.startswith("s3://"):
        options: dict[str, Any] = {}
        endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
        if endpoint:
            parsed = urlparse(endpoint)
            options.update(endpoint_override=parsed.netloc or endpoint, scheme=parsed.scheme or "https")
        region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
        if region:
            options["region"] = region
        return pafs.S3FileSystem(**options), uri[len("s3://"):].rstrip("/")
    try:
        return pafs.FileSystem.from_uri(uri)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError):
        return None


def _storage_options(path: str) -> dict[str, str] | None:
    """delta-rs reads AWS_* from the environment itself; an http endpoint must also be allowed."""
    if not _rs_uri(path).startswith("s3://"):
        return None
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or ""
    options = {"AWS_ENDPOINT_URL": endpoint} if endpoint else {}
    if endpoint.startswith("http://"):
        options["AWS_ALLOW_HTTP"] = "true"
    return options


def _check_log(path: str) -> None:
    """Refuse a table whose log lost its newest entry, or data files whose log is gone.

    Delta readers would read such a table at an older version, and a writer would start a new
    table over the old files, both without an error: a job would write wrong numbers and exit
    0. delta-spark writes a checksum file (``N.crc``) beside every commit (``N.json``), so a
    missing or empty newest entry shows. Only file systems are checked (a listing is cheap there).
    """
    if not is_local(path):
        return
    root = Path(_uri(path))
    log = root / "_delta_log"
    if not root.is_dir():
        return
    if not log.is_dir():
        data = [p for p in root.iterdir() if not p.name.startswith((".", "_"))]
        if data:
            raise DamagedTableError(f"{path} holds {data[0].name} and more but no _delta_log: it is not a Delta "
                                    "table any more. Restore its _delta_log, or move the folder aside and "
                                    "materialise the table's partitions again")
        return
    commits = {int(p.stem): p for p in log.glob("[0-9]*.json") if p.stem.isdigit()}
    checksums = {int(p.stem) for p in log.glob("[0-9]*.crc") if p.stem.isdigit()}
    newest = max([*commits, *checksums], default=None)
    if newest is None:
        return
    entry = commits.get(newest)
    if entry is None or entry.stat().st_size == 0:
        state = "missing" if entry is None else "empty"
        raise DamagedTableError(f"{path}: the Delta log's newest entry, version {newest}, is {state}, so readers "
                                f"would see an older version. Restore _delta_log/{newest:020d}.json, or move "
                                "the table aside and materialise its partitions again")


def open_table(path: str):
    _check_log(path)
    try:
        return DeltaTable(_rs_uri(path), storage_options=_storage_options(path))
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


def _dnf(filters: list[Filter] | list[list[Filter]] | None) -> list[list[tuple]]:
    if not filters:
        return []
    if all(isinstance(f, list) for f in filters):
        return [conjunction(c) for c in filters if c]
    return [conjunction(filters)]


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


def _spark_schema(table) -> StructType:
    """The table's schema with partition columns last, as Spark's Parquet reader returns them."""
    fields = from_arrow_schema(pa.schema(table.schema().to_arrow())).fields
    by_name = {f.name: f for f in fields}
    partitions = table.metadata().partition_columns
    return StructType([f for f in fields if f.name not in partitions] + [by_name[p] for p in partitions])


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


def check_compatible(table, schema: StructType, partition_by: list[str], path: str) -> None:
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
