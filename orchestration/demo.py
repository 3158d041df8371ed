"""The main job on a laptop: demo events -> every asset over the demo's days -> checks -> summary.

It launches a backfill of the job ``daily_pipeline`` (every asset) over its days, as a user would
from the job's page in the UI, into the instance in ``DAGSTER_HOME`` (``./.dagster_home`` by
default), and runs ``dagster-daemon`` until the backfill has ended: ``bash run.sh dev`` afterwards
shows the backfill, its one run (a range of days is one run: every asset's backfill policy) and
every materialisation and check result.
The daily partitions are the demo's days: it sets ``PANES_START_DATE`` and ``PANES_END_DATE`` to
its first and last day, here and in ``./.env`` (which ``bash run.sh dev`` reads, with the
landing folder and lakehouse), so the UI shows no missing partition before or after the data.

It also writes a table of purchases (``./purchases``, Parquet), the second source, and a small
spine of labelled moments (``./spine``). Without ``--config`` it runs two feature groups:
``views``, the landing events per user (the defaults: a 7-day count and sum sliding every
minute), and ``purchases``, the purchases table per (user, country), cancelled ones filtered out
and each one's amount computed (``price * quantity``); the spine is joined to both
(``spine_values``). That configuration is written to ``./demo-config.yaml`` and named in
``./.env`` (``PANES_CONFIG``) for ``bash run.sh dev``.

With ``--online postgresql://USER@HOST:PORT/DATABASE`` (the password, if any, in
``PANES_ONLINE_PASSWORD``) the group ``views`` also has an online store: the run loads it
(``online_values``), checks it, and the summary prints a key's lookup.

    python -m orchestration.demo [--events-per-day N] [--days N] [--keys N] [--online URL]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import date, timedelta
from pathlib import Path

from jobs.cli import documented_parser

DEFAULT_START = date(2025, 1, 27)
WORKSPACE = Path(__file__).resolve().parents[1] / "workspace.yaml"


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = documented_parser(__doc__)
    parser.add_argument("--landing", default="landing", help="landing folder (default ./landing)")
    parser.add_argument("--lakehouse", default="lakehouse", help="lakehouse root (default ./lakehouse)")
    parser.add_argument("--config", default=None,
                        help="pipeline configuration YAML (default: the defaults with the demo's spine)")
    parser.add_argument("--online", default=None, metavar="URL",
                        help="a PostgreSQL database to load as the online store (postgresql://USER@HOST:PORT/DB)")
    parser.add_argument("--spine", default="spine", help="where the demo's spine is written (default ./spine)")
    parser.add_argument("--purchases", default="purchases",
                        help="where the demo's table of purchases is written (default ./purchases)")
    parser.add_argument("--spine-rows-per-day", type=int, default=200, help="default 200")
    parser.add_argument("--days", type=int, default=8, help="event days to generate (default 8)")
    parser.add_argument("--events-per-day", type=int, default=20000, help="default 20000")
    parser.add_argument("--keys", type=int, default=2000, help="distinct keys (default 2000)")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    if args.online and args.config:
        parser.error("--online goes with the demo's configuration; with --config, put online: in your configuration")
    for name in ("days", "events_per_day", "keys", "spine_rows_per_day"):
        if getattr(args, name) <= 0:
            parser.error(f"--{name.replace('_', '-')} must be positive")
    return args


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    os.environ.setdefault("DAGSTER_HOME", str(Path(".dagster_home").resolve()))
    Path(os.environ["DAGSTER_HOME"]).mkdir(parents=True, exist_ok=True)

    from orchestration.demo_events import generate_demo_events, generate_demo_purchases, generate_demo_spine
    from windowing_core.deployment import Deployment

    started = time.monotonic()
    landing, lakehouse = Path(args.landing).resolve(), Path(args.lakehouse).resolve()
    spine, purchases = Path(args.spine).resolve(), Path(args.purchases).resolve()
    config_path = args.config or write_demo_config(Path("demo-config.yaml"), spine, purchases, args.online)
    try:
        deployment = Deployment.load(config_path)
        config = deployment.groups[0]
    except ValueError as err:
        print(f"demo: bad configuration: {err}", file=sys.stderr)
        return 2
    demo = generate_demo_events(landing, start=DEFAULT_START, days=args.days,
                                events_per_day=args.events_per_day, keys=args.keys, seed=args.seed)
    spine_rows = generate_demo_spine(spine, start=DEFAULT_START, days=args.days, rows_per_day=args.spine_rows_per_day,
                                     keys=args.keys, seed=args.seed, key_field=config.key_field)
    first, last = demo.first_event_date, demo.last_arrival_date or demo.last_event_date
    for offset in range((last - first).days + 1):  # a quiet day still has an (empty) folder
        (landing / (first + timedelta(days=offset)).isoformat()).mkdir(parents=True, exist_ok=True)
    print(f"generated {demo.records_written} records in {demo.files_written} files under {landing} "
          f"(arrival days {first} .. {last})", flush=True)
    # before the Definitions load: the partitions are read from the environment then
    print(f"wrote a spine of {spine_rows} labelled moments under {spine}", flush=True)
    bought = generate_demo_purchases(purchases, start=DEFAULT_START, days=args.days,
                                     purchases_per_day=max(1, args.events_per_day // 10), keys=args.keys,
                                     seed=args.seed)
    print(f"wrote a table of {bought} purchases under {purchases}", flush=True)
    partitions = {"PANES_START_DATE": first.isoformat(), "PANES_END_DATE": last.isoformat(),
                  "PANES_CONFIG": str(Path(config_path).resolve()),
                  "PANES_LANDING": str(landing), "PANES_LAKEHOUSE": str(lakehouse)}
    os.environ.update(partitions)
    set_in_env_file(Path(".env"), partitions)
    print(f"daily partitions {first} .. {last}, configuration {config_path} (PANES_START_DATE, PANES_END_DATE, "
          "PANES_CONFIG, PANES_LANDING and PANES_LAKEHOUSE in ./.env)", flush=True)

    import dagster as dg

    from orchestration.backfill import BackfillError, follow, launch_backfill, running_daemon
    from orchestration.ci_checks import exit_code, expected_checks, print_table, rows_of
    from orchestration.definitions import build_definitions
    from orchestration.report import print_ingest, print_joined_spine, print_summary

    defs = build_definitions(deployment, landing_root=str(landing), lakehouse_root=str(lakehouse))
    days = [first + timedelta(days=i) for i in range((last - first).days + 1)]
    instance = dg.DagsterInstance.get()
    daemon_log = Path(os.environ["DAGSTER_HOME"]) / "daemon.log"
    try:
        backfill_id = launch_backfill(WORKSPACE, "daily_pipeline", [d.isoformat() for d in days],
                                      title=f"demo {first} .. {last}", env=os.environ)
        print(f"launched backfill {backfill_id} of daily_pipeline (every asset) for {first} .. {last}, as its "
              f"page in the UI launches one; dagster-daemon runs it (its log: {daemon_log})", flush=True)
        with running_daemon(WORKSPACE, os.environ, daemon_log) as daemon:
            runs = follow(instance, backfill_id, daemon, say=lambda line: print(line, flush=True))
    except BackfillError as err:
        print(f"demo: {err}", file=sys.stderr)
        return 1
    if deployment.grouped:
        for ingest in deployment.ingests:
            print_ingest(lakehouse, ingest)
    for group in deployment.groups:
        print_summary(lakehouse, group, [])
    if deployment.spine is not None:
        print_joined_spine(lakehouse, deployment)
    evaluations = [r.event_log_entry.dagster_event.event_specific_data for run in runs
                   for r in instance.get_records_for_run(
                       run.run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION).records]
    rows = rows_of(evaluations, expected_checks(defs, config), days)
    print("\nasset checks, per daily partition (ERROR checks block what is downstream; WARN only report)")
    print_table(rows)
    code = exit_code(rows, bool(runs) and all(r.status == dg.DagsterRunStatus.SUCCESS for r in runs))
    print(f"{'done' if code == 0 else 'FAILED'} in {time.monotonic() - started:.0f}s; "
          f"see it in the UI: bash run.sh dev (DAGSTER_HOME={os.environ['DAGSTER_HOME']})")
    return code


def write_demo_config(path: Path, spine: Path, purchases: Path, online: str | None = None) -> str:
    """The demo's two groups and the spine joined to both (and an online store), as YAML: what
    the demo runs and what ``bash run.sh dev`` loads afterwards."""
    store = f"    online:\n      url: {json.dumps(online)}\n" if online else ""
    path.write_text(f"""\
# written by python -m orchestration.demo: two feature groups over two sources, and a spine
# joined to both as of each row's ts (spine_values)
groups:
  views:                 # the landing folders' events per user: the defaults, a 7-day count
    key: user_id         # and sum sliding every minute
{store}  purchases:             # a table of purchases per (user, country)
    source:
      path: {json.dumps(str(purchases))}
      time: ts
      arrival: loaded_at
      id: purchase_id
      name: purchase_table
    key: [user_id, country]
    fields:
      price: decimal(10,2)
      quantity: long
      amount: decimal(18,2)
    columns:
      amount: price * quantity
    where: quantity > 0    # cancelled purchases are left out (and counted)
    windows:
      1d: {{length: 1d, slide: 1h}}
    aggregations:
      orders: {{kind: count, field: amount}}
      spend: {{kind: sum, field: amount}}
      largest: {{kind: max, field: amount}}
spine:
  path: {json.dumps(str(spine))}
  ts: ts
  groups:
    views: {{key: user_id}}
    purchases: {{key: [user_id, country]}}
""")
    return str(path)


def set_in_env_file(path: Path, values: dict[str, str]) -> None:
    """Set ``values`` in a ``.env`` file (``NAME=value`` lines), keeping its other lines."""
    kept = [line for line in (path.read_text().splitlines() if path.exists() else [])
            if line.split("=", 1)[0].strip() not in values]
    path.write_text("\n".join([*kept, *(f"{name}={value}" for name, value in values.items())]) + "\n")


if __name__ == "__main__":
    sys.exit(main())
