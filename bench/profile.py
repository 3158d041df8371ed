"""Inside the daily run: where the driver JVM spends each job's time, from Java Flight Recorder
and Spark's own stage metrics, on one lakehouse of ``python -m bench``.

    .venv/bin/python -m bench.profile                 # the lakehouse of python -m bench --events-per-day 1e7
    .venv/bin/python -m bench.profile --lakehouse bench/.work/day-1000000-100000keys/lakehouse --runs 6

``python -m bench --profile`` prints Spark's stages of every stage; this looks inside the two
jobs. After two untimed daily runs (``bench.methods.panes_day``: both jobs, their Delta writes
included), each job runs ``--runs``
more times under a JFR recording of its own, started and stopped through the driver JVM, so
only that job is sampled (JFR's ``profile`` settings: each running Java thread every 10 ms).
On a local master the driver JVM runs every task. For each job it prints:

- Spark's stages of its last run (the UI's REST API): tasks, task seconds, JVM CPU seconds,
  rows read by scans, shuffled in and out;
- the task threads' samples by what they were doing: each sample goes to the first frame from
  the top of its stack that is not a utility (``java.*``, ``scala.*``, Spark's unsafe rows),
  classified by the operator it belongs to, with the methods most often on top in each class.
  Frames of one stage are pipelined (a scan feeds a sort that feeds a writer), so the classes
  say which operator's own code ran, not which stage.

Summarising a recording needs the JDK's ``jfr`` tool (Debian: ``openjdk-17-jdk-headless``;
the JRE records but has no ``jfr``): without it the recordings are kept and the command that
reads them is printed.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

from bench.measure import _rest
from bench.pipeline import DAY

# (class, pattern of the first non-utility frame), first match wins
CLASSES = [
    ("Arrow batches for the Python writer", r"\.sizeInBytes|org\.apache\.spark\.sql\.execution\.arrow\.|org\.apache\.arrow\."),
    ("Python worker I/O", r"PythonArrowInput|PythonRunner|\.python\."),
    ("sort", r"UnsafeExternalRowSorter|UnsafeInMemorySorter|TimSort|UnsafeSortDataFormat|UnsafeExternalSorter"
             r"|PrefixComparator|RadixSort|sort_addToSorter|SortExec"),
    ("Window", r"execution\.window\.|AggregateProcessor"),
    ("hash aggregate", r"hashAgg_|AggregationMap|BytesToBytesMap"),
    ("sort aggregate", r"SortBasedAggregat|AggregationIterator"),
    ("shuffle read", r"ShuffleBlockFetcherIterator|UnsafeRowSerializer|BlockStoreShuffleReader|ShuffledRowRDD"
                     r"|\.storage\.|io\.compress|jpountz|luben"),
    ("shuffle write", r"ShuffleExternalSorter|UnsafeShuffleWriter|ShuffleInMemorySorter|DiskBlockObjectWriter"
                      r"|\.shuffle\."),
    ("Parquet scan", r"[Pp]arquet"),
    ("date and time functions", r"DateTimeUtils"),
    ("generated code (projections, filters, generators)", r"GeneratedClass"),
    ("code generation", r"janino|codehaus|CodeGenerator"),
]
UTILITY = re.compile(r"^(java\.|javax\.|jdk\.|sun\.|scala\.|org\.apache\.spark\.unsafe\."
                     r"|org\.apache\.spark\.sql\.catalyst\.util\."
                     r"|org\.apache\.spark\.sql\.catalyst\.expressions\.(UnsafeRow|JoinedRow|SpecificInternalRow"
                     r"|GenericInternalRow|codegen\.Unsafe|BaseOrdering|InterpretedOrdering))")
FRAME = re.compile(r"^\s+([\w.$<>]+)\(", re.M)
THREAD = re.compile(r'sampledThread = "([^"]*)"')


def classify(stack: list[str]) -> tuple[str, str]:
    """(class, top method) of one sample's stack, top frame first."""
    top = ".".join(stack[0].split(".")[-2:]) if stack else "?"
    for frame in stack:
        if UTILITY.match(frame) and "DateTimeUtils" not in frame:
            continue
        for name, pattern in CLASSES:
            if re.search(pattern, frame):
                return name, top
        return "other", ".".join(frame.split(".")[-2:])
    return "utilities only", top


def task_samples(recording: Path, jfr: str) -> list[list[str]]:
    """The stacks JFR sampled on Spark's task threads."""
    text = subprocess.run([jfr, "print", "--events", "jdk.ExecutionSample", "--stack-depth", "64", str(recording)],
                          check=True, capture_output=True, text=True).stdout
    samples = []
    for event in text.split("jdk.ExecutionSample")[1:]:
        thread = THREAD.search(event)
        if thread and "Executor task" in thread.group(1):
            samples.append(FRAME.findall(event))
    return samples


def print_classes(samples: list[list[str]]) -> None:
    by_class: dict[str, Counter] = defaultdict(Counter)
    for stack in samples:
        name, top = classify(stack)
        by_class[name][top] += 1
    total = len(samples) or 1
    for name, tops in sorted(by_class.items(), key=lambda kv: -sum(kv[1].values())):
        share = sum(tops.values()) / total
        hottest = ", ".join(f"{m} {n / total:.1%}" for m, n in tops.most_common(3))
        print(f"  {share:6.1%}  {name:<52} {hottest}")


def print_stages(stages: list[dict]) -> None:
    print(f"  {'stage':>5} {'tasks':>5} {'task s':>7} {'CPU s':>6} {'rows read':>11} {'shuffled in':>12} "
          f"{'shuffled out':>13}")
    for s in sorted(stages, key=lambda s: s["stageId"]):
        print(f"  {s['stageId']:>5} {s['numTasks']:>5} {s['executorRunTime'] / 1000:7.2f} "
              f"{s['executorCpuTime'] / 1e9:6.2f} {s['inputRecords']:>11,} {s['shuffleReadRecords']:>12,} "
              f"{s['shuffleWriteRecords']:>13,}")


def stage_ids(spark) -> set[int]:
    return {s["stageId"] for s in _rest(spark, "stages?details=false") or []}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--lakehouse", default="bench/.work/day-10000000-1000000keys/lakehouse",
                        help="a lakehouse python -m bench prepared (and ran day D in)")
    parser.add_argument("--runs", type=int, default=4, help="recorded runs of each job (default 4)")
    parser.add_argument("--keep", help="folder to keep the recordings in (default: a temporary one)")
    parser.add_argument("--spark-conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a Spark setting over panes' defaults, e.g. Spark's own for a setting panes changes")
    args = parser.parse_args(argv)
    if any("=" not in kv for kv in args.spark_conf):
        parser.error(f"--spark-conf takes KEY=VALUE, not {[kv for kv in args.spark_conf if '=' not in kv]}")
    overrides = dict(kv.split("=", 1) for kv in args.spark_conf)

    from bench.methods import panes_day
    from jobs import minute_partials, sliding_windows
    from jobs.runtime.spark_session import get_spark
    from windowing_core.config import PipelineConfig

    spark, config = get_spark({"spark.ui.enabled": "true", **overrides}), PipelineConfig()
    if not Path(args.lakehouse, "window_snapshot").exists():
        parser.error(f"{args.lakehouse} holds no lakehouse of python -m bench: run `python -m bench --events-per-day 1e7` first")
    folder = Path(args.keep or tempfile.mkdtemp(prefix="panes-profile-"))
    folder.mkdir(parents=True, exist_ok=True)
    jvm = spark.sparkContext._jvm
    for _ in range(2):  # the JIT warm, every plan compiled once
        panes_day(spark, args.lakehouse, DAY, config)

    jfr = shutil.which("jfr")
    for name, job in (("minute_partials", minute_partials.run), ("sliding_windows", sliding_windows.run)):
        recording = jvm.jdk.jfr.Recording(jvm.jdk.jfr.Configuration.getConfiguration("profile"))
        recording.start()
        for run in range(args.runs):
            before = stage_ids(spark)
            job(spark, args.lakehouse, DAY, DAY, config)
        recording.stop()
        path = folder / f"{name}.jfr"
        recording.dump(jvm.java.io.File(str(path)).toPath())
        recording.close()
        stages = [s for s in _rest(spark, "stages?details=false") or []
                  if s["stageId"] not in before and s["status"] == "COMPLETE"]
        print(f"\n{name}, day {DAY} of {args.lakehouse}: its last run's stages")
        print_stages(stages)
        if jfr is None:
            print(f"  (no `jfr` tool to read {path}: install a JDK, then `jfr print --events "
                  "jdk.ExecutionSample` it, or rerun this)")
            continue
        samples = task_samples(path, jfr)
        print(f"  {len(samples):,} samples of task threads over {args.runs} runs, by what they were doing:")
        print_classes(samples)
    if not args.keep and jfr is not None:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
