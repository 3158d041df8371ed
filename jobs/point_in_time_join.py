"""Point-in-time join: each spine row (key, ts, anything else) with every window's values as of its ts.

For training data: a spine of labelled moments gets each feature as it was at that moment and
never later. Every spine row gives exactly one output row: its own columns, kept as they are,
then per window ``<window>__window_end``, ``<window>__read_at``, ``<window>__event_count`` and
``<window>__<aggregation>``, then ``date`` (the UTC date of ts, the output's partition).

"As of ts" is ``jobs.point_in_time``'s one definition (its docstring has it whole): the value of
the window ending at the last window end ``L <= ts`` (``L < ts`` with ``--exclusive``, for labels
that must not see a change point at their own instant), read from the snapshot of the day before
``L``'s day plus the change points of ``L``'s day; for ``emit: final`` windows the window ending
at ``L`` exactly; for session windows the key's latest row with ``window_end <= ts`` (``< ts``):
its latest closed session, or under ``emit: changes`` its session so far at the last bucket end
(or the step back to empty). ``window_end`` is the end of the window read (a session row's own
end), ``read_at`` the
instant of the row the value came from (a change point's ``window_end``, a snapshot's ``as_of``,
a session's end), null where none did.

Bounds: ts is compared at microsecond precision (milliseconds and below are kept); a spine row
exactly on a window end sees that window (not with ``--exclusive``), one a millisecond before
it sees the window before. A key with no value yet gets the window's empty value: event_count 0
and each aggregation's ``finish(empty())`` (count 0, sum 0, approx_distinct 0, the others null).
Where the tables cannot say (a window's first day, before the key's first change point of the
day, with frames before that day), event_count and the values are null: unknown, not empty.

With ``precision: event`` (``--precision event``) a sliding or cumulating window holds exactly
the events before ts, to the microsecond (``jobs.as_of.exact``): ``window_end`` and
``read_at`` are ts itself, and the partials and events of the days its windows reach are read.

The window tables must be materialised for the days the spine reaches (``L``'s day and the day
before; for sessions every day up to ts's). Non-keyed windows (``keyed: false``) hold one value
for every key and are not joined: read them with ``jobs.point_in_time``.

The spine is a Delta table or Parquet files (a path; ``--format`` where the path alone does not
say: a Delta log means Delta) or a table of Spark's catalog. Its key column is compared as a
string; its ts column is a timestamp (UTC). A spine row with a null key or ts, or a spine column
named like an output column, is refused. The output is Delta, partitioned by ``date``; a run
replaces the partitions of the spine's days (or of ``--date .. --until``), one atomic commit.

    python -m jobs.point_in_time_join --lakehouse DIR --spine PATH_OR_TABLE --out PATH
        [--windows 7d,1h] [--aggregations count,sum] [--exclusive] [--precision event]
        [--key-column user_id] [--ts-column ts] [--format delta|parquet] [--date D [--until D]]
"""

from __future__ import annotations

import os
import sys
from datetime import date, datetime, time, timedelta, timezone

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import TimestampNTZType, TimestampType

from jobs import errors, named_tables
from jobs.as_of.join import with_values_as_of
from jobs.as_of.reading import AT, KEY, Reading
from jobs.errors import SpineError
from jobs.runtime import pipes
from jobs.storage import delta_write
from jobs.tables import SPINE_VALUES, day_filter, root
from windowing_core.config import PipelineConfig
from windowing_core.deployment import Deployment
from windowing_core.run_interval import as_utc
from windowing_core.spine import PRECISIONS, SpineSpec

PARTITION = "date"


def read_spine(spark: SparkSession, spine: SpineSpec, first: date | None = None, last: date | None = None) -> DataFrame:
    """The spine's rows (of days ``first .. last`` of its ts, where given)."""
    rows = named_tables.read(spark, spine.path, spine.table, spine.format)
    keys = tuple(("key", c) for c in spine.key_columns) if not spine.groups else tuple(
        (f"groups.{g.name}.key", c) for g in spine.groups for c in g.key)
    for label, column in (*keys, ("ts", spine.ts)):
        if column not in rows.columns:
            raise SpineError(f"spine.{label}: the spine {spine.source} has no column {column!r} "
                             f"(its columns: {', '.join(rows.columns)})")
    kind = rows.schema[spine.ts].dataType
    if not isinstance(kind, (TimestampType, TimestampNTZType)):
        raise SpineError(f"spine.ts: column {spine.ts!r} of {spine.source} is {kind.simpleString()}, not a timestamp")
    if first is not None:
        start = datetime.combine(first, time(), timezone.utc)
        stop = datetime.combine(last + timedelta(days=1), time(), timezone.utc)
        rows = rows.where((F.col(spine.ts) >= F.lit(start)) & (F.col(spine.ts) < F.lit(stop)))
    return rows


def joined(spark: SparkSession, lakehouse: str, spine_rows: DataFrame, spine: SpineSpec, config: PipelineConfig,
           reading: Reading, earliest: datetime, latest: datetime) -> DataFrame:
    """The spine's rows with every read window's columns and ``date``: a pure function of the
    spine and the window tables (``jobs.point_in_time.with_values_as_of``)."""
    outputs = {c for spec in reading.windows for c in reading.columns(spec)} | {PARTITION}
    clashes = sorted(c for c in spine_rows.columns if c in outputs or c.startswith("_pit_"))
    if clashes:
        raise SpineError(f"spine: column(s) {', '.join(clashes)} of {spine.source} clash with the join's output "
                         "columns; rename them")
    lookups = spine_rows.withColumns({KEY: lookup_key(spine.key_columns, config),
                                      AT: F.col(spine.ts).cast("timestamp")})
    values = with_values_as_of(spark, lakehouse, lookups, config, reading, earliest, latest)
    return values.select(*spine_rows.columns, *[c for spec in reading.windows for c in reading.columns(spec)],
                         F.to_date(AT).alias(PARTITION))


def spine_bounds(spine_rows: DataFrame, spine: SpineSpec) -> tuple[datetime | None, datetime | None]:
    """The least and greatest ts, in one pass that also refuses null keys and timestamps."""
    ts = F.col(spine.ts).cast("timestamp")
    keys = spine.key_columns
    row = spine_rows.agg(F.min(ts), F.max(ts), F.count(F.when(ts.isNull(), 1)),
                         *[F.count(F.when(F.col(c).isNull(), 1)) for c in keys]).first()
    for label, column, nulls in (("ts", spine.ts, row[2]), *(("key", c, n) for c, n in zip(keys, row[3:]))):
        if nulls:
            raise SpineError(f"spine.{label}: {nulls} row(s) of {spine.source} have a null {column!r}; "
                             "a spine row needs a key and a ts")
    return tuple(None if t is None else as_utc(t) for t in (row[0], row[1]))


def readings(spine: SpineSpec, config: PipelineConfig | Deployment) -> list[tuple[str, Reading]]:
    """What a join attaches, per reading, with the prefix of its columns: a group's spine one
    reading, unprefixed; a spine joined to several groups one per group, ``<group>__``."""
    if isinstance(config, Deployment):
        return [(f"{g.name}__", Reading.of(config.group(g.name), g.windows, g.aggregations, spine.exclusive,
                                           where=f"spine.groups.{g.name}", precision=spine.precision))
                for g in spine.groups]
    return [("", Reading.of(config, spine.windows, spine.aggregations, spine.exclusive, precision=spine.precision))]


def lookup_key(columns: tuple[str, ...], config: PipelineConfig) -> Column:
    """Spine columns as a group's key: one column as text, a composite key's as the JSON array
    of texts ingest makes of its fields (``jobs.ingest_events.key_of``)."""
    texts = [F.col(c).cast("string") for c in columns]
    return F.to_json(F.array(*texts)) if config.key_fields else texts[0]


def joined_groups(spark: SparkSession, lakehouse: str, spine_rows: DataFrame, spine: SpineSpec,
                  deployment: Deployment, earliest: datetime, latest: datetime) -> DataFrame:
    """The spine's rows with each joined group's columns, ``<group>__<window>__<column>``, and
    ``date``: one as-of join (one sort) per group, in turn, each over the rows the one before
    returned, every group read as of the same ts by its own key."""
    groups = [(g, deployment.group(g.name), reading) for g, (_, reading) in zip(spine.groups,
                                                                                readings(spine, deployment))]
    outputs = {f"{g.name}__{c}" for g, _, reading in groups for spec in reading.windows
               for c in reading.columns(spec)} | {PARTITION}
    clashes = sorted(c for c in spine_rows.columns if c in outputs or c.startswith("_pit_"))
    if clashes:
        raise SpineError(f"spine: column(s) {', '.join(clashes)} of {spine.source} clash with the join's output "
                         "columns; rename them")
    rows = spine_rows
    for g, config, reading in groups:
        lookups = rows.withColumns({KEY: lookup_key(g.key, config), AT: F.col(spine.ts).cast("timestamp")})
        values = with_values_as_of(spark, root(lakehouse, config), lookups, config, reading, earliest, latest)
        rows = values.select(*rows.columns, *[F.col(c).alias(f"{g.name}__{c}") for spec in reading.windows
                                              for c in reading.columns(spec)])
    return rows.withColumn(PARTITION, F.to_date(F.col(spine.ts).cast("timestamp")))


def run(spark: SparkSession, lakehouse: str, out: str, spine: SpineSpec, config: PipelineConfig | Deployment,
        first: date | None = None, last: date | None = None) -> dict:
    """Join the spine's rows (of days ``first .. last``, or all) and replace those days of ``out``;
    ``config`` a group's (its windows' columns) or, for a spine joined to several groups, the
    deployment (their columns, ``joined_groups``)."""
    read = readings(spine, config)
    windows = [f"{prefix.removesuffix('__')}.{w.name}" if prefix else w.name for prefix, r in read for w in r.windows]
    rows = read_spine(spark, spine, first, last)
    earliest, latest = spine_bounds(rows, spine)
    if first is None:
        if earliest is None:
            return {"rows_written": 0, "days": None, "windows": windows, "exclusive": spine.exclusive,
                    "precision": spine.precision}
        first, last = earliest.date(), latest.date()
    if earliest is None:  # no rows those days: their partitions are emptied
        earliest = latest = datetime.combine(first, time(), timezone.utc)
    result = (joined_groups(spark, lakehouse, rows, spine, config, earliest, latest) if isinstance(config, Deployment)
              else joined(spark, lakehouse, rows, spine, config, read[0][1], earliest, latest))
    written = delta_write.replace_partitions(result, out, partition_by=[PARTITION],
                                          partition_filters=day_filter(PARTITION, first, last))
    return {**written, "days": [first.isoformat(), last.isoformat()], "windows": windows,
            "exclusive": spine.exclusive, "precision": spine.precision}


def main(argv: list[str] | None = None) -> int:
    from jobs.cli import (
        EXIT_BAD_ARGUMENTS,
        EXIT_MISSING_INPUT,
        _day,
        documented_parser,
        group_arguments,
        load_configuration,
    )

    parser = documented_parser(__doc__)
    parser.add_argument("--lakehouse", required=True, help="root folder (or URI) of the Delta tables")
    parser.add_argument("--spine", default=None,
                        help="a path (Delta or Parquet) or a catalog table; default: the configuration's spine")
    parser.add_argument("--out", default=None, help=f"the output Delta table; default: <lakehouse>/{SPINE_VALUES.name}")
    parser.add_argument("--windows", default=None, help="windows to attach, comma-separated (default: every keyed one)")
    parser.add_argument("--aggregations", default=None, help="aggregations, comma-separated (default: all)")
    parser.add_argument("--exclusive", action="store_true", default=None,
                        help="a change point exactly at ts is not seen (default: it is)")
    parser.add_argument("--precision", choices=PRECISIONS, default=None,
                        help="event: sliding and cumulating windows hold exactly the events before ts "
                             "(default: the configuration's, else bucket)")
    parser.add_argument("--key-column", default=None,
                        help="the spine's key column, or a composite key's columns comma-separated (default: the key)")
    parser.add_argument("--ts-column", default=None, help="the spine's timestamp column (default: ts)")
    parser.add_argument("--format", choices=("delta", "parquet"), default=None, help="the spine path's format")
    parser.add_argument("--date", type=_day, default=None, help="first day of ts to join (default: all)")
    parser.add_argument("--until", type=_day, default=None, help="last day of ts to join (default: --date)")
    parser.add_argument("--config", default=None, help="pipeline configuration YAML (default: 7d window)")
    group_arguments(parser)
    args = parser.parse_args(argv)
    try:
        deployment = Deployment.load(args.config)
        if deployment.spine is not None and args.group is None:  # the spine joined to several groups
            for flag in ("windows", "aggregations", "key_column"):
                if getattr(args, flag) is not None:
                    raise ValueError(f"--{flag.replace('_', '-')}: the configuration's spine names them per group")
            config = deployment
            spine = _spine(args, None, deployment.spine)
        else:
            config = load_configuration(args)
            spine = _spine(args, config, config.spine)
            if len(spine.key_columns) != len(config.key_names):
                raise ValueError(f"--key-column: the key is {', '.join(config.key_names)}: name as many spine "
                                 f"columns, in that order, comma-separated")
            Reading.of(config, spine.windows, spine.aggregations, spine.exclusive, where="--windows/--aggregations")
    except ValueError as err:
        parser.error(f"bad configuration: {err}")
    if args.until is not None and args.date is None:
        parser.error("--until needs --date")
    last = args.until or args.date
    if last is not None and last < args.date:
        parser.error(f"--until {args.until} is before --date {args.date}")
    from jobs.runtime.spark_session import get_spark

    out = args.out or SPINE_VALUES.path(args.lakehouse)
    with pipes.session():  # where Dagster launched the job through Pipes; else nothing
        try:
            spark = get_spark(roots=[args.lakehouse, out, spine.path or ""])
            result = run(spark, args.lakehouse, out, spine, config, args.date, last)
        except SpineError as err:
            print(f"{parser.prog}: error: {err}", file=sys.stderr)
            return EXIT_BAD_ARGUMENTS
        except errors.MissingTableError as err:
            print(f"{parser.prog}: error: {err}", file=sys.stderr)
            return EXIT_MISSING_INPUT
        pipes.report("point_in_time_join", result)
        days = "no spine rows" if result["days"] is None else f"days {result['days'][0]} .. {result['days'][1]}"
        print(f"wrote {result['rows_written']} rows to {out} ({days}; windows {', '.join(result['windows'])})")
    return 0


def _columns(text: str) -> str | tuple[str, ...]:
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    return names[0] if len(names) == 1 else names


def _spine(args, config: PipelineConfig | None, base: SpineSpec | None) -> SpineSpec:
    """The spine from the command line, over the configuration's (``base``) where both say
    something."""
    if args.spine is None and base is None:
        raise ValueError("give --spine, or spine: in the configuration")
    source = args.spine
    is_table = source is not None and "/" not in source and not os.path.exists(source) and not source.endswith(".parquet")
    location = ({"table": source} if is_table else {"path": source}) if source is not None else \
        {"path": base.path, "table": base.table}
    names = {label: tuple(n.strip() for n in getattr(args, label).split(",") if n.strip())
             for label in ("windows", "aggregations") if getattr(args, label) is not None}
    return SpineSpec(
        **{"path": None, "table": None, **location},
        format=args.format or (base.format if base is not None and source is None else None),
        key=_columns(args.key_column) if args.key_column else (base.key if base is not None else
                                                                (config.key_fields or config.key_field)),
        ts=args.ts_column or (base.ts if base is not None else "ts"),
        windows=names.get("windows", base.windows if base is not None else None),
        aggregations=names.get("aggregations", base.aggregations if base is not None else None),
        exclusive=args.exclusive if args.exclusive is not None else (base.exclusive if base is not None else False),
        precision=args.precision or (base.precision if base is not None else "bucket"),
        groups=base.groups if base is not None else ())


if __name__ == "__main__":
    raise SystemExit(main())
