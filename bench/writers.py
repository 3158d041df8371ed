"""The windows job written by delta-spark against its floor, beside the old hand-made writer.

    git worktree add --detach /work/wt/oldwriter c05ed8a          # the last commit with the old writer
    .venv/bin/python -m bench.writers --old /work/wt/oldwriter --events-per-day 1e7 --reps 5

Two Spark sessions, each in a process of its own (``bench/writer_worker.py``): one on this
checkout, whose jobs write with delta-spark, and one on ``--old``, whose jobs wrote through
panes' own Delta commit path (a Python data source writing Parquet on the tasks, committed by
delta-rs). Each builds its own lakehouse with its own code from the same generated events (8 event
days at ``--events-per-day``; minute partials of D-7 .. D and D-1's snapshot), then both are
warmed up by one untimed round and timed in ``--reps`` interleaved rounds, the best of each kept:

    delta-spark     this checkout's windows job for day D
    old writer      the old checkout's windows job for day D
    read floor      the frames and D-1's snapshot the job reads, Spark's noop sink
    write floor     the rows the job wrote for D (cached), written once by delta-spark

Only one side runs at a time; the other's JVM waits idle. The load average is printed with each
round: on a busy machine the figures are noise, and only the ratios of one round mean much.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from bench.pipeline import _count, keys_for

WORKER = Path(__file__).resolve().parent / "writer_worker.py"


class Worker:
    """A ``writer_worker`` process: its commands answered one JSON line each."""

    def __init__(self, name: str, code: Path, lakehouse: Path, args, floors: bool = False):
        self.name = name
        command = [sys.executable, str(WORKER), "--code", str(code), "--lakehouse", str(lakehouse),
                   "--events-per-day", str(args.events_per_day), "--keys", str(args.keys), "--seed", str(args.seed)]
        self.process = subprocess.Popen(command + (["--floors"] if floors else []), cwd=code, text=True,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        env={**os.environ, "PYTHONPATH": str(code)})

    def answer(self) -> dict:
        for line in self.process.stdout:
            if line.startswith("BENCH "):
                reply = json.loads(line[len("BENCH "):])
                if "error" in reply:
                    raise SystemExit(f"{self.name}: {reply['error']}")
                return reply
        raise SystemExit(f"{self.name} ended (exit {self.process.wait()}): see its log above")

    def ask(self, command: str) -> dict:
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        return self.answer()

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.stdin.write("quit\n")
            self.process.stdin.close()
            self.process.wait(timeout=120)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.writers", description=__doc__.split("\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--old", required=True, type=Path, help="a checkout of panes with the old writer (c05ed8a)")
    parser.add_argument("--events-per-day", type=_count, default=1_000_000, help="default 1e6")
    parser.add_argument("--keys", type=_count, default=None, help="default: one per 10 events of a day, 10^3 .. 10^6")
    parser.add_argument("--reps", type=_count, default=3, help="timed rounds, best of (default 3)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--work", type=Path, default=Path("bench/.work"))
    args = parser.parse_args(argv)
    args.keys = args.keys or keys_for(args.events_per_day)
    if not (args.old / "jobs" / "sliding_windows.py").exists():
        parser.error(f"{args.old} is no checkout of panes: git worktree add --detach {args.old} c05ed8a")
    here = Path(__file__).resolve().parent.parent
    folder = (args.work / f"writers-{args.events_per_day}-{args.keys}keys").resolve()
    print(f"{args.events_per_day:,} events a day, {args.keys:,} keys: each side builds its lakehouse ...", flush=True)
    new = Worker("delta-spark", here, folder / "delta-spark" / "lakehouse", args, floors=True)
    old = Worker("old writer", args.old.resolve(), folder / "old-writer" / "lakehouse", args)
    best: dict[str, float] = {}
    try:
        for worker in (new, old):
            worker.answer()  # ready
        for round_ in range(args.reps + 1):
            load = os.getloadavg()[0]
            times = {"delta-spark": new.ask("windows")["windows"], "old writer": old.ask("windows")["windows"]}
            floor = new.ask("floor")
            times |= {"read floor": floor["read"], "write floor": floor["write"]}
            label = "warm-up" if round_ == 0 else f"round {round_}"
            print(f"  {label}: " + ", ".join(f"{k} {v:.2f} s" for k, v in times.items()) + f" (load {load:.1f})",
                  flush=True)
            if round_:
                for k, v in times.items():
                    best[k] = min(best.get(k, v), v)
    finally:
        new.close()
        old.close()
    floor = best["read floor"] + best["write floor"]
    print(f"\nwindows job of day D, {args.events_per_day:,} events a day, best of {args.reps} interleaved rounds:")
    print(f"  {'':<34} {'seconds':>8} {'vs floor':>9}")
    for name, seconds in [("read floor", best["read floor"]), ("write floor (delta-spark)", best["write floor"]),
                          ("read + write floor", floor), ("delta-spark (this checkout)", best["delta-spark"]),
                          (f"old writer ({args.old.name})", best["old writer"])]:
        print(f"  {name:<34} {seconds:8.2f} {seconds / floor:8.2f}x")
    print(f"  delta-spark over the old writer: {best['delta-spark'] / best['old writer']:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
