"""``python -m bench latency``: from a file landing in an hour folder to its change points, with the
real Dagster daemon.

    python -m bench latency                      # 10,000 events in the hour under way, ~3 min
    python -m bench latency --events 1000

A deployment of ``partition: 1h`` in a folder of its own (landing, lakehouse, and a
``DAGSTER_HOME`` with the project's ``instance/dagster.yaml``; partitions from the day of the hour),
``dagster-daemon run`` over the project's workspace, then one file of ``--events`` events lands
in the folder of the hour under way (written aside and renamed in, as a producer should), its
events between the hour's start and the landing. Nothing else runs: the landing sensor asks for
that hour's ingest (the partition under way exists below a day), and the late-firing sensor for
the partials and windows its arrival can change, which Dagster launches as one backfill of one
run. Timed from the landing, as the instance recorded the runs: each run's request, start and
end, and the first moment ``window_changes`` holds rows (polled every second). The bound the
latency must keep is printed beside it: the three daemon intervals the path waits on at most
(the landing sensor's, the late-firing sensor's, and the backfill daemon's, 30 s each in Dagster
1.13) plus the two runs' own times.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from orchestration.event_set.landing_lines import event_record, record_line
from orchestration.event_set.python_draws import PythonDraws
from orchestration.event_set.shape import EventShape

ROOT = Path(__file__).resolve().parent.parent
DAEMON_INTERVALS = 3 * 30
"""The landing sensor's minimum interval, the late-firing sensor's, and the backfill daemon's
fixed iteration (``orchestration.automation``; ``dagster._daemon.controller``)."""


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench latency", description=__doc__.split("\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--events", type=int, default=10_000, help="events in the landed file (default 10000)")
    parser.add_argument("--keys", type=int, default=500, help="distinct keys (default 500)")
    parser.add_argument("--work", default="bench/.work/latency", help="scratch folder (emptied first)")
    parser.add_argument("--timeout", type=float, default=1200, help="seconds to wait for the change points")
    args = parser.parse_args(argv)
    if args.events < 1 or args.keys < 1:
        parser.error("--events and --keys must be positive")
    return args


def landed_lines(start: datetime, seconds: int, events: int, keys: int, seed: int = 7) -> str:
    """``events`` events of the generated set's shape (``orchestration.event_set``) in the
    ``seconds`` from ``start``."""
    draws, rng = PythonDraws(EventShape(keys=keys), seed), random.Random(f"bench-latency:{seed}")

    def at() -> str:
        return f"{start + timedelta(seconds=rng.randrange(max(1, seconds))):%Y-%m-%dT%H:%M:%SZ}"

    return "".join(record_line(event_record("user_id", key, at(), draws.value(rng), f"e{i}")) + "\n"
                   for i, key in enumerate(draws.keys(rng, events)))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    work = Path(args.work).resolve()
    shutil.rmtree(work, ignore_errors=True)
    landing, lakehouse, home = work / "landing", work / "lakehouse", work / "dagster_home"
    for folder in (landing, lakehouse, home):
        folder.mkdir(parents=True)
    shutil.copy(ROOT / "instance" / "dagster.yaml", home / "dagster.yaml")
    (work / "panes.yaml").write_text("partition: 1h\n")
    hour = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    env = {"DAGSTER_HOME": str(home), "PANES_CONFIG": str(work / "panes.yaml"), "PANES_LANDING": str(landing),
           "PANES_LAKEHOUSE": str(lakehouse), "PANES_START_DATE": hour.date().isoformat(),
           "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    os.environ.update(env)  # before Dagster's instance and the Definitions are read

    import dagster as dg

    from jobs.storage import delta_io
    from jobs.tables import WINDOW_CHANGES
    from orchestration.backfill import running_daemon
    from orchestration.demo import WORKSPACE

    text = landed_lines(hour, int((datetime.now(UTC) - hour).total_seconds()), args.events, args.keys)
    folder = landing / hour.date().isoformat() / f"{hour:%H}"
    changes = WINDOW_CHANGES.path(str(lakehouse))
    instance = dg.DagsterInstance.get()
    with running_daemon(WORKSPACE, os.environ, work / "daemon.log") as daemon:
        time.sleep(10)  # the daemon loads the code location and starts its sensors
        folder.mkdir(parents=True)
        aside = folder.parent / f".{folder.name}.json.tmp"
        aside.write_text(text)
        landed = time.time()
        aside.rename(folder / "events.json")
        print(f"landed {args.events} events in {folder} at {datetime.now(UTC):%H:%M:%S}", flush=True)
        readable = None
        while readable is None and time.time() - landed < args.timeout and daemon.poll() is None:
            if delta_io.table_exists(changes) and delta_io.row_count(changes):
                readable = time.time() - landed
            time.sleep(1)
        while any(not r.is_finished for r in instance.get_runs()) and time.time() - landed < args.timeout:
            time.sleep(2)  # the runs' processes outlive the daemon: let them end here
    records = sorted(instance.get_run_records(), key=lambda r: r.create_timestamp)
    run_seconds = 0.0
    for record in records:
        run = record.dagster_run
        selected = ", ".join(sorted(k.to_user_string() for k in run.asset_selection or []))
        partitions = run.tags.get("dagster/partition") or "{} .. {}".format(
            run.tags.get("dagster/asset_partition_range_start"), run.tags.get("dagster/asset_partition_range_end"))
        ended = (record.end_time or time.time()) - landed
        run_seconds += (record.end_time or time.time()) - (record.start_time or record.create_timestamp.timestamp())
        print(f"  run {run.run_id[:8]} {run.status.value.lower():8} requested +{record.create_timestamp.timestamp() - landed:5.1f} s, "
              f"started +{(record.start_time or landed) - landed:5.1f} s, ended +{ended:5.1f} s: {selected} ({partitions})")
    if readable is None:
        print(f"no change points within {args.timeout:.0f} s: see {work / 'daemon.log'}")
        return 1
    bound = DAEMON_INTERVALS + run_seconds
    print(f"change points readable {readable:.1f} s after the file landed; bound: {DAEMON_INTERVALS} s of daemon "
          f"intervals + {run_seconds:.1f} s of runs = {bound:.1f} s ({readable / bound:.2f}x)")
    return 0 if readable <= bound else 1


if __name__ == "__main__":
    sys.exit(main())
