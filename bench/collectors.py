"""The driver JVM's garbage collector: panes' default (parallel) against Java 17's own (G1).

    .venv/bin/python -m bench.collectors                       # 10^7, 2 rounds, ~30 min
    .venv/bin/python -m bench.collectors --size 1e6 --rounds 3

A collector is chosen when the JVM starts, so the two cannot share one Spark session as the
other comparisons do. Each round runs ``bench.run`` at one size, floor and panes only, once per
collector in its own process (the order alternates between rounds), on the lakehouse an earlier
``bench.run`` left (``--reuse``); each such run is itself warmed up and best of 3. Printed: each
run's seconds and CPU seconds, and per round G1's time over the parallel collector's.
"""

from __future__ import annotations

import argparse
import csv
import subprocess
import sys
import tempfile
from pathlib import Path

COLLECTORS = {"parallel": "-XX:+UseParallelGC", "G1": "-XX:+UseG1GC"}


def run_once(size: str, options: str, out: Path, work: str) -> dict[str, dict]:
    """One ``bench.run`` at ``size`` with the driver's JVM options; its rows by method."""
    done = subprocess.run([sys.executable, "-m", "bench.run", "--sizes", size, "--reuse", "--skip-spark-windows",
                           "--skip-scaling", "--work", work, "--out", str(out),
                           "--spark-conf", f"spark.driver.extraJavaOptions={options}"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"bench.run with {options} failed ({done.returncode}):\n{done.stderr[-4000:]}")
    with open(out / "results.csv") as f:
        return {row["method"]: row for row in csv.DictReader(f)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--size", default="1e7", help="events over the 8 days (default 1e7)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds, each running both collectors (default 2)")
    parser.add_argument("--work", default="bench/.work", help="the lakehouses of an earlier bench.run")
    args = parser.parse_args(argv)

    print(f"{'round':>5}  {'collector':<9} {'floor s':>8} {'panes s':>8} {'vs floor':>9} {'panes cpu s':>12}")
    with tempfile.TemporaryDirectory(prefix="panes-collectors-") as scratch:
        for round_ in range(1, args.rounds + 1):
            order = list(COLLECTORS) if round_ % 2 else list(reversed(COLLECTORS))
            seconds = {}
            for name in order:
                rows = run_once(args.size, COLLECTORS[name], Path(scratch) / f"{name}-{round_}", args.work)
                floor, panes = rows["scan floor"], rows["panes"]
                seconds[name] = float(panes["seconds"])
                print(f"{round_:>5}  {name:<9} {float(floor['seconds']):>8.2f} {float(panes['seconds']):>8.2f} "
                      f"{float(panes['ratio_to_floor']):>8.2f}x {float(panes['cpu_seconds']):>12.1f}", flush=True)
            print(f"{round_:>5}  panes with G1 over panes with the parallel collector: "
                  f"{seconds['G1'] / seconds['parallel']:.2f}x", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
