"""jobs.delta_io against real Delta tables in tmp_path: delta-spark writes, delta-rs reads the log."""

from __future__ import annotations

import shutil
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable
from pyspark.sql import functions as F
from pyspark.sql import types as T

from jobs import delta_io, delta_write, errors
from jobs.errors import MissingTableError
from jobs.delta_io import read_table, table_exists, table_version
from jobs.delta_write import replace_partitions


SCHEMA = T.StructType([
    T.StructField("key", T.StringType()),
    T.StructField("n", T.LongType()),
    T.StructField("i", T.IntegerType()),
    T.StructField("x", T.DoubleType()),
    T.StructField("amount", T.DecimalType(12, 3)),
    T.StructField("flag", T.BooleanType()),
    T.StructField("event_time", T.TimestampType()),
    T.StructField("event_date", T.DateType()),
])
D1, D2, D3 = date(2025, 1, 30), date(2025, 1, 31), date(2025, 2, 1)
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def ts(day: date, hour: int, micros: int = 0) -> datetime:
    return datetime(day.year, day.month, day.day, hour, 0, 0, micros, tzinfo=timezone.utc)


def row(key: str, day: date, n: int = 1):
    return (key, n, n * 2, n / 4, Decimal(n) / 8, n % 2 == 0, ts(day, n % 24, 123456), day)


def frame(spark, rows):
    return spark.createDataFrame(rows, SCHEMA)


def contents(df) -> list[tuple]:
    """Rows as comparable tuples; timestamps as epoch microseconds, free of any local zone."""
    cols = [F.unix_micros(c).alias(c) if c == "event_time" else F.col(c) for c in df.columns]
    return sorted(tuple(r) for r in df.select(*cols).collect())


def expected(rows) -> list[tuple]:
    out = []
    for r in rows:
        out.append((*r[:6], (r[6] - EPOCH) // timedelta(microseconds=1), r[7]))
    return sorted(out)


def write(df, path, days):
    return replace_partitions(df, str(path), partition_by=["event_date"],
                              partition_filters=[("event_date", "in", list(days))])


def test_round_trip_keeps_types_and_values(spark, tmp_path):
    rows = [row("a", D1, 1), row("b", D1, 2), row("c", D2, 3), ("d", None, None, None, None, None, None, D2)]
    result = write(frame(spark, rows), tmp_path / "t", [D1, D2])

    assert (result["rows_written"], result["writer"], result["table_version"]) == (4, "delta-spark", 0)
    assert result["files_written"] >= 2  # at least one file per day
    back = read_table(spark, str(tmp_path / "t"))
    assert back.schema == SCHEMA  # date partition comes back as DateType, timestamps as TimestampType
    got = contents(back)
    assert got[:3] == expected(rows[:3])
    assert got[3] == ("d", None, None, None, None, None, None, D2)


def test_readable_by_deltalake_itself(spark, tmp_path):
    rows = [row("a", D1, 1), row("b", D2, 2)]
    write(frame(spark, rows), tmp_path / "t", [D1, D2])

    table = DeltaTable(str(tmp_path / "t"))
    arrow = table.to_pyarrow_table()
    assert table.metadata().partition_columns == ["event_date"]
    assert arrow.schema.field("event_time").type == pa.timestamp("us", tz="UTC")
    assert arrow.schema.field("amount").type == pa.decimal128(12, 3)
    assert sorted(arrow.to_pylist(), key=lambda r: r["key"]) == [
        {"key": "a", "n": 1, "i": 2, "x": 0.25, "amount": Decimal("0.125"), "flag": False,
         "event_time": ts(D1, 1, 123456), "event_date": D1},
        {"key": "b", "n": 2, "i": 4, "x": 0.5, "amount": Decimal("0.250"), "flag": True,
         "event_time": ts(D2, 2, 123456), "event_date": D2},
    ]
    # The log carries row counts and bounds a reader can skip files with.
    actions = pa.table(table.get_add_actions(flatten=True)).to_pylist()
    assert sorted(a["num_records"] for a in actions) == [1, 1]
    assert {a["min.n"] for a in actions} == {1, 2}


def test_replacing_one_partition_leaves_the_others_untouched(spark, tmp_path):
    path = str(tmp_path / "t")
    write(frame(spark, [row("a", D1), row("b", D2), row("c", D3)]), path, [D1, D2, D3])
    write(frame(spark, [row("z", D2, 9)]), path, [D2])

    assert contents(read_table(spark, path)) == expected([row("a", D1), row("z", D2, 9), row("c", D3)])


def test_replacing_twice_gives_the_same_contents(spark, tmp_path):
    path = str(tmp_path / "t")
    write(frame(spark, [row("a", D1), row("b", D3)]), path, [D1, D3])
    df = frame(spark, [row("x", D2, 1), row("y", D2, 2)])
    write(df, path, [D2])
    once = contents(read_table(spark, path))
    write(df, path, [D2])

    assert contents(read_table(spark, path)) == once
    assert len(DeltaTable(path).file_uris()) == len(set(DeltaTable(path).file_uris()))


def test_a_read_keeps_its_version_while_a_routed_write_replaces_the_table_it_reads(spark, tmp_path):
    """What the windows job does with the day before's snapshot: its persisted result reads a
    table, then one routed write replaces that table. The result written is the one computed
    from the version read, and a DataFrame read before the write still reads that version."""
    path = str(tmp_path / "t")
    write(frame(spark, [row("a", D1, 1)]), path, [D1])
    before = read_table(spark, path)
    derived = before.withColumns({"n": F.col("n") + 1, "event_date": F.lit(D2), "dest": F.lit("t")})
    target = {"t": delta_write.Target(path, SCHEMA.names, ["event_date"], [("event_date", "in", [D2])])}

    delta_write.replace_partitions_routed(derived, "dest", target)

    assert sorted((r.key, r.n, r.event_date) for r in read_table(spark, path).collect()) == [("a", 1, D1),
                                                                                             ("a", 2, D2)]
    assert [(r.key, r.n, r.event_date) for r in before.collect()] == [("a", 1, D1)]


def test_an_empty_replace_empties_the_partition(spark, tmp_path):
    path = str(tmp_path / "t")
    write(frame(spark, [row("a", D1), row("b", D2)]), path, [D1, D2])
    no_tasks = spark.createDataFrame(spark.sparkContext.emptyRDD(), SCHEMA)  # zero Spark partitions
    assert no_tasks.rdd.getNumPartitions() == 0

    result = write(no_tasks, path, [D1])

    assert (result["rows_written"], result["files_written"], result["table_version"]) == (0, 0, 1)
    assert contents(read_table(spark, path)) == expected([row("b", D2)])


def test_row_count_reads_the_log_of_the_matching_partitions_only(spark, tmp_path):
    path = str(tmp_path / "t")
    write(frame(spark, [row("a", D1), row("b", D1, 2), row("c", D2)]), path, [D1, D2])
    write(frame(spark, [row("d", D2, 3)]), path, [D2])  # replaced: the old file no longer counts
    write(frame(spark, []), path, [D3])

    assert delta_io.row_count(path) == 3
    assert delta_io.row_count(path, partition_filters=[("event_date", "=", D1)]) == 2
    assert delta_io.row_count(path, partition_filters=[("event_date", "in", [D2, D3])]) == 1
    assert delta_io.row_count(path, partition_filters=[("event_date", "=", D3)]) == 0
    with pytest.raises(ValueError, match="partition columns"):
        delta_io.row_count(path, partition_filters=[("key", "=", "a")])
    with pytest.raises(MissingTableError):
        delta_io.row_count(str(tmp_path / "missing"))


def test_rows_per_partition_come_from_the_log_where_it_counts_every_file(spark, tmp_path):
    path = str(tmp_path / "t")
    write(frame(spark, [row("a", D1), row("b", D1, 2), row("c", D2)]), path, [D1, D2])
    write(frame(spark, [row("d", D2, 3), row("e", D2)]), path, [D2])  # replaced: the old file no longer counts
    counted = {str(r[0]): r[1] for r in read_table(spark, path).groupBy("event_date").count().collect()}
    assert delta_io.partition_row_counts(path, "event_date") == counted == {str(D1): 2, str(D2): 2}
    assert delta_io.partition_row_counts(path, "event_date", partition_filters=[("event_date", "=", D2)]) == {
        str(D2): 2}

    saved = spark.conf.get("spark.databricks.delta.stats.collect", "true")
    spark.conf.set("spark.databricks.delta.stats.collect", "false")  # a writer that records no row counts
    try:
        write(frame(spark, [row("f", D3)]), path, [D3])
    finally:
        spark.conf.set("spark.databricks.delta.stats.collect", saved)
    assert delta_io.partition_row_counts(path, "event_date") is None  # the log cannot say: count with Spark
    assert delta_io.partition_row_counts(path, "event_date", partition_filters=[("event_date", "=", D1)]) == {
        str(D1): 2}


def test_file_ranges_come_from_the_log_of_the_matching_partitions(spark, tmp_path):
    path = str(tmp_path / "t")
    write(frame(spark, [row("a", D1, 3), row("b", D1, 5)]).coalesce(1), path, [D1])
    write(frame(spark, [row("c", D2, 7), ("d", None, 1, 0.0, None, None, None, D2)]).coalesce(1), path, [D2])
    write(frame(spark, []), path, [D3])

    assert delta_io.file_ranges(path, ["key", "n"], partition_filters=[("event_date", "=", D1)]) == [
        {"key": ("a", "b"), "n": (3, 5)}]
    assert delta_io.file_ranges(path, ["key"], partition_filters=[("event_date", "=", D2)]) == [
        {"key": ("c", "d")}]
    assert delta_io.file_ranges(path, ["n"], partition_filters=[("event_date", "=", D2)]) == [{"n": (7, 7)}]
    assert delta_io.file_ranges(path, ["x"], partition_filters=[("event_date", "=", D2)]) == [{"x": (0.0, 1.75)}]
    assert delta_io.file_ranges(path, ["missing"], partition_filters=[("event_date", "=", D1)]) == [None]
    assert delta_io.file_ranges(path, ["key"], partition_filters=[("event_date", "=", D3)]) == []
    assert len(delta_io.file_ranges(path, ["key"])) == 2


def test_awkward_partition_values_and_whole_table_replace_the_table_with_its_schema(spark, tmp_path):
    path = str(tmp_path / "t")
    write(frame(spark, [row("a", D1)]).where("false"), path, [D1])

    assert table_exists(path) and table_version(path) == 0
    empty = read_table(spark, path)
    assert empty.schema == SCHEMA and empty.isEmpty()


def test_a_multi_partition_replace_from_many_tasks_is_one_commit(spark, tmp_path):
    path = str(tmp_path / "t")
    write(frame(spark, [row("old", D1), row("old", D2), row("keep", D3)]), path, [D1, D2, D3])
    before = table_version(path)
    rows = [row(f"k{n}", D1 if n % 2 else D2, n) for n in range(40)]

    result = write(frame(spark, rows).repartition(4), path, [D1, D2])

    assert result["table_version"] == table_version(path) == before + 1
    assert result["rows_written"] == 40
    files = DeltaTable(path).file_uris(file_pruning_predicate=[("event_date", "in", [D1, D2])])
    assert result["files_written"] == len(files) > 2  # several tasks, both days, one commit
    assert contents(read_table(spark, path)) == expected(rows + [row("keep", D3)])


def test_reading_with_partition_filters(spark, tmp_path):
    path = str(tmp_path / "t")
    write(frame(spark, [row("a", D1), row("b", D2), row("c", D3)]), path, [D1, D2, D3])

    def keys(filters, **kwargs):
        return sorted(r[0] for r in read_table(spark, path, partition_filters=filters, **kwargs).collect())

    assert keys([("event_date", "in", ["2025-01-30", "2025-02-01"])]) == ["a", "c"]
    assert keys([("event_date", ">=", D2)]) == ["b", "c"]
    assert keys([("event_date", "=", D1)]) == ["a"]
    assert keys([[("event_date", "=", D1)], [("event_date", "=", D3)]]) == ["a", "c"]  # OR of ANDs
    assert keys([("event_date", "in", [date(2024, 1, 1)])]) == []
    assert read_table(spark, path, partition_filters=[("event_date", "=", D1)],
                      columns=["key", "event_date"]).columns == ["key", "event_date"]
    with pytest.raises(ValueError, match="partition columns only"):
        read_table(spark, path, partition_filters=[("key", "=", "a")])


def test_a_missing_table_raises_a_clear_error(spark, tmp_path):
    path = str(tmp_path / "minute_partials")
    with pytest.raises(MissingTableError, match=r"no Delta table at .*: materialise minute_partials first"):
        read_table(spark, path)
    with pytest.raises(MissingTableError):
        table_version(path)
    assert not table_exists(path)


def test_files_of_an_uncommitted_write_are_invisible(spark, tmp_path):
    path = tmp_path / "t"
    write(frame(spark, [row("a", D1)]), path, [D1])
    stray = pa.table({"key": ["ghost"], "n": pa.array([99], pa.int64())})
    pq.write_table(stray, path / "event_date=2025-01-30" / "part-00000-crashed-run.snappy.parquet")
    (path / "event_date=2025-01-31").mkdir()
    pq.write_table(stray, path / "event_date=2025-01-31" / "part-00000-crashed-run.snappy.parquet")

    assert contents(read_table(spark, str(path))) == expected([row("a", D1)])
    assert read_table(spark, str(path), partition_filters=[("event_date", "=", D2)]).isEmpty()


def test_rows_outside_the_filters_abort_the_write(spark, tmp_path):
    path = str(tmp_path / "t")
    write(frame(spark, [row("a", D1)]), path, [D1])

    with pytest.raises(ValueError, match=r"rows written to .* fall outside partition_filters"):
        write(frame(spark, [row("b", D1), row("c", D2)]), path, [D1])

    # Delta's own check, in the tasks: files a task wrote before it failed stay uncommitted,
    # invisible to every reader, until vacuum deletes them.
    assert table_version(path) == 0
    assert contents(read_table(spark, path)) == expected([row("a", D1)])


def test_every_commit_is_delta_sparks(spark, tmp_path):
    path = str(tmp_path / "t")
    write(frame(spark, [row("a", D1)]), path, [D1])
    write(frame(spark, [row("b", D2)]), path, [D2])

    engines = {c["engineInfo"] for c in DeltaTable(path).history()}
    assert len(engines) == 1 and engines.pop().startswith("Apache-Spark/4.2.0 Delta-Lake/4.4.0")


def test_a_different_schema_or_partitioning_is_refused(spark, tmp_path):
    path = str(tmp_path / "t")
    write(frame(spark, [row("a", D1)]), path, [D1])

    with pytest.raises(ValueError, match=r"differs from the table's in \['n'\]"):
        write(frame(spark, [row("a", D1)]).withColumn("n", F.col("n").cast("string")), path, [D1])
    with pytest.raises(ValueError, match="is partitioned by"):
        replace_partitions(frame(spark, [row("a", D1)]), path, partition_by=["key"], partition_filters=[])


def test_awkward_partition_values_and_whole_table_replace(spark, tmp_path):
    path = str(tmp_path / "t")
    rows = [(1, "a b:c/d", 7), (2, None, 7), (3, "é%41", 8)]  # escaped, null and non-ASCII folders
    df = spark.createDataFrame(rows, "n long, tag string, bucket int")

    replace_partitions(df, path, partition_by=["tag", "bucket"], partition_filters=[])

    back = read_table(spark, path)
    assert back.columns == ["n", "tag", "bucket"]
    assert sorted(tuple(r) for r in back.collect()) == rows
    assert sorted(DeltaTable(path).to_pyarrow_table().select(["n", "tag", "bucket"]).to_pylist(),
                  key=lambda r: r["n"]) == [dict(zip(["n", "tag", "bucket"], r)) for r in rows]
    one = read_table(spark, path, partition_filters=[("tag", "=", "a b:c/d"), ("bucket", "=", 7)])
    assert [r.n for r in one.collect()] == [1]
    assert delta_io.row_count(path, partition_filters=[("tag", "=", "a b:c/d"), ("bucket", "=", 7)]) == 1
    assert delta_io.row_count(path, partition_filters=[("tag", "=", "é%41")]) == 1


def routed_frame(spark, rows):
    """Rows of two tables in one frame: ``dest`` names the table, each has columns of its own."""
    return spark.createDataFrame(rows, "key string, n long, label string, event_date date, dest string")


def routed_targets(tmp_path, days):
    filters = [("event_date", "in", list(days))]
    return {
        "counts": delta_write.Target(str(tmp_path / "counts"), ["key", "n", "event_date"], ["event_date"], filters),
        "labels": delta_write.Target(str(tmp_path / "labels"), ["label", "key"], [], []),
    }


def test_a_routed_write_replaces_each_table_from_one_pass(spark, tmp_path):
    targets = routed_targets(tmp_path, [D1, D2])
    delta_write.replace_partitions_routed(routed_frame(spark, [("old", 9, None, D2, "counts")]), "dest", targets)
    rows = [("a", 1, None, D1, "counts"), ("b", 2, None, D1, "counts"), ("a", None, "x", None, "labels")]

    written = delta_write.replace_partitions_routed(routed_frame(spark, rows).repartition(3), "dest", targets)

    assert [(w["rows_written"], w["table_version"]) for w in written.values()] == [(2, 1), (1, 1)]
    counts = read_table(spark, str(tmp_path / "counts"))
    assert counts.columns == ["key", "n", "event_date"]
    assert sorted(tuple(r) for r in counts.collect()) == [("a", 1, D1), ("b", 2, D1)]  # D2's "old" replaced
    assert [tuple(r) for r in read_table(spark, str(tmp_path / "labels")).collect()] == [("x", "a")]


def test_partitions_that_hold_no_file_are_appended_to_and_the_others_replaced(spark, tmp_path):
    """A replace of partitions holding no file is an append (Delta rebuilds no state to find
    files to remove): the tables end as replaces leave them, and every commit carries its write."""
    paths = [str(tmp_path / "counts"), str(tmp_path / "labels")]
    delta_write.replace_partitions_routed(routed_frame(spark, [("a", 1, None, D1, "counts")]), "dest",
                                          routed_targets(tmp_path, [D1]))  # labels: made, empty
    delta_write.replace_partitions_routed(routed_frame(spark, [("b", 2, None, D2, "counts"), ("a", None, "x", None,
                                                                                          "labels")]),
                                          "dest", routed_targets(tmp_path, [D2]))
    delta_write.replace_partitions_routed(routed_frame(spark, [("c", 3, None, D1, "counts")]), "dest",
                                          routed_targets(tmp_path, [D1]))  # labels: replaced by nothing

    modes = [[c["operationParameters"]["mode"] for c in reversed(DeltaTable(p).history())] for p in paths]
    assert modes == [["Overwrite", "Append", "Overwrite"]] * 2
    assert sorted(tuple(r) for r in read_table(spark, paths[0]).collect()) == [("b", 2, D2), ("c", 3, D1)]
    assert read_table(spark, paths[1]).isEmpty()
    assert delta_io.unfinished_write(paths) is None


def test_a_routed_target_no_row_reaches_is_emptied(spark, tmp_path):
    targets = routed_targets(tmp_path, [D1])
    delta_write.replace_partitions_routed(routed_frame(spark, [("a", 1, None, D1, "counts")]), "dest", targets)

    written = delta_write.replace_partitions_routed(routed_frame(spark, [("a", None, "y", None, "labels")]),
                                                 "dest", targets)

    assert written["counts"]["rows_written"] == 0 and table_version(str(tmp_path / "counts")) == 1
    assert read_table(spark, str(tmp_path / "counts")).isEmpty()
    assert [r.label for r in read_table(spark, str(tmp_path / "labels")).collect()] == ["y"]


def test_a_row_routed_nowhere_aborts_every_table(spark, tmp_path):
    targets = routed_targets(tmp_path, [D1])
    delta_write.replace_partitions_routed(routed_frame(spark, [("a", 1, "x", D1, "counts")]), "dest", targets)
    parquet_before = sorted(p.name for p in tmp_path.rglob("*.parquet"))
    rows = [("b", 2, None, D1, "counts"), ("c", 3, None, D1, "elsewhere")]

    with pytest.raises(Exception, match=r"routed by 'dest' to \['elsewhere'\]"):
        delta_write.replace_partitions_routed(routed_frame(spark, rows).coalesce(1), "dest", targets)

    assert table_version(str(tmp_path / "counts")) == 0
    assert [r.key for r in read_table(spark, str(tmp_path / "counts")).collect()] == ["a"]
    assert sorted(p.name for p in tmp_path.rglob("*.parquet")) == parquet_before  # abort cleaned up


def test_a_stamped_write_refuses_a_table_stamped_otherwise_and_commits_nothing(spark, tmp_path):
    path = str(tmp_path / "counts")

    def write_with(stamp, rows):
        day = [("event_date", "=", rows[0][3])]
        target = delta_write.Target(path, ["key", "n", "event_date"], ["event_date"], day, stamp=stamp)
        return delta_write.replace_partitions_routed(routed_frame(spark, rows), "dest", {"counts": target})

    write_with({}, [("a", 1, None, D1, "counts")])
    assert delta_io.commit_stamp(path, "bucketSeconds") is None  # an unstamped table takes any stamp
    write_with({"bucketSeconds": 60}, [("a", 2, None, D1, "counts")])
    assert delta_io.commit_stamp(path, "bucketSeconds") == "60"
    version = table_version(path)

    with pytest.raises(errors.StampMismatchError, match="holds rows made with bucketSeconds 60, and this "
                                                          "job's is 300: a table holds rows of one bucketSeconds"):
        write_with({"bucketSeconds": 300}, [("a", 3, None, D2, "counts")])
    assert table_version(path) == version
    delta_io.vacuum(path, retain_hours=0, enforce_retention=False)  # commits of its own, unstamped
    write_with({"bucketSeconds": "60"}, [("a", 4, None, D2, "counts")])
    assert sorted(r.n for r in read_table(spark, path).collect()) == [2, 4]
    with pytest.raises(errors.StampMismatchError):
        delta_io.require_stamp(path, {"bucketSeconds": "1"})
    delta_io.require_stamp(path, {"bucketSeconds": "60", "other": "x"})  # a key the table lacks passes


def test_a_stamp_in_delta_sparks_user_metadata_is_read(tmp_path):
    """delta-spark's commits carry the stamp in their userMetadata, as JSON."""
    path = str(tmp_path / "t")
    from deltalake import CommitProperties, write_deltalake
    write_deltalake(path, pa.table({"n": [1]}), commit_properties=CommitProperties(
        custom_metadata={"userMetadata": '{"writeId": "w", "bucketSeconds": "60"}'}))
    write_deltalake(path, pa.table({"n": [2]}), mode="append", commit_properties=CommitProperties(
        custom_metadata={"userMetadata": "not json"}))
    assert delta_io.commit_stamp(path, "bucketSeconds") == "60"


def test_a_routed_target_must_name_columns_the_data_has(spark, tmp_path):
    targets = {"counts": delta_write.Target(str(tmp_path / "counts"), ["key", "missing"], [], [])}
    with pytest.raises(ValueError, match=r"columns \['missing'\] of .*counts are not columns"):
        delta_write.replace_partitions_routed(routed_frame(spark, []), "dest", targets)




@pytest.mark.parametrize("damage", ["deleted", "emptied"])
def test_a_log_that_lost_its_newest_entry_is_refused_not_read_at_an_older_version(spark, tmp_path, damage):
    path = tmp_path / "minute_partials"
    write(frame(spark, [row("a", D1)]), path, [D1])
    write(frame(spark, [row("b", D2)]), path, [D2])
    newest = path / "_delta_log" / f"{1:020d}.json"
    newest.unlink() if damage == "deleted" else newest.write_bytes(b"")

    message = "minute_partials: the Delta log's newest entry, version 1, is " + (
        "missing" if damage == "deleted" else "empty")
    for use in (lambda: table_exists(str(path)), lambda: read_table(spark, str(path)),
                lambda: write(frame(spark, [row("c", D3)]), path, [D3])):
        with pytest.raises(errors.DamagedTableError, match=message):
            use()


def test_data_files_without_a_log_are_refused_not_overwritten_by_a_new_table(spark, tmp_path):
    path = tmp_path / "minute_partials"
    write(frame(spark, [row("a", D1)]), path, [D1])
    shutil.rmtree(path / "_delta_log")

    with pytest.raises(errors.DamagedTableError, match=r"minute_partials holds event_date=2025-01-30 and more "
                                                          r"but no _delta_log"):
        write(frame(spark, [row("b", D2)]), path, [D2])
    assert not (path / "_delta_log").exists()
