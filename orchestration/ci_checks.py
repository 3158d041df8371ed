"""CI: materialise a range of demo days into a temporary lakehouse, run every asset check, judge.

    python -m orchestration.ci_checks --from 2025-01-27 --to 2025-01-29 [--events-per-day N]

Generates the seeded demo events for the event days ``--from .. --to`` into a temporary landing
folder, materialises every asset's daily partitions of that range as one Dagster run (the
checks run in the same run, blocking ones before anything downstream), prints one row per check
with its result per day, and the details of every failure. Exit status: 0 when every ERROR check
passed on every day (WARN failures are printed, not fatal), 1 when an ERROR check failed or did
not run (blocked upstream, or the run failed), 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

from jobs.cli import documented_parser


@dataclass(frozen=True)
class Row:
    """One check on one day: passed, failed, or never evaluated (None)."""

    asset: str
    check: str
    severity: str
    day: date
    passed: bool | None
    detail: str = ""


def _day(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a date (YYYY-MM-DD): {text!r}") from None


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = documented_parser(__doc__, prog="python -m orchestration.ci_checks")
    parser.add_argument("--from", dest="first", required=True, type=_day, help="first event day, YYYY-MM-DD")
    parser.add_argument("--to", dest="last", required=True, type=_day, help="last event day (included)")
    parser.add_argument("--events-per-day", type=int, default=2000, help="demo events per day (default 2000)")
    parser.add_argument("--keys", type=int, default=200, help="distinct demo keys (default 200)")
    parser.add_argument("--seed", type=int, default=7, help="demo seed (default 7)")
    parser.add_argument("--config", default=None, help="pipeline configuration YAML (default: 7d window)")
    parser.add_argument("--workdir", default=None,
                        help="keep landing/ and lakehouse/ here instead of a temporary folder")
    args = parser.parse_args(argv)
    if args.last < args.first:
        parser.error(f"--to {args.last} is before --from {args.first}")
    from assets.partitions import daily_partitions

    start = daily_partitions.start.date()
    if args.first < start:
        parser.error(f"--from {args.first} is before the first daily partition {start} "
                     "(PANES_START_DATE)")
    for name in ("events_per_day", "keys"):
        if getattr(args, name) <= 0:
            parser.error(f"--{name.replace('_', '-')} must be positive")
    return args


def rows_of(evaluations: Iterable, expected: Iterable[tuple[str, str, str]], days: list[date]) -> list[Row]:
    """A row per expected (asset, check, severity) and day; a check without an evaluation that
    day did not run (its step was skipped because something upstream failed). An unpartitioned
    check's one evaluation stands for every day."""
    seen = {(e.asset_key.to_user_string(), e.check_name, e.partition): e for e in evaluations}
    rows = []
    for asset, check, severity in expected:
        for day in days:
            e = seen.get((asset, check, day.isoformat())) or seen.get((asset, check, None))
            if e is not None:
                severity = e.severity.value
            rows.append(Row(asset, check, severity, day, None if e is None else e.passed,
                            "" if e is None or e.passed else _detail(e)))
    return rows


def _detail(evaluation) -> str:
    parts = [evaluation.description] if evaluation.description else []
    for key in ("problems", "by_reason", "sample_rows"):
        if key in evaluation.metadata:
            value = evaluation.metadata[key].value
            parts.append(f"{key}: {json.dumps(value, default=str)[:600]}")
    return " | ".join(parts)


def failed_errors(rows: list[Row]) -> list[Row]:
    return [r for r in rows if r.severity == "ERROR" and r.passed is not True]


def exit_code(rows: list[Row], run_succeeded: bool) -> int:
    """1 when any ERROR check failed or did not run, or the run failed for another reason."""
    return 1 if failed_errors(rows) or not run_succeeded else 0


def print_table(rows: list[Row], out=None) -> None:
    out = out or sys.stdout
    days = sorted({r.day for r in rows})
    marks = {True: "pass", False: "FAIL", None: "-"}
    by_check: dict[tuple[str, str], dict[date, Row]] = {}
    for r in rows:
        by_check.setdefault((r.asset, r.check), {})[r.day] = r
    width = max([len(f"{a}.{c}") for a, c in by_check] + [10])
    header = f"{'check':<{width}}  {'severity':<8}  " + "  ".join(f"{d:%m-%d}" for d in days)
    print(header, file=out)
    print("-" * len(header), file=out)
    for (asset, check), per_day in by_check.items():
        severity = "ERROR" if any(r.severity == "ERROR" for r in per_day.values()) else "WARN"
        cells = "  ".join(f"{marks[per_day[d].passed] if d in per_day else '-':>5}" for d in days)
        print(f"{asset + '.' + check:<{width}}  {severity:<8}  {cells}", file=out)
    failures = [r for r in rows if r.passed is False]
    if failures:
        print("\nfailures", file=out)
        for r in failures:
            print(f"  {r.day} {r.asset}.{r.check} [{r.severity}]: {r.detail}", file=out)
    skipped = [r for r in rows if r.passed is None]
    if skipped:
        print(f"\n{len(skipped)} check evaluations did not run (an upstream step failed or a blocking "
              "check stopped the run), marked '-'", file=out)


def expected_checks(defs, config) -> list[tuple[str, str, str]]:
    """(asset, check, severity) of every check the Definitions hold, in the catalog's table order
    (pipeline order; with groups, ingest first, then group by group); a check outside the
    catalog has the severity its spec declares (ERROR if none)."""
    from expectations.catalog import catalog

    known = {(c.table, c.name): c.severity for c in catalog(config)}
    tables = list(dict.fromkeys(t for t, _ in known))
    graph = defs.resolve_asset_graph()
    keys = {(k.asset_key.to_user_string(), k.name) for k in graph.asset_check_keys}
    declared = {(k.asset_key.to_user_string(), k.name): graph.get_check_spec(k).metadata.get("severity", "ERROR")
                for k in graph.asset_check_keys}
    order = {key: i for i, key in enumerate(known)}

    def position(key: tuple[str, str]) -> tuple:
        prefix, _, table = key[0].rpartition("/")
        shared = table in ("events", "quarantine")
        at = tables.index(table) if table in tables else len(tables)
        return not shared, "" if shared else prefix, at, order.get((table, key[1]), len(order)), key

    return [(asset, name, known.get((asset.rpartition("/")[2], name), declared[asset, name]))
            for asset, name in sorted(keys, key=position)]


def materialise_with_checks(defs, first: date, last: date):
    """One Dagster run of every asset and check over ``first .. last``; returns the run result."""
    import dagster as dg

    return defs.resolve_job_def("daily_pipeline").execute_in_process(
        instance=dg.DagsterInstance.ephemeral(),
        tags={"dagster/asset_partition_range_start": first.isoformat(),
              "dagster/asset_partition_range_end": last.isoformat()},
        run_config={"loggers": {"console": {"config": {"log_level": "INFO"}}}},
        raise_on_error=False,
    )


def run(args: argparse.Namespace, workdir: Path) -> int:
    from orchestration.demo_events import generate_demo_events
    from orchestration.definitions import build_definitions
    from windowing_core.deployment import Deployment

    started = time.monotonic()
    deployment = Deployment.load(args.config)
    config = deployment.groups[0]
    landing, lakehouse = workdir / "landing", workdir / "lakehouse"
    days = [args.first + timedelta(days=i) for i in range((args.last - args.first).days + 1)]
    demo = generate_demo_events(landing, start=args.first, days=len(days), events_per_day=args.events_per_day,
                                keys=args.keys, seed=args.seed)
    for day in days:  # a quiet day still has an (empty) folder
        (landing / day.isoformat()).mkdir(parents=True, exist_ok=True)
    print(f"generated {demo.records_written} demo records under {landing}; materialising {args.first} .. "
          f"{args.last} with every asset check ...", flush=True)
    defs = build_definitions(deployment, landing_root=str(landing), lakehouse_root=str(lakehouse))
    result = materialise_with_checks(defs, args.first, args.last)
    rows = rows_of(result.get_asset_check_evaluations(), expected_checks(defs, config), days)
    print()
    print_table(rows)
    code = exit_code(rows, result.success)
    failed = failed_errors(rows)
    verdict = ("all ERROR checks passed" if code == 0 else
               f"{len(failed)} ERROR check evaluations failed or did not run" if failed else "the run failed")
    print(f"\n{verdict} ({time.monotonic() - started:.0f}s)")
    return code


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    if args.workdir:
        workdir = Path(args.workdir).resolve()
        workdir.mkdir(parents=True, exist_ok=True)
        return run(args, workdir)
    with tempfile.TemporaryDirectory(prefix="panes-ci-") as folder:
        return run(args, Path(folder))


if __name__ == "__main__":
    sys.exit(main())
