"""A spine: labelled moments (key, ts, anything else) to attach window values to, as of each ts.

The configuration's ``spine:`` names one for the Dagster asset ``spine_values``; the job
``jobs.point_in_time_join`` takes the same fields on its command line.

    spine:
      path: /data/labels          # or table: db.labels (a table of Spark's catalog)
      format: parquet             # delta or parquet; default: delta where the path holds a Delta log
      key: user_id                # the key column; default: the pipeline's key_field
      ts: ts                      # the timestamp column (UTC); default: ts
      windows: [7d, visits]       # default: every keyed window and session window
      aggregations: [count, sum]  # default: every aggregation
      exclusive: false            # true: a change point exactly at ts is not seen
      precision: bucket           # event: sliding windows hold exactly the events of [ts - length, ts)

Bounds, once: a spine row at ``ts`` sees the change points (and closed sessions) whose
``window_end <= ts``; with ``exclusive``, ``window_end < ts``. Never one after ``ts``.

Beside ``groups:`` a spine is joined to several groups at once (``SpineGroup``): each names
which of the spine's columns make that group's key, in its key's order, and what to attach;
its columns are named ``<group>__<window>__<column>``.

    spine:
      path: /data/labels
      ts: ts
      groups:
        views: {key: user_id, windows: [7d]}
        purchases: {key: [user_id, country]}
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from windowing_core.named_table import check_absolute, check_column, check_location
from windowing_core.sessions import SessionSpec
from windowing_core.window_spec import WindowSpec, refuse_unknown

SPINE_FIELDS = {"path", "table", "format", "key", "ts", "windows", "aggregations", "exclusive", "precision"}
JOINED_FIELDS = {"path", "table", "format", "ts", "exclusive", "precision", "groups"}
GROUP_FIELDS = {"key", "windows", "aggregations"}
PRECISIONS = ("bucket", "event")
"""How a read places its instant: at the last window end before it (``bucket``), or exactly
(``event``: ``jobs.as_of.exact``)."""


def read_at_instant(spec: WindowSpec | SessionSpec) -> bool:
    """Whether ``precision: event`` reads the window at the instant itself: a sliding or
    cumulating window of event time emitting changes. A tumbling or final window's last window
    is exact already, a session's rows are its own, an arrival window's frames are by arrival."""
    return (isinstance(spec, WindowSpec) and spec.emit == "changes" and spec.time == "event"
            and (spec.cumulating or not spec.tumbling))


@dataclass(frozen=True)
class SpineGroup:
    """A group a spine is joined to: the spine's columns that make its key, in the order of the
    group's key fields, and the windows and aggregations attached (None: every one)."""

    name: str
    key: tuple[str, ...]
    windows: tuple[str, ...] | None = None
    aggregations: tuple[str, ...] | None = None


@dataclass(frozen=True)
class SpineSpec:
    """Where the spine is and which of its columns are the key and the timestamp.

    ``windows`` and ``aggregations`` select what is attached (None: everything the join can
    attach); the configuration checks that they name configured ones."""

    path: str | None = None
    table: str | None = None
    format: str | None = None
    key: str | tuple[str, ...] = "user_id"  # several columns for a composite key, in its fields' order
    ts: str = "ts"
    windows: tuple[str, ...] | None = None
    aggregations: tuple[str, ...] | None = None
    exclusive: bool = False
    groups: tuple[SpineGroup, ...] = ()
    precision: str = "bucket"

    def __post_init__(self) -> None:
        check_location("spine", self.path, self.table, self.format)
        check_column("spine.ts", self.ts)
        keyed = ([("key", (self.key,) if isinstance(self.key, str) else self.key)] if not self.groups else
                 [(f"groups.{g.name}.key", g.key) for g in self.groups])
        for label, columns in keyed:
            for column in columns:
                check_column(f"spine.{label}", column)
                if column == self.ts:
                    raise ValueError(f"spine.{label} and spine.ts are both {column!r}")
        if not isinstance(self.exclusive, bool):
            raise ValueError(f"spine.exclusive must be true or false, got {self.exclusive!r}")
        if self.precision not in PRECISIONS:
            raise ValueError(f"spine.precision must be one of {', '.join(PRECISIONS)}, got {self.precision!r}")
        for label in ("windows", "aggregations"):
            names = getattr(self, label)
            if names is not None and (not names or not all(isinstance(n, str) for n in names)):
                raise ValueError(f"spine.{label} must be a non-empty list of names, got {list(names)!r}")

    @property
    def key_columns(self) -> tuple[str, ...]:
        """The spine's columns that make a key: its one ``key``, or every group's."""
        if not self.groups:
            return (self.key,) if isinstance(self.key, str) else self.key
        return tuple(dict.fromkeys(c for g in self.groups for c in g.key))

    @property
    def source(self) -> str:
        """The path or the table, as the job's ``--spine`` takes it."""
        return self.path if self.path is not None else self.table

    @classmethod
    def from_dict(cls, raw: Any, key_field: str | tuple[str, ...]) -> SpineSpec:
        """The configuration's ``spine:`` mapping (``key`` defaults to the pipeline's key: its
        field, or a composite key's fields)."""
        if not isinstance(raw, dict):
            raise ValueError("spine: expected a mapping with path (or table), key and ts")
        refuse_unknown(raw, SPINE_FIELDS, "spine")
        check_absolute("spine", raw.get("path"))
        return cls(path=raw.get("path"), table=raw.get("table"), format=raw.get("format"),
                   key=_key(raw.get("key", key_field)), ts=raw.get("ts", "ts"),
                   windows=_names(raw, "windows"), aggregations=_names(raw, "aggregations"),
                   exclusive=raw.get("exclusive", False), precision=raw.get("precision", "bucket"))


def _key(declared: Any) -> str | tuple[str, ...]:
    """A spine's key: one column, or a list of them (a composite key)."""
    if isinstance(declared, (list, tuple)):
        return declared[0] if len(declared) == 1 else tuple(declared)
    return declared


def joined_from_dict(raw: Any, key_names: dict[str, tuple[str, ...]]) -> SpineSpec:
    """A spine beside ``groups:`` (``key_names``: each group's key fields), joined to the groups
    its ``groups`` names; a group's ``key`` defaults to the spine columns named as its key's
    fields."""
    if not isinstance(raw, dict):
        raise ValueError("spine: expected a mapping with path (or table), ts and the groups to join")
    refuse_unknown(raw, JOINED_FIELDS, "spine")
    check_absolute("spine", raw.get("path"))
    declared = raw.get("groups")
    if not isinstance(declared, dict) or not declared:
        raise ValueError("spine.groups: beside groups:, name the groups the spine is joined to, for example "
                         "{views: {key: user_id}}")
    groups = []
    for name, spec in declared.items():
        where = f"spine.groups.{name}"
        if name not in key_names:
            raise ValueError(f"{where}: no group {name!r}; the configuration declares {', '.join(key_names)}")
        spec = {} if spec is None else spec
        if not isinstance(spec, dict):
            raise ValueError(f"{where}: expected a mapping with key, windows and aggregations")
        refuse_unknown(spec, GROUP_FIELDS, where)
        key = spec.get("key", list(key_names[name]))
        key = [key] if isinstance(key, str) else key
        if not isinstance(key, list) or len(key) != len(key_names[name]):
            raise ValueError(f"{where}.key: the group's key is {', '.join(key_names[name])}: name as many spine "
                             f"columns, in that order, got {spec.get('key')!r}")
        groups.append(SpineGroup(name, tuple(key), _names(spec, "windows", where),
                                 _names(spec, "aggregations", where)))
    return SpineSpec(path=raw.get("path"), table=raw.get("table"), format=raw.get("format"), ts=raw.get("ts", "ts"),
                     exclusive=raw.get("exclusive", False), groups=tuple(groups),
                     precision=raw.get("precision", "bucket"))


def _names(raw: dict, label: str, where: str = "spine") -> tuple[str, ...] | None:
    value = raw.get(label)
    if value is None:
        return None
    if isinstance(value, str):
        value = [v.strip() for v in value.split(",")]
    if not isinstance(value, list):
        raise ValueError(f"{where}.{label} must be a list of names, got {value!r}")
    return tuple(str(v) for v in value)


def selected(config, windows: tuple[str, ...] | None, aggregations: tuple[str, ...] | None,
             *, where: str = "spine") -> tuple[tuple, tuple]:
    """The window specs (sliding, session and count) and aggregations a join attaches, by name.

    Without names: every keyed window, every session and count window, and every aggregation. A
    non-keyed window (``keyed: false``) holds one value for all keys, under the key ``*``: a
    spine row's key never finds it, so naming one is refused rather than answered empty."""
    by_name = {w.name: w for w in (*config.windows, *config.sessions, *config.counts)}
    if windows is None:
        specs = tuple(w for w in by_name.values() if getattr(w, "keyed", True))
    else:
        unknown = [n for n in windows if n not in by_name]
        if unknown:
            raise ValueError(f"{where}.windows: {', '.join(unknown)} not configured; configured: "
                             f"{', '.join(by_name)}")
        specs = tuple(by_name[n] for n in dict.fromkeys(windows))
        unkeyed = [w.name for w in specs if not getattr(w, "keyed", True)]
        if unkeyed:
            raise ValueError(f"{where}.windows: {', '.join(unkeyed)} is not keyed (keyed: false): its one value for "
                             "all keys is read with jobs.point_in_time, not joined to a spine's keys")
    if not specs:
        raise ValueError(f"{where}.windows: no keyed window to attach")
    aggs = {a.name: a for a in config.aggregations}
    if aggregations is None:
        return specs, tuple(config.aggregations)
    unknown = [n for n in aggregations if n not in aggs]
    if unknown:
        raise ValueError(f"{where}.aggregations: {', '.join(unknown)} not configured; configured: {', '.join(aggs)}")
    return specs, tuple(aggs[n] for n in dict.fromkeys(aggregations))
