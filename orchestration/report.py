"""The demo's closing summary: rows per table, the top keys, check results, where things are.

Reads the tables with delta-rs directly: a summary of small aggregates needs no Spark job.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow.compute as pc
from deltalake import DeltaTable

from jobs.online_values import lookup
from jobs.tables import (
    ALL_TABLES, EVENTS, LATE_EVENTS, QUARANTINE, SPINE_VALUES, WINDOW_CHANGES, WINDOW_SNAPSHOT, root,
)
from windowing_core.aggregations import Count, Sum
from windowing_core.config import PipelineConfig
from windowing_core.deployment import Deployment


def table_rows(lakehouse: Path, tables=ALL_TABLES) -> dict[str, int | None]:
    """Rows per table at ``lakehouse`` (a configuration's root: with groups, a group's or a
    source's folder), None for a table not written."""
    rows = {}
    for table in tables:
        path = table.path(str(lakehouse))
        try:
            rows[table.name] = DeltaTable(path).to_pyarrow_dataset().count_rows()
        except Exception:  # noqa: BLE001 - a table not written yet is reported as missing
            rows[table.name] = None
    return rows


def ranking_aggregation(config: PipelineConfig) -> str:
    """What "top keys" ranks by: the first sum (a 7-day total), else the first count, else the first."""
    for kind in (Sum, Count):
        for a in config.aggregations:
            if type(a) is kind:
                return a.name
    return config.aggregations[0].name


def top_keys(lakehouse: Path, config: PipelineConfig, limit: int = 5) -> tuple[str, list[dict]]:
    """The keys with the largest total in the latest snapshot of the first window; with session
    or count windows only, in each key's latest row of the first (as a point-in-time read at
    the newest row's end gives them: these windows have no snapshot)."""
    agg = ranking_aggregation(config)
    if not config.windows and config.sessions:
        first = config.sessions[0]
        return _top_keys_by_last_session(lakehouse, first.name, agg, limit,
                                         "latest closed session" if first.emit == "final" else "latest change")
    if not config.windows:
        return _top_keys_by_last_session(lakehouse, config.counts[0].name, agg, limit, "latest firing")
    window = config.windows[0].name
    dataset = DeltaTable(WINDOW_SNAPSHOT.path(str(lakehouse))).to_pyarrow_dataset()
    latest = pc.max(dataset.to_table(columns=["date"])["date"]).as_py()
    rows = dataset.to_table(filter=(pc.field("date") == latest) & (pc.field("window") == window),
                            columns=["key", agg, "as_of"])
    ranked = rows.sort_by([(agg, "descending"), ("key", "ascending")]).slice(0, limit).to_pylist()
    return f"{window} {agg} as of {ranked[0]['as_of'] if ranked else latest}", ranked


def _top_keys_by_last_session(lakehouse: Path, window: str, agg: str, limit: int,
                              row: str) -> tuple[str, list[dict]]:
    dataset = DeltaTable(WINDOW_CHANGES.path(str(lakehouse))).to_pyarrow_dataset()
    rows = dataset.to_table(filter=pc.field("window") == window, columns=["key", agg, "window_end"])
    newest = pc.max(rows["window_end"]).as_py()
    latest = rows.group_by("key").aggregate([("window_end", "max")]).rename_columns(["key", "window_end"])
    last_sessions = rows.join(latest, ["key", "window_end"], join_type="inner")
    ranked = last_sessions.sort_by([(agg, "descending"), ("key", "ascending")]).slice(0, limit).to_pylist()
    return f"{window} {agg} in each key's {row}, as of {newest}", ranked


def spine_sample(lakehouse: Path, config: PipelineConfig, limit: int = 5) -> list[dict]:
    """A few rows of ``spine_values``: spine rows with their values as of their ts."""
    spine = config.spine
    table = DeltaTable(SPINE_VALUES.path(str(lakehouse))).to_pyarrow_dataset().to_table()
    shown = [*spine.key_columns, spine.ts, *[c for c in table.column_names
                                    if c.endswith(("__window_end", "__event_count", f"__{ranking_aggregation(config)}"))]]
    return table.select(shown).sort_by([(spine.ts, "ascending")]).slice(0, limit).to_pylist()


def print_joined_spine(lakehouse: Path, deployment: Deployment, limit: int = 5) -> None:
    """A few rows of the spine joined to several groups: its keys and ts, and per group the
    event count of its first window and what ``top_keys`` ranks by."""
    spine = deployment.spine
    try:
        table = DeltaTable(SPINE_VALUES.path(str(lakehouse))).to_pyarrow_dataset().to_table()
    except Exception as err:  # noqa: BLE001 - the summary must not hide the run's own result
        print(f"\n(no spine values to show: {err})")
        return
    shown = [*spine.key_columns, spine.ts]
    for g in spine.groups:
        config = deployment.group(g.name)
        first = [w.name for w in (*config.windows, *config.sessions, *config.counts) if getattr(w, "keyed", True)][0]
        shown += [f"{g.name}__{first}__event_count", f"{g.name}__{first}__{ranking_aggregation(config)}"]
    rows = table.select([c for c in shown if c in table.column_names]).sort_by([(spine.ts, "ascending")])
    print(f"\nspine rows with each group's values as of their ts ({SPINE_VALUES.name}, first {limit} of "
          f"{rows.num_rows})")
    for row in rows.slice(0, limit).to_pylist():
        print("  " + "  ".join(f"{k}={v}" for k, v in row.items()))


def print_ingest(lakehouse: Path, ingest: PipelineConfig) -> None:
    """With groups: what one source's shared ingest wrote (its events, quarantine, and the
    events beyond the allowed lateness)."""
    folder = Path(root(str(lakehouse), ingest))
    source = ingest.source.location if ingest.source is not None else "the landing folders"
    print(f"\ningest of {source}: tables (Delta Lake) under {folder}")
    _print_rows(table_rows(folder, (EVENTS, QUARANTINE, LATE_EVENTS)))


def _print_rows(rows: dict[str, int | None], notes: dict[str, str] | None = None) -> None:
    for name, n in rows.items():
        note = (notes or {}).get(name)
        print(f"  {name:<16} {'missing' if n is None else f'{n:>10,} rows'}{f'  ({note})' if note else ''}")


def print_summary(lakehouse: Path, config: PipelineConfig, checks: list) -> None:
    """What ``config`` wrote under the lakehouse root ``lakehouse``: a group, its own tables under
    its folder (``print_ingest`` shows its source's)."""
    lakehouse = Path(root(str(lakehouse), config))
    print(f"\n{'group ' + config.group + ': ' if config.group else ''}tables (Delta Lake) under", lakehouse)
    own = ALL_TABLES if config.group is None else [t for t in ALL_TABLES if t not in (EVENTS, QUARANTINE, SPINE_VALUES)]
    _print_rows(table_rows(lakehouse, own),
                {LATE_EVENTS.name: "behind the watermark; beyond the lateness: the ingest's"} if config.group else None)
    try:
        title, ranked = top_keys(lakehouse, config)
        print(f"\ntop keys by {title}")
        for row in ranked:
            print(f"  {row['key']:<12} {row[ranking_aggregation(config)]:>10}")
    except Exception as err:  # noqa: BLE001 - the summary must not hide the run's own result
        print(f"\n(no snapshot to rank keys: {err})")
    if config.spine is not None:
        try:
            rows = spine_sample(lakehouse, config)
            print(f"\nspine rows with their values as of their ts ({SPINE_VALUES.name}, first {len(rows)})")
            for row in rows:
                print("  " + "  ".join(f"{k}={v}" for k, v in row.items()))
        except Exception as err:  # noqa: BLE001 - the summary must not hide the run's own result
            print(f"\n(no spine values to show: {err})")
    if config.online is None:
        print("\n(online store: none configured; `bash run.sh demo --online postgresql://USER@HOST:PORT/DATABASE` "
              "loads one: docs/guides/online-store.md)")
    else:
        try:
            _, ranked = top_keys(lakehouse, config, limit=1)
            key = ranked[0]["key"]
            print(f"\nthe online store ({config.online.table}) looked up for {key}, as an application reads it:")
            print(f'  SELECT * FROM {config.online.table} WHERE key = \'{key}\';')
            for row in lookup(config.online, config, key):
                print("  " + "  ".join(f"{k}={v}" for k, v in row.items() if k != "key"))
        except Exception as err:  # noqa: BLE001 - the summary must not hide the run's own result
            print(f"\n(no online values to show: {err})")
    if checks:
        print("\nasset checks")
        for c in sorted(checks, key=lambda c: (c.asset_key.to_user_string(), c.check_name)):
            status = "passed" if c.passed else f"FAILED ({c.severity.value})"
            print(f"  {c.asset_key.to_user_string():<16} {c.check_name:<40} {status}")
