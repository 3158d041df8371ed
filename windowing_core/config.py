"""The pipeline's declared configuration: key and value fields, lateness, windows, aggregations.

One frozen, validated object that every layer takes (job CLIs, Spark jobs, Dagster resources).
Bad configuration fails here, at load time, with a message that names the field.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from windowing_core import field_types
from windowing_core.aggregations import DEFAULT_AGGREGATIONS, DEFAULT_FIELD, Aggregation, Custom, aggregation
from windowing_core.expressions import references
from windowing_core.online import OnlineSpec
from windowing_core.run_interval import STAGES, partition_cron, why_not_below_a_day
from windowing_core.count_windows import CountSpec
from windowing_core.sessions import SessionSpec
from windowing_core.source import SourceSpec
from windowing_core.spine import SpineSpec, selected
from windowing_core.window_spec import (
    DAY_SECONDS,
    DEFAULT_WINDOW,
    MAX_DURATION,
    WindowSpec,
    format_duration,
    parse_duration,
    refuse_unknown,
    slides_over_day_tiles,
)

_TOP_LEVEL = {"key_field", "key", "value_field", "fields", "bucket", "allowed_lateness", "windows", "aggregations",
              "late_policy", "max_out_of_orderness", "watermark_scope", "watermark_clock", "freshness_slack", "spine",
              "online", "where", "columns", "source", "partition"}
LATE_POLICIES = ("include", "drop")
WATERMARK_SCOPES = ("global", "key")
WATERMARK_CLOCKS = ("event", "arrival")
_WINDOW_KEYS = {"length", "slide", "step", "offset", "align_to", "emit", "keyed", "time"}
MAX_LATENESS_DAYS = 366
"""Partials of event day D read arrival days D .. D + lateness: beyond a year that is a mistake
(``3000000d`` overflowed the dates), not a lateness."""
RECORD_FIELDS = ("timestamp", "event_id", "arrival_time")
"""Fields every record may hold besides its key and value: neither may take one of their names."""
_FIELD_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_COLUMN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
RESERVED_COLUMNS = frozenset({
    "key", "window", "window_start", "window_end", "date", "event_count", "as_of", "frame_start",
    "event_date", "arrival_date", "table",  # table: which table a row of a routed write goes to
})
"""Column names of the window and partial tables (and of a job's routed write) that an
aggregation's output column may not take. Spark resolves column names case-insensitively, so
``Date`` and ``KEY`` collide with them too."""
EVENT_TABLE_COLUMNS = frozenset({
    "key", "event_time", "event_id", "arrival_time", "arrival_part", "source_file", "line", "arrival_date",
    "event_date", "reason", "raw", "table", "timestamp",
})
"""Columns of ``events``, ``late_events`` and ``quarantine`` (and a record's own fields) that a
declared field's column may not take."""


@dataclass(frozen=True)
class PipelineConfig:
    """What panes computes.

    ``allowed_lateness`` (seconds): how late an event may arrive and still change its windows
    (Flink's allowed lateness); a later one is kept in ``late_events``. In whole days it counts
    arrival dates: the arrival day at most that many days after the event day. Below a day (or
    not in whole days) it counts from the event time to the start of the arrival part the record
    landed in (its part folder's time; a file outside part folders arrives at its day's end), so
    a day run whole or in parts keeps the same events. A table source's rows count to their own
    arrival time (its ``arrival`` column), which says more than a folder could.

    The watermark at an event's arrival is the largest event time seen before it (in arrival
    order, over all keys or per key: ``watermark_scope``) minus ``max_out_of_orderness``; with
    ``watermark_clock: arrival`` (Bytewax's event clock) it also advances with the arrival time
    elapsed since the event that set it (``windowing_core.watermark``). Events behind it follow
    ``late_policy``: ``include`` accepts them while within the allowed lateness; ``drop`` keeps
    them in ``late_events`` instead, counted.

    ``freshness_slack``: processing time promised on top of the lateness before a window
    output for event time t is overdue (the freshness policy and the watermark-lag check).
    """

    key_field: str = "user_id"
    value_field: str = "value"
    # Declared measured fields, ``(name, Spark DDL type)``: each is a column of ``events`` of
    # that name. None declared: the one integer ``value`` read from ``value_field``.
    fields: tuple[tuple[str, str], ...] = ()
    bucket: int = 60
    allowed_lateness: int = 2 * DAY_SECONDS
    # The unit of work every job and asset runs, in seconds (``partition:``): a day, or a part
    # of one (``windowing_core.run_interval.partition_cron``).
    partition: int = DAY_SECONDS
    windows: tuple[WindowSpec, ...] = (DEFAULT_WINDOW,)
    aggregations: tuple[Aggregation, ...] = field(default=DEFAULT_AGGREGATIONS)
    late_policy: str = "include"
    max_out_of_orderness: int = 300
    watermark_scope: str = "global"
    freshness_slack: int = 6 * 3600
    # Session windows (``gap``), declared under ``windows`` beside the sliding ones but kept
    # apart: every sliding-window rule (grid, length, snapshot) reads ``windows`` alone.
    sessions: tuple[SessionSpec, ...] = ()
    # Count windows (``count``), kept apart likewise: they number a key's events, not frames.
    counts: tuple[CountSpec, ...] = ()
    watermark_clock: str = "event"
    # Labelled moments to attach window values to, as of each (``spine_values``); None: no such asset.
    spine: SpineSpec | None = None
    # The PostgreSQL table that serves each key's latest values (``online_values``); None: no such asset.
    online: OnlineSpec | None = None
    # Computed inputs, ``(name, Spark SQL expression)``: each names a declared field, whose type
    # it is cast to, computed per event from the source's fields before the partials.
    columns: tuple[tuple[str, str], ...] = ()
    # A Spark SQL predicate over the fields (computed ones too): only the events it holds true
    # for reach the partials and windows; the reconciliation counts the others.
    where: str | None = None
    # A table the events are read from; None: the landing folders of JSON lines.
    source: SourceSpec | None = None
    # A composite key (``key: [user_id, country]``), two fields or more: the events' ``key`` is
    # their values as a JSON array of strings, and the window tables carry a column per field.
    # Empty: the one ``key_field``.
    key_fields: tuple[str, ...] = ()
    # Set by ``windowing_core.deployment`` for a configuration of ``groups:``, never from YAML:
    # the group's name (its tables under ``<lakehouse>/<group>/``, its assets' key prefix), and
    # the folder under the lakehouse root of its source's shared ingest (None: the root itself).
    group: str | None = None
    ingest_at: str | None = None

    def __post_init__(self) -> None:
        _check_bucket(self.bucket)
        _check_partition(self)
        if not self.windows and not self.sessions and not self.counts:
            raise ValueError("windows: declare at least one window")
        if not self.aggregations:
            raise ValueError("aggregations: declare at least one aggregation")
        if self.late_policy not in LATE_POLICIES:
            raise ValueError(f"late_policy must be one of {', '.join(LATE_POLICIES)}, got {self.late_policy!r}")
        if self.watermark_scope not in WATERMARK_SCOPES:
            raise ValueError(f"watermark_scope must be one of {', '.join(WATERMARK_SCOPES)}, "
                             f"got {self.watermark_scope!r}")
        if self.watermark_clock not in WATERMARK_CLOCKS:
            raise ValueError(f"watermark_clock must be one of {', '.join(WATERMARK_CLOCKS)}, "
                             f"got {self.watermark_clock!r}")
        if self.max_out_of_orderness < 0:
            raise ValueError("max_out_of_orderness must not be negative")
        if self.freshness_slack < 0:
            raise ValueError("freshness_slack must not be negative")
        if self.allowed_lateness < 0:
            raise ValueError(f"allowed_lateness must not be negative, got {self.allowed_lateness}s")
        _unique("windows", self.window_names)
        _unique("aggregations", [a.name for a in self.aggregations])
        for w in (*self.windows, *self.sessions):
            if w.bucket != self.bucket:
                raise ValueError(f"windows.{w.name}: bucket must be the pipeline's bucket")
        for label, name in (("key_field", self.key_field), ("value_field", self.value_field)):
            if not isinstance(name, str) or not _FIELD_NAME.fullmatch(name):
                raise ValueError(f"{label} {name!r}: use letters, digits, underscores and hyphens, "
                                 "starting with a letter or underscore")
            if name in RECORD_FIELDS:
                raise ValueError(f"{label} {name!r}: a record's {name} field has that name")
        if self.key_field == self.value_field:
            raise ValueError(f"key_field and value_field are both {self.key_field!r}")
        _check_key_fields(self)
        _check_field_names(self.fields, self.key_field)
        measured = dict(self.measured_fields)
        for a in self.aggregations:
            for name, ddl in a.read_types.items():
                if name not in measured:
                    raise ValueError(f"aggregations.{a.name}: no field {name!r}; "
                                     f"fields declares {', '.join(measured)}")
                if ddl != measured[name]:
                    raise ValueError(f"aggregations.{a.name}: field {name} is {measured[name]}, not {ddl}")
        if self.allowed_lateness > MAX_LATENESS_DAYS * DAY_SECONDS:
            raise ValueError(f"allowed_lateness must be at most {MAX_LATENESS_DAYS}d, "
                             f"got {format_duration(self.allowed_lateness)}")
        for label, seconds in (("max_out_of_orderness", self.max_out_of_orderness),
                               ("freshness_slack", self.freshness_slack)):
            if seconds > MAX_DURATION:
                raise ValueError(f"{label} must be at most {format_duration(MAX_DURATION)}, "
                                 f"got {format_duration(seconds)}")
        _unique("aggregations (names compared without case, as Spark does)",
                [a.name.lower() for a in self.aggregations])
        for a in self.aggregations:
            if not isinstance(a.name, str) or not _COLUMN_NAME.fullmatch(a.name) or "__" in a.name:
                raise ValueError(f"aggregations.{a.name}: an output column's name uses letters, digits and "
                                 "single underscores, starting with a letter or underscore")
            if a.name.lower() in RESERVED_COLUMNS:
                raise ValueError(f"aggregations.{a.name}: the name is reserved for a column "
                                 f"(names are compared without case: {', '.join(sorted(RESERVED_COLUMNS))})")
        if self.spine is not None and len(self.spine.key_columns) != len(self.key_names):
            raise ValueError(f"spine.key: the key is {', '.join(self.key_names)}: name as many spine columns, "
                             f"in that order, got {', '.join(self.spine.key_columns)}")
        if self.spine is not None:
            selected(self, self.spine.windows, self.spine.aggregations)
        _unique("columns", [n for n, _ in self.columns])
        for name, sql in self.columns:
            if name not in dict(self.fields):
                raise ValueError(f"columns.{name}: declare its type in fields, for example "
                                 f"fields: {{{name}: double}}")
            references(sql, f"columns.{name}", self.row_names(computed=False))
        if self.where is not None:
            references(self.where, "where", self.row_names())
        if self.source is not None:
            read = {*(k.lower() for k in self.key_names), *(name.lower() for name, _ in self.source_fields)}
            for column in self.source.columns():
                if column.lower() in read:
                    raise ValueError(f"source: column {column!r} is also the key or a field; name another")

    @property
    def key_names(self) -> tuple[str, ...]:
        """The fields that make the key: the composite key's, else the one ``key_field``."""
        return self.key_fields or (self.key_field,)

    @property
    def measured_fields(self) -> tuple[tuple[str, str], ...]:
        """The events' measured columns with their Spark types: the declared ``fields``, or the
        one ``value`` (bigint) of a configuration without them."""
        return self.fields or ((DEFAULT_FIELD, "bigint"),)

    @property
    def measured_columns(self) -> list[str]:
        return [name for name, _ in self.measured_fields]

    @property
    def source_fields(self) -> tuple[tuple[str, str], ...]:
        """The measured fields read from the source, as columns of ``events``: all but the
        computed ones (``columns``)."""
        computed = {name for name, _ in self.columns}
        return tuple(f for f in self.measured_fields if f[0] not in computed)

    def row_names(self, computed: bool = True) -> list[str]:
        """What a row expression may refer to: the key, the event time, the source's fields
        and (``computed``) the computed ones."""
        fields = self.measured_fields if computed else self.source_fields
        return ["key", "event_time", *(name for name, _ in fields)]

    @property
    def longest_window(self) -> int:
        """The longest sliding window, or session gap: how far back a day's frames reach (a
        session reaches further only through its carried state)."""
        return max([w.length for w in self.windows] + [s.gap for s in self.sessions], default=0)

    @property
    def arrival_windows(self) -> tuple[WindowSpec, ...]:
        """The sliding windows placing events by arrival time (``time: arrival``)."""
        return tuple(w for w in self.windows if w.time == "arrival")

    @property
    def arrival_sessions(self) -> tuple[SessionSpec, ...]:
        """The session windows placing events by arrival time (``time: arrival``)."""
        return tuple(s for s in self.sessions if s.time == "arrival")

    @property
    def places_by_arrival(self) -> bool:
        """Whether any window, sliding or session, places events by arrival time: the partials
        job then also writes the frames by arrival time (``arrival_partials``)."""
        return bool(self.arrival_windows or self.arrival_sessions)

    @property
    def lateness_by_date(self) -> bool:
        """Whether the allowed lateness is whole days, counted in arrival dates (else from the event
        time to the arrival part: ``allowed_lateness``)."""
        return self.allowed_lateness % DAY_SECONDS == 0

    @property
    def allowed_lateness_days(self) -> int:
        """The arrival days after an event day that may hold its events in time: what a reader of
        an event day reads, and how far back an arrival day re-fires."""
        return -(-self.allowed_lateness // DAY_SECONDS)

    @property
    def window_names(self) -> list[str]:
        """Every configured window's name, sliding, session and count."""
        return [w.name for w in (*self.windows, *self.sessions, *self.counts)]

    @classmethod
    def from_dict(cls, raw: dict[str, Any] | None) -> PipelineConfig:
        """Build from the YAML shape documented in docs/reference/configuration.md; unknown names are errors."""
        if raw is not None and not isinstance(raw, dict):
            raise ValueError(f"configuration: expected a mapping of fields, got {type(raw).__name__}")
        raw = dict(raw or {})
        refuse_unknown(raw, _TOP_LEVEL)
        bucket = parse_duration(raw.get("bucket", "1m"), field_name="bucket")
        _check_bucket(bucket)  # before the windows, each of which divides by it
        lateness = parse_duration(raw.get("allowed_lateness", "2d"), field_name="allowed_lateness")
        # Left out (or left blank) means the defaults; an empty mapping is a mistake, not a default.
        declared_windows = raw.get("windows")
        if declared_windows is None:
            declared_windows = {"7d": {"length": "7d", "slide": "1m"}}
        if not isinstance(declared_windows, dict):
            raise ValueError("windows: expected a mapping of window name to its length, slide and offset, "
                             "for example {7d: {length: 7d, slide: 1m}}")
        declared = [_window(_name("windows", name), spec, bucket) for name, spec in declared_windows.items()]
        windows = tuple(w for w in declared if isinstance(w, WindowSpec))
        sessions = tuple(w for w in declared if isinstance(w, SessionSpec))
        counts = tuple(w for w in declared if isinstance(w, CountSpec))
        aggs = raw.get("aggregations")
        if aggs is None:
            aggs = {"count": "count", "sum": "sum"}
        if not isinstance(aggs, dict):
            raise ValueError("aggregations: expected a mapping of output name to kind, "
                             "for example {count: count, total: sum}")
        value_field = _field_name("value_field", raw.get("value_field", "value"))
        fields = _fields(raw.get("fields"))
        key_field, key_fields = _key(raw)
        _check_field_names(fields, key_field)
        default = _default_field(fields, value_field, "value_field" in raw)
        return cls(
            key_field=key_field,
            key_fields=key_fields,
            value_field=value_field,
            fields=fields,
            bucket=bucket,
            partition=parse_duration(raw.get("partition", "1d"), field_name="partition"),
            allowed_lateness=lateness,
            windows=windows,
            sessions=sessions,
            counts=counts,
            aggregations=tuple(_aggregation(_name("aggregations", name), spec, fields, value_field, default)
                               for name, spec in aggs.items()),
            late_policy=raw.get("late_policy", "include"),
            max_out_of_orderness=parse_duration(raw.get("max_out_of_orderness", "5m"),
                                                field_name="max_out_of_orderness"),
            watermark_scope=raw.get("watermark_scope", "global"),
            watermark_clock=raw.get("watermark_clock", "event"),
            freshness_slack=parse_duration(raw.get("freshness_slack", "6h"), field_name="freshness_slack"),
            spine=None if raw.get("spine") is None else SpineSpec.from_dict(raw["spine"], key_fields or key_field),
            online=None if raw.get("online") is None else OnlineSpec.from_dict(raw["online"]),
            columns=_columns(raw.get("columns")),
            where=raw.get("where"),
            source=None if raw.get("source") is None else SourceSpec.from_dict(raw["source"]),
        )

    @classmethod
    def load(cls, path: str | Path | None) -> PipelineConfig:
        """Read a YAML file of one configuration (no ``groups:``: ``windowing_core.deployment``
        reads those); ``None`` gives the defaults (one ``7d`` window, count and sum)."""
        raw = read_yaml(path)
        if isinstance(raw, dict) and "groups" in raw:
            raise ValueError(f"configuration file {path} declares groups: name the group to run")
        return cls() if path is None else cls.from_dict(raw)


def read_yaml(path: str | Path | None) -> Any:
    """The YAML document of a configuration file (None: no file, an empty document), or a
    one-line error saying why it cannot be read."""
    if path is None:
        return None
    import yaml

    from windowing_core import config_yaml

    try:
        text = Path(path).read_text()
    except OSError as err:
        raise ValueError(f"cannot read configuration file {path}: {err.strerror}") from None
    except UnicodeDecodeError:
        raise ValueError(f"configuration file {path} is not UTF-8 text") from None
    try:
        return config_yaml.load(text)
    except config_yaml.Refused as err:  # too deep, aliases expanding without end
        raise ValueError(f"configuration file {path}: {err}") from None
    except yaml.YAMLError as err:  # syntax errors, and tags safe_load will not construct
        raise ValueError(f"configuration file {path} is not valid YAML: {_yaml_problem(err)}") from None


def _yaml_problem(err: Exception) -> str:
    """PyYAML's multi-line message as one line: the problem and where it is."""
    problem = getattr(err, "problem", None) or str(err).splitlines()[0]
    mark = getattr(err, "problem_mark", None)
    return f"{problem} (line {mark.line + 1}, column {mark.column + 1})" if mark else str(problem)


def _check_partition(config: PipelineConfig) -> None:
    """A partition is a day, or a part of one a cron schedule can start (Dagster's time-window
    partitions) made of whole buckets, under a configuration whose every stage runs in parts."""
    seconds = config.partition
    shown = format_duration(seconds) if seconds > 0 else str(seconds)
    if seconds == DAY_SECONDS:
        return
    partition_cron(seconds)  # a part of a day a schedule can start
    if seconds % config.bucket:
        raise ValueError(f"partition ({shown}) must be whole buckets ({format_duration(config.bucket)})")
    for stage in STAGES:
        reason = why_not_below_a_day(config, stage)
        if reason is not None:
            raise ValueError(f"partition: {shown} is below a day, and {reason}")
    for name, setting in (("spine", config.spine), ("online", config.online)):
        if setting is not None:
            raise ValueError(f"partition: {shown} is below a day, and {name}: runs by whole days")


def _check_bucket(bucket: int) -> None:
    """A frame is at most a day, which it divides: a sliding window checks it too, a session
    window does not (``bucket: 0s`` failed a day on a division by zero)."""
    if bucket <= 0:
        raise ValueError(f"bucket must be positive, got {format_duration(bucket)}")
    if DAY_SECONDS % bucket:
        raise ValueError(f"bucket ({format_duration(bucket)}) must divide one day evenly")


def _name(label: str, name: Any) -> str:
    """A window's or aggregation's name: YAML reads ``1h: ...`` as a string, ``1: ...`` as an int."""
    if isinstance(name, bool) or not isinstance(name, (str, int)):
        raise ValueError(f"{label}: a name must be a string, got {name!r}")
    return str(name)


def reads_day_tiles(config: PipelineConfig) -> bool:
    """Whether any window slides over ``daily_partials``: a non-invertible aggregation over a
    window whose tile is a whole day, or a cumulating window longer than a day
    (``slides_over_day_tiles``). Only then does the pipeline keep that table (the partials
    job, the Dagster graph, the checks): everything else is exact from the minute partials and
    the previous snapshot, and without the tiles the partials job is 1.46x faster at 10^4 events
    and 1.30x at 10^7 (``bench/variants.py``, since removed: git log)."""
    return (any(not a.invertible for a in config.aggregations)
            and any(slides_over_day_tiles(spec) and spec.time == "event" for spec in config.windows))


def _window(name: str, spec: Any, bucket: int) -> WindowSpec | SessionSpec | CountSpec:
    if not isinstance(spec, dict):
        raise ValueError(f"windows.{name}: expected a mapping with length, slide, offset")
    if "gap" in spec and "count" in spec:
        raise ValueError(f"windows.{name}: gap makes a session window and count a count window; declare one")
    if "gap" in spec:
        return SessionSpec.from_dict(str(name), spec, bucket)
    if "count" in spec:
        return CountSpec.from_dict(str(name), spec)
    refuse_unknown(spec, _WINDOW_KEYS, f"windows.{name}")
    if "length" not in spec:
        raise ValueError(f"windows.{name}.length is required")
    return WindowSpec.of(str(name), spec["length"], spec.get("slide"), spec.get("offset"),
                         bucket, spec.get("emit", "changes"), align_to=spec.get("align_to"),
                         step=spec.get("step"), keyed=spec.get("keyed", True), time=spec.get("time", "event"))


def _fields(declared: Any) -> tuple[tuple[str, str], ...]:
    """``fields: {amount: decimal(12,2), page: string}`` as ``(name, Spark type)`` pairs."""
    if declared is None:
        return ()
    if not isinstance(declared, dict) or not declared:
        raise ValueError("fields: expected a mapping of field name to type, for example "
                         "{amount: decimal(12,2), latency_ms: double, page: string}")
    return tuple((str(name), field_types.spark_type(ddl, f"fields.{name}")) for name, ddl in declared.items())


def _columns(declared: Any) -> tuple[tuple[str, str], ...]:
    """``columns: {amount: "price * quantity"}`` as ``(name, expression)`` pairs."""
    if declared is None:
        return ()
    if not isinstance(declared, dict) or not declared:
        raise ValueError("columns: expected a mapping of field name to a Spark SQL expression, for example "
                         "{amount: \"price * quantity\"} (with amount's type in fields)")
    return tuple((str(name), sql) for name, sql in declared.items())


def _check_field_names(fields: tuple[tuple[str, str], ...], key_field: str) -> None:
    _unique("fields (names compared without case, as Spark does)", [f.lower() for f, _ in fields])
    for name, ddl in fields:
        if not isinstance(name, str) or not _COLUMN_NAME.fullmatch(name):
            raise ValueError(f"fields.{name}: a field's name uses letters, digits and underscores, "
                             "starting with a letter or underscore (it names a column of events)")
        if name.lower() in EVENT_TABLE_COLUMNS or name.lower() == str(key_field).lower():
            raise ValueError(f"fields.{name}: the name is taken by the key or a column of events "
                             f"({', '.join(sorted(EVENT_TABLE_COLUMNS))})")
        field_types.family(ddl)


def _default_field(fields: tuple[tuple[str, str], ...], value_field: str, given: bool) -> str | None:
    """The field an aggregation reads when it names none (the short form ``NAME: KIND``): the
    one ``value`` without declared fields; with them, ``value_field`` where given (it must be
    declared), else the only declared field, else none."""
    if not fields:
        return DEFAULT_FIELD
    names = [n for n, _ in fields]
    if given:
        if value_field not in names:
            raise ValueError(f"value_field {value_field!r} is not among fields ({', '.join(names)})")
        return value_field
    return names[0] if len(names) == 1 else None


def _aggregation(name: str, spec: Any, fields: tuple[tuple[str, str], ...], value_field: str,
                 default: str | None) -> Aggregation:
    """``NAME: KIND`` (the kind over the default field) or ``NAME: {kind: KIND, field: FIELD,
    ...parameters}``."""
    if isinstance(spec, dict):
        params = {str(k): v for k, v in spec.items()}
        if "kind" not in params:
            raise ValueError(f"aggregations.{name}.kind is required in the long form "
                             "{kind: KIND, field: FIELD, ...parameters}")
        kind, field = params.pop("kind"), params.pop("field", None)
        if kind == "custom":
            return _custom(name, params, field, fields)
    else:
        kind, field, params = spec, None, {}
    if not fields:  # the one integer value, whatever its JSON name
        if field is not None and field not in (value_field, DEFAULT_FIELD):
            raise ValueError(f"aggregations.{name}.field: no field {field!r}; without declared fields "
                             f"the one field is value_field ({value_field})")
        return aggregation(kind, name, DEFAULT_FIELD, "bigint", **params)
    declared = dict(fields)
    if field is None:
        if default is None:
            raise ValueError(f"aggregations.{name}: name its field, {{kind: {kind}, field: ...}}: "
                             f"fields declares {', '.join(declared)} and no value_field")
        field = default
    if field not in declared:
        raise ValueError(f"aggregations.{name}.field: no field {field!r}; fields declares {', '.join(declared)}")
    return aggregation(kind, name, field, declared[field], **params)


def _custom(name: str, params: dict[str, Any], field: Any, fields: tuple[tuple[str, str], ...]) -> Custom:
    """``{kind: custom, partials: {...}, value: ..., type: ...}`` over the measured fields."""
    unknown = sorted(set(params) - {"partials", "value", "type"}) + (["field"] if field is not None else [])
    if unknown:
        raise ValueError(f"aggregations.{name}.{unknown[0]}: custom takes partials, value and type "
                         "(a partial's expression names its fields)")
    if "value" not in params:
        raise ValueError(f"aggregations.{name}.value is required: an expression over the partials' names")
    return Custom(name, params.get("partials"), params["value"], params.get("type"),
                  fields or ((DEFAULT_FIELD, "bigint"),))


def _key(raw: dict[str, Any]) -> tuple[str, tuple[str, ...]]:
    """``key: user_id`` or ``key: [user_id, country]`` (or ``key_field: user_id``): the first
    field, and all of them where there are several."""
    if "key" in raw and "key_field" in raw:
        raise ValueError("key and key_field: give one (key_field is the one-field spelling of key)")
    if "key" not in raw:
        return _field_name("key_field", raw.get("key_field", "user_id")), ()
    declared = raw["key"]
    names = [declared] if isinstance(declared, str) else declared
    if not isinstance(names, list) or not names or not all(isinstance(n, str) and n for n in names):
        raise ValueError(f"key must be a field's name or a list of them, for example [user_id, country], "
                         f"got {declared!r}")
    return names[0], tuple(names) if len(names) > 1 else ()


def _check_key_fields(config: PipelineConfig) -> None:
    """A composite key's fields: distinct, none a record's own field or a declared field, and
    each a plain name that may become a column of the window tables."""
    if not config.key_fields:
        return
    _unique("key (names compared without case, as Spark does)", [k.lower() for k in config.key_fields])
    if len(config.key_fields) == 1 or config.key_fields[0] != config.key_field:
        raise ValueError("key_fields: two fields or more, the first being key_field")
    taken = {**{c: "a column of the window tables" for c in RESERVED_COLUMNS},
             **{a.name.lower(): f"aggregation {a.name}" for a in config.aggregations}}
    for name in config.key_fields:
        if not _COLUMN_NAME.fullmatch(name):
            raise ValueError(f"key.{name}: a key field's name uses letters, digits and underscores, starting "
                             "with a letter or underscore (it names a column of the window tables)")
        if name in RECORD_FIELDS or name.lower() in taken:
            raise ValueError(f"key.{name}: the name is taken by "
                             + ("a record's own field" if name in RECORD_FIELDS else taken[name.lower()]))
        if name.lower() in {f.lower() for f, _ in config.fields} or name == config.value_field and not config.fields:
            raise ValueError(f"key.{name}: a key field cannot also be a measured field")


def _field_name(label: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{label} must be a non-empty string, got {value!r}")
    return value


def _unique(label: str, names: list[str]) -> None:
    seen = {n for n in names if names.count(n) > 1}
    if seen:
        raise ValueError(f"{label}: duplicate name(s) {', '.join(sorted(seen))}")
