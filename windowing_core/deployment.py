"""A deployment: one pipeline configuration, or several named groups of them side by side.

    groups:
      views:                       # everything a configuration holds, per group
        key_field: user_id
        windows: {7d: {length: 7d, slide: 1m}}
      big_views:
        key_field: user_id
        where: "value >= 10"
        aggregations: {total: sum}

A group's tables live under ``<lakehouse>/<group>/`` and its Dagster assets carry the group's
name as key prefix and asset group. Groups that read the same source share its ingest: one
``events`` table per source, read by every group over it, as Chronon's GroupBys share a
Source. The default landing folders' ingest keeps the lakehouse root (``events`` where an
ungrouped deployment has it); a named source's (a table, or landing folders of a group's own) is
``<lakehouse>/<source name>/``. A configuration without ``groups:`` is one group with no name,
its tables where they always were. A spine beside ``groups:`` is joined to several of them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from windowing_core.aggregations import DEFAULT_AGGREGATIONS, aggregation
from windowing_core.config import PipelineConfig, read_yaml
from windowing_core.spine import SpineSpec, joined_from_dict, selected
from windowing_core.window_spec import DAY_SECONDS, format_duration

GROUP_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
TABLE_FOLDERS = frozenset({
    "events", "quarantine", "late_events", "minute_partials", "daily_partials", "window_changes",
    "window_snapshot", "session_state", "count_state", "arrival_partials", "spine_values", "_panes", "spine",
})
"""Folders of the lakehouse root that a group's or a source's folder may not take (compared
without case: some file systems do not tell them apart)."""


@dataclass(frozen=True)
class Deployment:
    """Every group's configuration (``group`` set on each where ``groups:`` is declared) and, per
    source, the configuration its shared ingest runs under (``ingest_of``)."""

    groups: tuple[PipelineConfig, ...]
    # A spine joined to several groups at once (``spine:`` beside ``groups:``); None: none.
    spine: SpineSpec | None = None

    @property
    def grouped(self) -> bool:
        return self.groups[0].group is not None

    @property
    def names(self) -> list[str]:
        return [g.group for g in self.groups if g.group is not None]

    def group(self, name: str | None) -> PipelineConfig:
        """The named group's configuration; ``None`` is the one configuration without groups."""
        if name is None:
            if self.grouped:
                raise ValueError(f"the configuration declares groups ({', '.join(self.names)}): name one")
            return self.groups[0]
        for g in self.groups:
            if g.group == name:
                return g
        raise ValueError(f"no group {name!r}; the configuration declares "
                         + (", ".join(self.names) if self.grouped else "no groups"))

    @property
    def ingests(self) -> tuple[PipelineConfig, ...]:
        """One configuration per source, in the order the groups first read it."""
        return tuple(dict.fromkeys(self.ingest_of(g) for g in self.groups))

    def ingest_of(self, config: PipelineConfig) -> PipelineConfig:
        """The configuration the ingest of ``config``'s source runs under: the group's own
        without groups; with them, what every group over that source reads (their key, their
        lateness, the union of their source fields)."""
        if not self.grouped:
            return config
        return _shared_ingest([g for g in self.groups if g.source == config.source])

    @property
    def folders(self) -> tuple[str | None, ...]:
        """The lakehouse's folders of tables: the root (None), then each named source's and
        each group's (``jobs.tables.root``)."""
        return tuple(dict.fromkeys([None, *(c.group or c.ingest_at for c in (*self.ingests, *self.groups))]))

    def source_ingest(self, name: str | None) -> PipelineConfig:
        """The ingest of the source named ``name`` (``ingest_at``); None: the landing folders'."""
        for ingest in self.ingests:
            if ingest.ingest_at == name:
                return ingest
        names = [i.ingest_at or "(the landing folders)" for i in self.ingests]
        raise ValueError(f"no source {name or '(the landing folders)'}; the configuration reads {', '.join(names)}")

    @classmethod
    def of(cls, configured: PipelineConfig | Deployment) -> Deployment:
        """A deployment as it is, or one configuration as the deployment of it alone."""
        return configured if isinstance(configured, Deployment) else cls((configured,))

    @classmethod
    def from_dict(cls, raw: Any) -> Deployment:
        if not isinstance(raw, dict) or "groups" not in raw:
            return cls((PipelineConfig.from_dict(raw),))
        if set(raw) - {"groups", "spine"}:
            others = ", ".join(sorted(str(k) for k in raw if k not in ("groups", "spine")))
            raise ValueError(f"groups: with groups, every setting but a spine joined to them belongs to a group "
                             f"(found {others} beside it; share settings between groups with YAML anchors)")
        declared = raw["groups"]
        if not isinstance(declared, dict) or not declared:
            raise ValueError("groups: expected a mapping of group name to its configuration, "
                             "for example {views: {key_field: user_id}}")
        groups = []
        for name, spec in declared.items():
            if not isinstance(name, str) or not GROUP_NAME.fullmatch(name):
                raise ValueError(f"groups: {name!r} is not a group name (letters, digits and underscores, "
                                 "starting with a letter)")
            if name.lower() in TABLE_FOLDERS:
                raise ValueError(f"groups.{name}: the name is taken by a table of the lakehouse")
            try:
                config = PipelineConfig.from_dict(spec)
            except ValueError as err:
                raise ValueError(f"groups.{name}: {err}") from None
            groups.append(replace(config, group=name,
                                  ingest_at=None if config.source is None else config.source.ingest_name))
        _unique_folders(groups)
        partitions = {g.partition for g in groups}
        if len(partitions) > 1:
            shown = ", ".join(f"{g.group}: {format_duration(g.partition)}" for g in groups)
            raise ValueError(f"groups: give every group the same partition ({shown}): their ingest and "
                             "schedules are shared; set it once with a YAML anchor")
        served: dict[tuple[str, str], str] = {}
        for g in groups:
            if g.online is not None and served.setdefault((g.online.url, g.online.table), g.group) != g.group:
                raise ValueError(f"groups.{g.group}.online: group {served[g.online.url, g.online.table]} serves "
                                 f"into the table {g.online.table} too; give each its own: online: {{table: ...}}")
        spine = None
        if raw.get("spine") is not None:
            if groups[0].partition != DAY_SECONDS:
                raise ValueError(f"partition: {format_duration(groups[0].partition)} is below a day, and a "
                                 "spine: joined to several groups runs by whole days")
            spine = joined_from_dict(raw["spine"], {g.group: g.key_names for g in groups})
            for joined in spine.groups:
                config = next(g for g in groups if g.group == joined.name)
                selected(config, joined.windows, joined.aggregations, where=f"spine.groups.{joined.name}")
        deployment = cls(tuple(groups), spine)
        deployment.ingests  # groups sharing a source that disagree on what its ingest reads fail here
        return deployment

    @classmethod
    def load(cls, path: str | Path | None) -> Deployment:
        """Read a YAML file; ``None`` gives the default configuration."""
        return cls((PipelineConfig(),)) if path is None else cls.from_dict(read_yaml(path))


def _unique_folders(groups: list[PipelineConfig]) -> None:
    """Each group's folder and each named source's ingest folder are different folders, also
    where a file system does not tell upper from lower case."""
    owners: dict[str, str] = {}
    for g in groups:
        if owners.setdefault(g.group.lower(), f"group {g.group}") != f"group {g.group}":
            raise ValueError(f"groups.{g.group}: {owners[g.group.lower()]} differs only in case; name it otherwise")
    sources: dict[str, Any] = {}
    for g in groups:
        if g.source is None:
            continue
        name = g.ingest_at
        if name.lower() in TABLE_FOLDERS:
            raise ValueError(f"groups.{g.group}.source: its ingest would be named {name}, a table of the lakehouse; "
                             "give it a name: source: {..., name: ...}")
        if name.lower() in owners:
            raise ValueError(f"groups.{g.group}.source: its ingest would be named {name}, as {owners[name.lower()]} "
                             "is; give it another name: source: {..., name: ...}")
        if sources.setdefault(name.lower(), g.source) != g.source:
            raise ValueError(f"groups.{g.group}.source: another source is also named {name}; "
                             "give each a name: source: {..., name: ...}")


INGEST_SETTINGS = (("key_names", "key"), ("allowed_lateness", "allowed_lateness"))
"""What the ingest of a source applies, so every group over it must say the same: records
without the key are quarantined, and events beyond the allowed lateness are set aside."""


def _shown(value: Any) -> str:
    """A setting as the YAML says it: a key's fields, or a duration (``allowed_lateness``)."""
    return ", ".join(value) if isinstance(value, tuple) else format_duration(value)


def _shared_ingest(groups: list[PipelineConfig]) -> PipelineConfig:
    """The configuration of one source's ingest: the settings the groups over it agree on, and
    each field any of them reads from the source, once, in the order first declared. What only
    the partials apply (filters, computed fields, watermarks, windows) stays with each group."""
    first = groups[0]
    where = f"groups {', '.join(g.group for g in groups)} read the same source"
    for g in groups[1:]:
        for attribute, label in INGEST_SETTINGS:
            if getattr(g, attribute) != getattr(first, attribute):
                raise ValueError(f"{where} with different {label} ({first.group}: {_shown(getattr(first, attribute))}, "
                                 f"{g.group}: {_shown(getattr(g, attribute))}); give them the same, or each its own "
                                 "source")
        if bool(g.fields) != bool(first.fields) or (not first.fields and g.value_field != first.value_field):
            raise ValueError(f"{where}: declare the same fields in each (or none, and the same value_field)")
    fields: dict[str, str] = {}
    for g in groups:
        for name, ddl in g.source_fields:
            if fields.setdefault(name, ddl) != ddl:
                raise ValueError(f"{where}: field {name} is {fields[name]} in one and {ddl} in another")
    declared = tuple(fields.items()) if first.fields else ()
    counted = (aggregation("count", "count", *declared[0]),) if declared else DEFAULT_AGGREGATIONS
    return replace(first, group=None, fields=declared, columns=(), where=None, aggregations=counted, spine=None,
                   online=None)
