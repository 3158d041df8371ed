"""Timing, memory and plan inspection for the benchmark: no panes logic here.

- ``measure`` times a callable best-of-N on the warm session, optionally under a time limit
  (the callable runs in its own thread and Spark job group; past the limit the group is
  cancelled and the measurement says it did not finish).
- ``settle`` collects the garbage of the JVM and of this Python before every timed repetition,
  so no method pays for the heap an earlier one left behind (Spark's ``window()`` leaves
  gigabytes).
- ``steal_fraction`` reads how much of the cores the virtual machine's host took meanwhile.
- ``MemorySampler`` samples the resident memory of the driver (this Python process and its
  JVM) and, separately, of the Python workers the JVM starts, every 100 ms, from ``/proc``.
- ``plan_summary`` counts what matters in a DataFrame's physical plan: file scans per table,
  cached-relation reads, shuffles, sorts, ``Expand`` and Python UDF nodes.
- ``sql_profile`` reads Spark's own metrics (the UI's REST API) for the SQL executions of a
  measurement: how long each took and how many rows each file scan read.
"""

from __future__ import annotations

import gc
import json
import os
import re
import threading
import time
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, NamedTuple

from pyspark import InheritableThread
from pyspark.sql import DataFrame, SparkSession

# -- memory -----------------------------------------------------------------------------------------

_PAGE = os.sysconf("SC_PAGE_SIZE")


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, IndexError, ValueError):
        return 0


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        tree.setdefault(ppid, []).append(int(entry))
    return tree


def _comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def driver_processes() -> tuple[list[int], list[int]]:
    """(driver pids: this Python and its JVM, worker pids: every process below the JVM)."""
    tree = _children()
    me = os.getpid()
    jvms = [p for p in tree.get(me, []) if _comm(p) == "java"]
    workers, stack = [], list(jvms)
    while stack:
        for child in tree.get(stack.pop(), []):
            workers.append(child)
            stack.append(child)
    return [me, *jvms], workers


_TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds() -> float:
    """CPU time of this process and everything below it (the JVM, its Python workers), with
    the reaped children's time each parent counts. Less sensitive than wall time to other
    processes competing for the cores, which is why measurements report it beside the seconds."""
    tree = _children()
    total, stack = 0, [os.getpid()]
    while stack:
        pid = stack.pop()
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
        except (OSError, ValueError, IndexError):
            pass
        stack.extend(tree.get(pid, []))
    return total / _TICK


def cpu_ticks() -> tuple[int, int]:
    """(ticks the host stole from this virtual machine, all ticks), summed over the cores."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    return (fields[7] if len(fields) > 7 else 0), sum(fields[:8])


def steal_fraction(before: tuple[int, int], after: tuple[int, int]) -> float:
    """The share of all CPU time between two ``cpu_ticks`` readings that the host stole: time
    this machine's cores were meant to run and did not. Seconds measured while it is high are
    slow for reasons outside the benchmark; the ratios, measured side by side, less so."""
    total = after[1] - before[1]
    return (after[0] - before[0]) / total if total > 0 else 0.0


def settle(spark: SparkSession) -> None:
    """Full garbage collection in the JVM and in Python, untimed, before a measured run."""
    gc.collect()
    spark.sparkContext._jvm.java.lang.System.gc()


class Timing(NamedTuple):
    seconds: float
    cpu_seconds: float  # of the driver, its JVM and the Python workers


def best_interleaved(spark: SparkSession, runs: dict[Any, Callable[[], Any]], reps: int,
                     report: Callable[[int, Any, float, Any], None] | None = None) -> dict[Any, Timing]:
    """Each callable's best run of ``reps`` rounds, after one untimed warm-up round (every plan
    once, the JVM warm). Within a round the callables take turns, so a host that slows down or
    speeds up over the run weighs on all of them alike; each run starts after ``settle``.
    ``report(round, key, seconds, result)`` sees every run, round 0 the warm-up.
    """
    best: dict[Any, Timing] = {}
    for round_ in range(reps + 1):
        for key, fn in runs.items():
            settle(spark)
            cpu, started = cpu_seconds(), time.perf_counter()
            result = fn()
            seconds, cpu = time.perf_counter() - started, cpu_seconds() - cpu
            if report is not None:
                report(round_, key, seconds, result)
            if round_ and (key not in best or seconds < best[key].seconds):
                best[key] = Timing(seconds, cpu)
    return best


def print_run(round_: int, key: Any, seconds: float, result: Any = None) -> None:
    """A ``report`` for ``best_interleaved``: one line per run, as it ends."""
    print(f"  round {round_}{' (warm-up)' if not round_ else ''}: {key} {seconds:.2f} s", flush=True)


class MemorySampler:
    """Peak resident memory while the ``with`` block runs (sampled; short spikes can be missed)."""

    def __init__(self, interval: float = 0.1):
        self.interval = interval
        self.driver_peak = 0
        self.workers_peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._tick = 0

    def _sample(self, workers_refresh: bool) -> None:
        if workers_refresh or not hasattr(self, "_pids"):
            self._pids = driver_processes()
        drivers, workers = self._pids
        self.driver_peak = max(self.driver_peak, sum(_rss(p) for p in drivers))
        self.workers_peak = max(self.workers_peak, sum(_rss(p) for p in workers))

    def _run(self) -> None:
        while not self._stop.is_set():
            self._tick += 1
            self._sample(workers_refresh=self._tick % 5 == 1)  # workers come and go; /proc walks cost
            self._stop.wait(self.interval)

    def __enter__(self) -> MemorySampler:
        self._sample(True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._sample(True)


# -- timing -----------------------------------------------------------------------------------------


@dataclass
class Measurement:
    seconds: float | None  # best of the finished repetitions; None if it never finished
    runs: list[float] = field(default_factory=list)
    status: str = "ok"  # ok | timeout | error | skipped
    note: str = ""
    driver_peak_mb: float = 0.0
    workers_peak_mb: float = 0.0
    parts: dict[str, float] = field(default_factory=dict)  # split of the best run, where reported
    cpu_seconds: float | None = None  # CPU time of the best run (driver, JVM and Python workers)
    result: Any = None


def measure(spark: SparkSession, fn: Callable[[], Any], *, reps: int = 2, timeout: float | None = None,
            group: str = "bench", more_if_under: float | None = None) -> Measurement:
    """Best of ``reps`` runs of ``fn``. With ``timeout`` each run may be cancelled.

    ``fn`` may return a dict with a ``parts`` entry (name -> seconds) to report a split.
    ``more_if_under``: only repeat when the first run took less than this many seconds.
    """
    m = Measurement(seconds=None)
    best = None
    with MemorySampler() as memory:
        for i in range(reps):
            if i and more_if_under is not None and m.runs and m.runs[0] >= more_if_under:
                break
            settle(spark)
            cpu_before = cpu_seconds()
            status, seconds, result = _run_once(spark, fn, timeout, f"{group}-{i}")
            cpu = cpu_seconds() - cpu_before
            if status != "ok":
                m.status, m.note = status, result if isinstance(result, str) else ""
                if status == "timeout":
                    m.note = f"did not finish in {timeout:.0f} s"
                break
            m.runs.append(seconds)
            if best is None or seconds < best:
                best, m.result, m.cpu_seconds = seconds, result, cpu
                m.parts = dict(result.get("parts", {})) if isinstance(result, dict) else {}
    m.seconds = best
    if best is not None and m.status != "ok":  # a later repetition failed: keep the finished one
        m.note = f"{m.status} on a repeat: {m.note}"
        m.status = "ok"
    m.driver_peak_mb = memory.driver_peak / 2**20
    m.workers_peak_mb = memory.workers_peak / 2**20
    return m


def _run_once(spark: SparkSession, fn: Callable[[], Any], timeout: float | None, group: str):
    sc = spark.sparkContext
    if timeout is None:
        sc.setJobGroup(group, group, interruptOnCancel=True)
        try:
            start = time.perf_counter()
            result = fn()
            return "ok", time.perf_counter() - start, result
        finally:
            sc.setLocalProperty("spark.jobGroup.id", None)
            sc.setLocalProperty("spark.job.description", None)

    box: dict[str, Any] = {}

    def target() -> None:
        sc.setJobGroup(group, group, interruptOnCancel=True)
        start = time.perf_counter()
        try:
            box["result"] = fn()
            box["seconds"] = time.perf_counter() - start
        except BaseException as err:  # cancelled jobs raise here
            box["error"] = err

    thread = InheritableThread(target=target, daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        # The query may still be planning (no job to cancel yet): keep cancelling until it stops.
        deadline = time.monotonic() + 300
        while thread.is_alive() and time.monotonic() < deadline:
            sc.cancelJobGroup(group)
            thread.join(2)
        return "timeout", None, None
    if "error" in box:
        return "error", None, f"{type(box['error']).__name__}: {str(box['error']).splitlines()[0][:200]}"
    return "ok", box["seconds"], box.get("result")


class Stopwatch:
    """Named splits inside one measured run: ``with watch("partials"): ...``."""

    def __init__(self) -> None:
        self.parts: dict[str, float] = {}

    def __call__(self, name: str):
        watch = self

        class _Split:
            def __enter__(self):
                self.start = time.perf_counter()

            def __exit__(self, *exc):
                watch.parts[name] = watch.parts.get(name, 0.0) + time.perf_counter() - self.start

        return _Split()


# -- plans ------------------------------------------------------------------------------------------


def explain_string(df: DataFrame, mode: str = "formatted") -> str:
    jvm = df.sparkSession._jvm
    return jvm.PythonSQLUtils.explainString(df._jdf.queryExecution(), mode)


_NODE = re.compile(r"^\((\d+)\) (.+?)\s*(?:\[codegen id : \d+\])?\s*$")


def plan_summary(df: DataFrame, tables: list[str]) -> dict:
    """Counts of the plan's nodes that matter for cost, from the formatted physical plan.

    File scans are attributed to ``tables`` by their location; a cached relation's scan is
    counted once (it runs once), its reads as ``cached reads``.
    """
    text = explain_string(df)
    nodes: list[tuple[str, str]] = []
    current = None
    details: dict[str, list[str]] = {}
    for line in text.splitlines():
        match = _NODE.match(line)
        if match:
            current = match.group(1)
            nodes.append((current, match.group(2)))
            details[current] = []
        elif current is not None:
            details[current].append(line)
    kinds = Counter(name.split(" ")[0] if not name.startswith("Scan ") else "Scan" for _, name in nodes)
    scans: Counter = Counter()
    for node_id, name in nodes:
        if name.startswith("Scan "):
            location = next((d for d in details[node_id] if d.startswith("Location")), "")
            table = next((t for t in tables if re.search(rf"/{t}(/|\]|,|$)", location)), "other")
            scans[table] += 1
    return {
        "scans": dict(scans),
        "cached_reads": kinds.get("InMemoryTableScan", 0),
        "exchanges": kinds.get("Exchange", 0),
        "sorts": kinds.get("Sort", 0),
        "windows": kinds.get("Window", 0),
        "expands": kinds.get("Expand", 0),
        "generates": kinds.get("Generate", 0),
        "python_udfs": sum(v for k, v in kinds.items() if "Python" in k or "ArrowEval" in k),
        "text": text,
    }


# -- Spark's own metrics ---------------------------------------------------------------------------


def _rest(spark: SparkSession, path: str) -> Any:
    base = spark.sparkContext.uiWebUrl
    if not base:
        return None
    app = spark.sparkContext.applicationId
    try:
        with urllib.request.urlopen(f"{base}/api/v1/applications/{app}/{path}", timeout=10) as r:
            return json.loads(r.read())
    except OSError:
        return None


def last_sql_id(spark: SparkSession) -> int:
    executions = _rest(spark, "sql?details=false&length=100000") or []
    return max((e["id"] for e in executions), default=-1)


def sql_profile(spark: SparkSession, after_id: int) -> list[dict]:
    """Each SQL execution since ``after_id``: seconds, and rows read by each file scan."""
    executions = _rest(spark, f"sql?details=true&planDescription=false&offset={after_id + 1}&length=1000") or []
    profile = []
    for e in executions:
        if e["id"] <= after_id:
            continue
        scans = []
        for node in e.get("nodes", []):
            if node["nodeName"].startswith("Scan"):
                rows = next((m["value"] for m in node.get("metrics", []) if m["name"] == "number of output rows"), "?")
                files = next((m["value"] for m in node.get("metrics", []) if m["name"] == "number of files read"), "?")
                scans.append(f"{node['nodeName']} rows={rows} files={files}")
        exchanges = sum(1 for n in e.get("nodes", []) if n["nodeName"].startswith("Exchange"))
        profile.append({"id": e["id"], "seconds": e["duration"] / 1000, "description": e.get("description", "")[:80],
                        "scans": scans, "exchanges": exchanges})
    return profile
