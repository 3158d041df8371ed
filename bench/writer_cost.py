"""What panes' delta-rs writer costs next to Spark's own Parquet writer, on a day-sized table.

    .venv/bin/python -m bench.writer_cost --rows 2e6            # ~5 min on the 2-core dev VM
    .venv/bin/python -m bench.writer_cost --rows 1e6 --reps 3

One Spark session from ``jobs.spark_session.get_spark()`` (panes' defaults). A DataFrame shaped
like window_changes (key ~1e6 distinct, window, window_start, window_end, event_count, count,
sum, date = ONE day, the partition column) is generated, cached and counted untimed. Then, one
untimed warm-up round and ``--reps`` timed rounds, the methods interleaved inside each round,
best wall time of each (and the CPU seconds of driver + JVM + Python workers of that run):

- delta-rs            ``delta_io.replace_partitions`` as the jobs call it (Python data source)
- parquet             ``df.write.partitionBy("date").parquet`` (Spark native, snappy)
- noop                ``df.write.format("noop")``: evaluating the cached frame, nothing written
- pyds transfer only  a Python data source whose writer only drains the Arrow batches: the cost
                      of shipping the rows to the Python workers, nothing written
- delta-rs no stats   the delta-rs path with ``_Stats`` reduced to the row count
- delta-rs batch 100k the product path with ``spark.sql.execution.arrow.maxRecordsPerBatch=100000``
                      (default 10000)

The variants are subclasses defined here (run as ``__main__``, so cloudpickle ships them by value
to the Python workers); ``jobs/`` is not modified. Then a driver-side profile: the same rows as
one Arrow table (``df.toArrow()``), fed in 10,000-row batches (as the workers get them) and in
100,000-row batches through ``_TaskFiles``' steps, each step timed with ``time.perf_counter``.

Scratch output goes to ``bench/.work/writer_cost/`` (ignored, deleted at the start of a run).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import time
import uuid
from collections import defaultdict

import pyarrow as pa
import pyarrow.parquet as pq

from bench.measure import cpu_seconds
from jobs import delta_io
from jobs.spark_session import get_spark

WORK = os.path.join(os.path.dirname(os.path.abspath(__file__)), ".work", "writer_cost")
DAY = "2025-01-08"
BATCH_CONF = "spark.sql.execution.arrow.maxRecordsPerBatch"


# -- variants of the Python data source (shipped by value to the workers) ------------------------

class _RowsOnlyStats(delta_io._Stats):
    """numRecords only: no null counts, no min/max."""

    def update(self, table) -> None:
        self.rows += table.num_rows

    def to_json(self) -> str:
        return json.dumps({"numRecords": self.rows})


class _NoStatsTaskFiles(delta_io._TaskFiles):
    def _new_file(self, key):
        file = super()._new_file(key)
        file.stats = _RowsOnlyStats(pa.schema([]))
        return file


class _VariantWriter(delta_io._TaskWriter):
    files_class = delta_io._TaskFiles

    def write(self, iterator):
        files = self.files_class(self.targets[0], self.schemas[0])
        try:
            for batch in iterator:
                files.append(batch)
            return delta_io._Written([{**a, "target": 0} for a in files.close()])
        except BaseException:
            files.discard()
            raise


class _NoStatsWriter(_VariantWriter):
    files_class = _NoStatsTaskFiles


class _DrainWriter(delta_io._TaskWriter):
    """Receives every Arrow batch and drops it: the transfer to the Python worker, nothing else."""

    def write(self, iterator):
        rows = 0
        for batch in iterator:
            rows += batch.num_rows
        return delta_io._Written([])

    def commit(self, messages) -> None:
        pass


def _source(name: str, writer_class):
    class Source(delta_io._PanesDeltaSource):
        @classmethod
        def name(cls) -> str:
            return name

        def writer(self, schema, overwrite):
            return writer_class(json.loads(self.options["spec"]), schema)

    Source.__name__ = Source.__qualname__ = f"Source_{name}"
    return Source


VARIANTS = {
    "bench_nostats": _NoStatsWriter,
    "bench_drain": _DrainWriter,
}


def write_variant(df, path: str, source: str) -> None:
    """delta_io._replace_with_delta_rs (one target) with another registered source name."""
    partition_by = ["date"]
    df = df.select(*[c for c in df.columns if c not in partition_by], *partition_by)
    target = {"name": None, "uri": delta_io._uri(path), "partition_by": partition_by,
              "filters": delta_io._conjunction([("date", "=", DAY)]), "write_id": uuid.uuid4().hex,
              "schema": df.schema.json()}
    df.write.format(source).mode("overwrite").option("spec", json.dumps({"route": None, "targets": [target]})).save()


# -- data ---------------------------------------------------------------------------------------

def build(spark, rows: int):
    from pyspark.sql import functions as F

    keys = 1_000_000
    df = (spark.range(rows)
          .select(
              F.format_string("k%06d", F.pmod(F.xxhash64("id", F.lit(1)), F.lit(keys))).alias("key"),
              F.lit("7d").alias("window"),
              (F.lit("2025-01-01 00:00:00").cast("timestamp")
               + F.make_dt_interval(F.lit(0), F.lit(0), F.pmod(F.col("id"), F.lit(1440)).cast("int"))
               ).alias("window_start"),
              F.col("id"))
          .select(
              "key", "window", "window_start",
              (F.col("window_start") + F.expr("INTERVAL 7 DAYS")).alias("window_end"),
              F.pmod(F.xxhash64("id", F.lit(2)), F.lit(50)).cast("long").alias("event_count"),
              F.pmod(F.xxhash64("id", F.lit(3)), F.lit(5000)).cast("long").alias("count"),
              F.pmod(F.xxhash64("id", F.lit(4)), F.lit(1_000_000)).cast("long").alias("sum"),
              F.lit(DAY).cast("date").alias("date")))
    df = df.cache()
    n = df.count()
    return df, n


# -- timing -------------------------------------------------------------------------------------

def _du(path: str) -> tuple[int, int]:
    size = files = 0
    for root, _, names in os.walk(path):
        for name in names:
            if name.endswith(".parquet"):
                size += os.path.getsize(os.path.join(root, name))
                files += 1
    return size, files


def _load() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def profile(df, rows: int) -> list[tuple]:
    """_TaskFiles' steps on the same rows in the driver, per batch size."""
    spec = {"uri": os.path.join(WORK, "profile"), "partition_by": ["date"], "filters": [],
            "write_id": "profile"}
    ordered = df.select(*[c for c in df.columns if c != "date"], "date")
    t0 = time.perf_counter()
    table = ordered.toArrow().combine_chunks()
    to_arrow = time.perf_counter() - t0
    out = [("toArrow (driver collect)", None, to_arrow)]
    for batch_rows in (10_000, 100_000):
        shutil.rmtree(spec["uri"], ignore_errors=True)
        files = delta_io._TaskFiles(spec, ordered.schema)
        t = defaultdict(float)
        for batch in table.to_batches(max_chunksize=batch_rows):
            s = time.perf_counter()
            whole = pa.Table.from_batches([batch])
            t["from_batches"] += time.perf_counter() - s
            s = time.perf_counter()
            parts = list(files._split(whole))
            t["_split"] += time.perf_counter() - s
            for key, part in parts:
                if key not in files.open:
                    files.open[key] = files._new_file(key)
                s = time.perf_counter()
                part = part.select(files.data_columns).cast(files.file_schema)
                t["select + cast"] += time.perf_counter() - s
                s = time.perf_counter()
                files.open[key].write(part)
                t["buffer"] += time.perf_counter() - s
            s = time.perf_counter()
            if sum(f.pending_rows for f in files.open.values()) >= delta_io._ROW_GROUP_ROWS:  # as append() does
                for f in files.open.values():
                    f.flush()
            t["flush (row groups, _Stats)"] += time.perf_counter() - s
        s = time.perf_counter()
        done = files.close()
        t["close (last row group, footer)"] += time.perf_counter() - s
        for k, v in t.items():
            out.append((k, batch_rows, v))
        out.append(("total", batch_rows, sum(t.values())))
        meta = pq.ParquetFile(os.path.join(spec["uri"], done[0]["path"])).metadata
        out.append((f"-> {meta.num_row_groups} row groups, {done[0]['size'] / 1e6:.1f} MB", batch_rows, None))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=float, default=2e6)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--no-profile", action="store_true")
    args = parser.parse_args()
    rows = int(args.rows)

    load_before = _load()
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    spark = get_spark()
    for name, writer in VARIANTS.items():
        spark.dataSource.register(_source(name, writer))
    t0 = time.perf_counter()
    df, n = build(spark, rows)
    print(f"generated and cached {n:,} rows in {df.rdd.getNumPartitions()} partitions "
          f"({time.perf_counter() - t0:.1f} s, untimed)", flush=True)

    paths = {m: os.path.join(WORK, m.replace(" ", "_")) for m in (
        "delta-rs", "parquet", "delta-rs no stats", "delta-rs batch 100k")}
    default_batch = spark.conf.get(BATCH_CONF)

    def batch100k():
        spark.conf.set(BATCH_CONF, "100000")
        try:
            delta_io.replace_partitions(df, paths["delta-rs batch 100k"], partition_by=["date"],
                                        partition_filters=[("date", "=", DAY)])
        finally:
            spark.conf.set(BATCH_CONF, default_batch)

    methods = {
        "delta-rs": lambda: delta_io.replace_partitions(
            df, paths["delta-rs"], partition_by=["date"], partition_filters=[("date", "=", DAY)]),
        "parquet": lambda: df.write.mode("overwrite").partitionBy("date").parquet(paths["parquet"]),
        "noop": lambda: df.write.format("noop").mode("overwrite").save(),
        "pyds transfer only": lambda: write_variant(df, os.path.join(WORK, "drain"), "bench_drain"),
        "delta-rs no stats": lambda: write_variant(df, paths["delta-rs no stats"], "bench_nostats"),
        "delta-rs batch 100k": batch100k,
    }
    best: dict[str, tuple[float, float]] = {}
    for rep in range(args.reps + 1):  # round 0 is the untimed warm-up
        for name, fn in methods.items():
            c, s = cpu_seconds(), time.perf_counter()
            fn()
            wall, cpu = time.perf_counter() - s, cpu_seconds() - c
            label = "warm-up" if rep == 0 else f"rep {rep}"
            print(f"  {label:8s} {name:22s} {wall:7.2f} s  cpu {cpu:6.2f} s", flush=True)
            if rep and (name not in best or wall < best[name][0]):
                best[name] = (wall, cpu)

    native = best["parquet"][0]
    load_after = _load()
    print(f"\nrows {n:,}, {df.rdd.getNumPartitions()} tasks, {BATCH_CONF} default {default_batch}")
    print(f"{'rows':>10} | {'method':22} | {'best s':>7} | {'cpu s':>6} | {'x parquet':>9} | output")
    for name, (wall, cpu) in best.items():
        size = ""
        if name in paths:
            b, f = _du(paths[name])
            size = f"{b / 1e6 / (args.reps + 1):.1f} MB/write" if name != "parquet" else f"{b / 1e6:.1f} MB, {f} files"
        print(f"{n:>10,} | {name:22} | {wall:7.2f} | {cpu:6.2f} | {wall / native:9.2f} | {size}")
    print(f"load before: {load_before}\nload after:  {load_after}", flush=True)

    if not args.no_profile:
        print("\ndriver-side profile of _TaskFiles on the same rows (one process, one file):")
        for step, batch_rows, seconds in profile(df, n):
            b = f"{batch_rows:>7,}" if batch_rows else "       "
            print(f"  batch {b}  {step:40s} {'' if seconds is None else f'{seconds:7.3f} s'}")
        print(f"load at end: {_load()}")
    df.unpersist()


if __name__ == "__main__":
    main()
