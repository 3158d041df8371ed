"""Peers in the same run: DuckDB and Spark's own ``window()`` computing day D's change points of
the default window (7 days sliding every minute, count and sum) straight from the ``events``
table, each compared with panes' ``window_changes`` row for row (``python -m bench --stages
...,duckdb,spark_window``).

The formulation is panes' own method in one SQL statement, which is what an engineer who knows
DuckDB would write: each key's events deduplicated as the partials job does, grouped into minute
frames, and each frame turned into a delta where it enters a window end of day D and where it
leaves one, plus each key's baseline (its window just before D's first end) as one more delta;
a running sum per key then gives every end's value, and an end is a change point where the value
differs from the one before (``windowing_core.change_points``). It reads the events panes' frames
were made of: those of the days before D as the set-up's partials run saw them (arrived before
D, within the allowed lateness) and day D's (the bench's events never arrive before their time).
DuckDB is a bench-only dependency (the ``bench`` extra), never the product's.

Spark's formulation is the one its documentation gives for sliding windows: ``window(event_time,
"7 days", "1 minute")`` assigns each event to the 10,080 windows holding it, a ``groupBy`` counts
and sums each, and a window end is a change point where its value differs from the end a minute
before (an end no window row holds is empty). It reads the same events as DuckDB. Measured on
2026-11-28 (docs/performance.md), it did not finish at any size tried: at 1,000 events a day no
stage after the first started in 12 minutes, at 100 the driver's heap ran out. It stays as the
formulation a Spark user would try first, and what it costs.
"""

from __future__ import annotations

import shutil
from datetime import date, timedelta
from pathlib import Path

from windowing_core.reference import day_start
from windowing_core.window_spec import DAY_SECONDS

CHANGES_SQL = """
WITH read AS (
    SELECT key, value, event_id, epoch_us(event_time) AS us,
           CAST(floor(epoch_us(event_time) / 86400000000) AS BIGINT) AS event_day,
           arrival_date - DATE '1970-01-01' AS arrival_day, arrival_date, event_time
    FROM events
    WHERE arrival_date BETWEEN DATE '{first_arrival}' AND DATE '{last_arrival}'
), offered AS (   -- the arrivals each event day's partials run read
    SELECT * FROM read
    WHERE event_day BETWEEN {first_day} AND {day}
      AND arrival_day BETWEEN event_day AND event_day + {lateness}
      AND (event_day = {day} OR arrival_day < {day})
), unique_events AS (   -- an event_id counts once per event day: the earliest arrival wins
    SELECT key, us, value FROM offered
    QUALIFY row_number() OVER (PARTITION BY event_day, event_id
                               ORDER BY arrival_date, key, event_time, value NULLS FIRST) = 1
), frames AS (
    SELECT key, us // 60000000 * 60 AS f, count(value) AS n, coalesce(sum(value), 0)::HUGEINT AS s
    FROM unique_events GROUP BY ALL
), deltas AS (
    SELECT key, f + 60 AS t, n, s FROM frames                     -- a frame enters
    WHERE f + 60 >= {start} AND f + 60 < {stop}
    UNION ALL
    SELECT key, f + 60 + {length} AS t, -n, -s FROM frames        -- and leaves
    WHERE f + 60 + {length} >= {start} AND f + 60 + {length} < {stop}
    UNION ALL
    SELECT key, {start} - 60 AS t, n, s FROM frames               -- the baseline: the window before D
    WHERE f + 60 <= {start} - 60 AND f + 60 + {length} > {start} - 60
), per_end AS (
    SELECT key, t, sum(n) AS n, sum(s) AS s FROM deltas GROUP BY ALL
), running AS (
    SELECT key, t, sum(n) OVER w AS n, sum(s) OVER w AS s
    FROM per_end WINDOW w AS (PARTITION BY key ORDER BY t ROWS UNBOUNDED PRECEDING)
), valued AS (
    SELECT key, t, n, s, lag(n, 1, 0) OVER w AS n_before, lag(s, 1, 0) OVER w AS s_before
    FROM running WINDOW w AS (PARTITION BY key ORDER BY t)
)
SELECT key, t AS window_end, n AS count, s AS sum FROM valued
WHERE t >= {start} AND (n <> n_before OR s <> s_before)
"""


class DuckDBChanges:
    """Day D's change points of the default window by DuckDB, written as Parquet as panes writes
    its tables; ``compare`` holds them to panes' ``window_changes`` of D."""

    def __init__(self, lakehouse: str, day: date, config, scratch: Path) -> None:
        try:
            import duckdb
        except ImportError as missing:
            raise SystemExit("the duckdb stage needs the bench extra: pip install -e '.[bench]'") from missing
        self._check(config)
        spec = config.windows[0]
        self.duckdb, self.lakehouse, self.day, self.spec = duckdb, lakehouse, day, spec
        self.out = scratch / "duckdb_changes.parquet"
        first = day - timedelta(days=spec.length // DAY_SECONDS + 1)  # the frames of D's first window
        self.sql = CHANGES_SQL.format(
            first_arrival=first.isoformat(), last_arrival=(day + timedelta(days=config.allowed_lateness_days)).isoformat(),
            first_day=day_start(first) // DAY_SECONDS, day=day_start(day) // DAY_SECONDS,
            lateness=config.allowed_lateness_days,
            start=day_start(day), stop=day_start(day) + DAY_SECONDS, length=spec.length)

    @staticmethod
    def _check(config) -> None:
        spec = config.windows[0] if len(config.windows) == 1 else None
        kinds = sorted(a.kind for a in config.aggregations)
        if spec is None or (spec.length, spec.every) != (7 * DAY_SECONDS, 60) or kinds != ["count", "sum"] \
                or config.late_policy != "include" or config.bucket != 60:
            raise SystemExit("the peers compute the default configuration only: one 7-day window "
                             "sliding every minute, count and sum, late events included")

    def _connect(self):
        from deltalake import DeltaTable

        from jobs.tables import EVENTS

        con = self.duckdb.connect()
        con.register("events", DeltaTable(EVENTS.path(self.lakehouse)).to_pyarrow_dataset())
        return con

    def __call__(self) -> None:
        """The timed work: the query, and its rows written (``compare`` counts them, untimed)."""
        self.out.parent.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(self.out, ignore_errors=True)
        con = self._connect()
        try:
            con.execute(f"COPY ({self.sql}) TO '{self.out}' (FORMAT parquet)")
        finally:
            con.close()

    def compare(self) -> dict:
        """Rows of one side the other lacks (by key, window end, count and sum): both 0, or the
        bench is void."""
        from deltalake import DeltaTable

        from jobs.tables import WINDOW_CHANGES

        panes = DeltaTable(WINDOW_CHANGES.path(self.lakehouse)).to_pyarrow_dataset()
        con = self._connect()
        try:
            con.register("panes_changes", panes)
            con.execute(f"""CREATE TEMP TABLE p AS
                SELECT key, CAST(epoch(window_end) AS BIGINT) AS window_end, count, CAST(sum AS HUGEINT) AS sum
                FROM panes_changes WHERE date = DATE '{self.day}' AND "window" = '{self.spec.name}'""")
            con.execute(f"CREATE TEMP TABLE d AS SELECT * FROM '{self.out}'")
            only_panes = con.execute("SELECT count(*) FROM (SELECT * FROM p EXCEPT ALL SELECT * FROM d)").fetchone()[0]
            only_duckdb = con.execute("SELECT count(*) FROM (SELECT * FROM d EXCEPT ALL SELECT * FROM p)").fetchone()[0]
            rows = con.execute("SELECT count(*) FROM p").fetchone()[0]
        finally:
            con.close()
        return {"rows": rows, "only_in_panes": only_panes, "only_in_duckdb": only_duckdb}


SPARK_WINDOW_MAX_EVENTS = 2_000
"""Above this many events a day (each of the 8 days a window of D reads) window() would make more
than 1.6 x 10^8 rows; it did not finish at 1,000 or 100 on this machine."""


class SparkWindowChanges:
    """Day D's change points of the default window by Spark's ``window()``, written as Parquet;
    ``compare`` holds them to panes' ``window_changes`` of D."""

    def __init__(self, spark, lakehouse: str, day: date, config, scratch: Path, events_per_day: int) -> None:
        if events_per_day > SPARK_WINDOW_MAX_EVENTS:
            raise SystemExit(f"the spark_window stage makes events x 10,080 rows: at most "
                             f"{SPARK_WINDOW_MAX_EVENTS:,} events a day, got {events_per_day:,}")
        DuckDBChanges._check(config)  # the same configuration as DuckDB's
        self.spark, self.lakehouse, self.day, self.spec = spark, lakehouse, day, config.windows[0]
        self.lateness = config.allowed_lateness_days
        self.out = scratch / "spark_window_changes.parquet"

    def _changes(self):
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        from jobs.storage import delta_io
        from jobs.tables import EVENTS

        start, stop = day_start(self.day), day_start(self.day) + DAY_SECONDS
        first = self.day - timedelta(days=self.spec.length // DAY_SECONDS + 1)
        events = delta_io.read_table(self.spark, EVENTS.path(self.lakehouse), partition_filters=[
            ("arrival_date", ">=", first.isoformat()),
            ("arrival_date", "<=", (self.day + timedelta(days=self.lateness)).isoformat())])
        event_day, arrival_day = F.to_date("event_time"), F.col("arrival_date")
        offered = events.where((event_day >= F.lit(first)) & (event_day <= F.lit(self.day))
                               & (arrival_day >= event_day) & (arrival_day <= F.date_add(event_day, self.lateness))
                               & ((event_day == F.lit(self.day)) | (arrival_day < F.lit(self.day))))
        earliest = Window.partitionBy(event_day, "event_id").orderBy("arrival_date", "key", "event_time", "value")
        unique = offered.withColumn("n", F.row_number().over(earliest)).where("n = 1")
        reach = F.timestamp_seconds(F.lit(start - 60 - self.spec.length))
        inside = (F.col("event_time") >= reach) & (F.col("event_time") < F.timestamp_seconds(F.lit(stop)))
        windows = (unique.where(inside)
                   .groupBy("key", F.window("event_time", "7 days", "1 minute"))
                   .agg(F.count("value").alias("count"), F.coalesce(F.sum("value"), F.lit(0)).alias("sum"))
                   .select("key", F.unix_seconds("window.end").alias("t"), "count", "sum")
                   .where((F.col("t") >= start - 60) & (F.col("t") < stop)))
        before = windows.select("key", (F.col("t") + 60).alias("t"), F.col("count").alias("count_before"),
                                F.col("sum").alias("sum_before"))
        both = windows.join(before, ["key", "t"], "full").where((F.col("t") >= start) & (F.col("t") < stop))
        n, s = F.coalesce("count", F.lit(0)), F.coalesce("sum", F.lit(0))
        return both.where((n != F.coalesce("count_before", F.lit(0))) | (s != F.coalesce("sum_before", F.lit(0)))) \
            .select("key", F.col("t").alias("window_end"), n.alias("count"), s.cast("decimal(38,0)").alias("sum"))

    def __call__(self) -> None:
        """The timed work: the change points computed and written (``compare`` reads them, untimed)."""
        self._changes().write.mode("overwrite").parquet(str(self.out))

    def compare(self) -> dict:
        from pyspark.sql import functions as F

        from jobs.storage import delta_io
        from jobs.tables import WINDOW_CHANGES

        panes = (delta_io.read_table(self.spark, WINDOW_CHANGES.path(self.lakehouse),
                                     partition_filters=[("date", "=", self.day.isoformat())])
                 .where(F.col("window") == self.spec.name)
                 .select("key", F.unix_seconds("window_end").alias("window_end"), "count",
                         F.col("sum").cast("decimal(38,0)").alias("sum")))
        peer = self.spark.read.parquet(str(self.out))
        return {"rows": panes.count(), "only_in_panes": panes.exceptAll(peer).count(),
                "only_in_spark_window": peer.exceptAll(panes).count()}
