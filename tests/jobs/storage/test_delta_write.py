"""jobs.storage.delta_write against real Delta tables in tmp_path: partition replaces, routed writes of
several tables, stamps, and what is refused before anything is committed."""

from __future__ import annotations

from datetime import timedelta

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable
from pyspark.sql import functions as F

from jobs import errors
from jobs.storage import commits, delta_io, delta_write
from jobs.storage.delta_io import read_table, table_exists, table_version
from jobs.storage.delta_write import replace_partitions
from jobs.storage.filters import interval
from tests.jobs.storage.delta_tables import D1, D2, D3, SCHEMA, contents, expected, frame, row, ts, write


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


def test_an_empty_replace_empties_the_partition(spark, tmp_path):
    path = str(tmp_path / "t")
    write(frame(spark, [row("a", D1), row("b", D2)]), path, [D1, D2])
    no_tasks = spark.createDataFrame(spark.sparkContext.emptyRDD(), SCHEMA)  # zero Spark partitions
    assert no_tasks.rdd.getNumPartitions() == 0

    result = write(no_tasks, path, [D1])

    assert (result["rows_written"], result["files_written"], result["table_version"]) == (0, 0, 1)
    assert contents(read_table(spark, path)) == expected([row("b", D2)])


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

    with pytest.raises(ValueError, match=r"rows written to .* fall outside the filters"):
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


@pytest.mark.parametrize("small_write_rows, files_per_day", [(delta_write.SMALL_WRITE_ROWS, 1), (0, 4)])
def test_a_small_routed_write_gathers_each_day_into_one_file(spark, tmp_path, monkeypatch, small_write_rows,
                                                            files_per_day):
    """Rows of two days spread over four tasks: a small write gathers each day's rows in one
    task (one file a day); above ``SMALL_WRITE_ROWS`` each task writes its own file of each day."""
    monkeypatch.setattr(delta_write, "SMALL_WRITE_ROWS", small_write_rows)
    rows = [(f"k{i}", i, None, day, "counts") for i in range(40) for day in (D1, D2)]
    targets = routed_targets(tmp_path, [D1, D2])

    delta_write.replace_partitions_routed(routed_frame(spark, rows).repartition(4, "key"), "dest", targets)

    files = DeltaTable(str(tmp_path / "counts")).file_uris()
    assert sorted(sum(f"event_date={day}" in f for f in files) for day in (D1, D2)) == [files_per_day] * 2
    assert sorted(tuple(r) for r in read_table(spark, str(tmp_path / "counts")).collect()) == sorted(
        (k, n, d) for k, n, _, d, _ in rows)


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
    assert commits.unfinished_write(paths) is None


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
    assert commits.commit_stamp(path, "bucketSeconds") is None  # an unstamped table takes any stamp
    write_with({"bucketSeconds": 60}, [("a", 2, None, D1, "counts")])
    assert commits.commit_stamp(path, "bucketSeconds") == "60"
    version = table_version(path)

    with pytest.raises(errors.StampMismatchError, match="holds rows made with bucketSeconds 60, and this "
                                                          "job's is 300: a table holds rows of one bucketSeconds"):
        write_with({"bucketSeconds": 300}, [("a", 3, None, D2, "counts")])
    assert table_version(path) == version
    delta_io.vacuum(path, retain_hours=0, enforce_retention=False)  # commits of its own, unstamped
    write_with({"bucketSeconds": "60"}, [("a", 4, None, D2, "counts")])
    assert sorted(r.n for r in read_table(spark, path).collect()) == [2, 4]
    with pytest.raises(errors.StampMismatchError):
        commits.require_stamp(path, {"bucketSeconds": "1"})
    commits.require_stamp(path, {"bucketSeconds": "60", "other": "x"})  # a key the table lacks passes


def test_a_routed_target_must_name_columns_the_data_has(spark, tmp_path):
    targets = {"counts": delta_write.Target(str(tmp_path / "counts"), ["key", "missing"], [], [])}
    with pytest.raises(ValueError, match=r"columns \['missing'\] of .*counts are not columns"):
        delta_write.replace_partitions_routed(routed_frame(spark, []), "dest", targets)


def hourly(spark, rows):
    """(key, n, event_time, event_date, dest) rows, partitioned by day, replaced an hour at a time."""
    return spark.createDataFrame(rows, "key string, n long, event_time timestamp, event_date date, dest string")


def hour_target(path, hour):
    start = ts(D1, hour)
    return delta_write.Target(path, ["key", "n", "event_time", "event_date"], ["event_date"],
                              [("event_date", "=", D1)], row_filters=interval("event_time", start,
                                                                                start + timedelta(hours=1)))


@pytest.mark.parametrize("hour", [0, 13, 23])
def test_an_hours_replace_leaves_the_other_hours_of_its_day_in_one_commit(spark, tmp_path, hour):
    """A sub-daily partition's run replaces its interval of the time column inside its day,
    atomically: the day's other hours (and other days) keep their rows, and a re-run of the
    hour gives the same table."""
    path = str(tmp_path / "hourly")
    day = [(f"k{h}", h, ts(D1, h), D1, "t") for h in range(24)]  # on each hour's first instant
    delta_write.replace_partitions(hourly(spark, [*day, ("next", 1, ts(D2, 0), D2, "t")]).drop("dest"), path,
                                   partition_by=["event_date"], partition_filters=[])
    version = table_version(path)
    new = [(f"new{i}", 100 + i, ts(D1, hour) + timedelta(hours=1, microseconds=-1 - i), D1, "t") for i in range(2)]

    for rerun in range(2):
        written = delta_write.replace_partitions_routed(hourly(spark, new), "dest", {"t": hour_target(path, hour)})
        assert written["t"]["table_version"] == version + 1 + rerun  # one commit a run

    rows = sorted((r.key, r.n) for r in read_table(spark, path).collect())
    kept = [(f"k{h}", h) for h in range(24) if h != hour]
    assert rows == sorted([*kept, ("next", 1), *((k, n) for k, n, *_ in new)])
    operations = [c["operation"] for c in DeltaTable(path).history(limit=2)]
    assert operations == ["WRITE", "WRITE"]


def test_an_hour_no_file_of_its_day_reaches_is_appended_and_a_rerun_replaced(spark, tmp_path):
    """A run below a day whose interval no file of its day reaches, by the log's statistics (the
    day's earlier hours lie before it), appends; a re-run of the hour, or an hour a file spans,
    replaces: the table ends as replaces leave it."""
    path = str(tmp_path / "hourly")
    delta_write.replace_partitions(hourly(spark, [(f"k{h}", h, ts(D1, h), D1, "t") for h in range(13)]).drop("dest"),
                                   path, partition_by=["event_date"], partition_filters=[])
    last_of_13 = ts(D1, 14) - timedelta(microseconds=1)
    for hour, rows in [(13, [("a", 1, ts(D1, 13), D1, "t")]), (13, [("b", 2, last_of_13, D1, "t")]),
                       (12, [("c", 3, ts(D1, 12, 30), D1, "t")])]:
        delta_write.replace_partitions_routed(hourly(spark, rows), "dest", {"t": hour_target(path, hour)})

    modes = [c["operationParameters"]["mode"] for c in reversed(DeltaTable(path).history())]
    assert modes == ["Overwrite", "Append", "Overwrite", "Overwrite"]
    assert sorted((r.key, r.n) for r in read_table(spark, path).collect()) == sorted(
        [(f"k{h}", h) for h in range(12)] + [("b", 2), ("c", 3)])


def test_a_row_outside_the_hour_aborts_the_write(spark, tmp_path):
    path = str(tmp_path / "hourly")
    delta_write.replace_partitions_routed(hourly(spark, [("a", 1, ts(D1, 13), D1, "t")]), "dest",
                                          {"t": hour_target(path, 13)})
    version = table_version(path)

    with pytest.raises(ValueError, match=r"1 rows for .*hourly fall outside the filters .*event_time"):
        delta_write.replace_partitions_routed(hourly(spark, [("b", 2, ts(D1, 13), D1, "t"),
                                                             ("c", 3, ts(D1, 14), D1, "t")]), "dest",
                                              {"t": hour_target(path, 13)})
    with pytest.raises(ValueError, match=r"rows written to .*hourly fall outside the filters"):
        delta_write.replace_partitions(hourly(spark, [("c", 3, ts(D1, 14), D1, "t")]).drop("dest"), path,
                                       partition_by=["event_date"], partition_filters=[("event_date", "=", D1)],
                                       row_filters=interval("event_time", ts(D1, 13), ts(D1, 14)))
    assert table_version(path) == version
    assert [r.key for r in read_table(spark, path).collect()] == ["a"]


@pytest.mark.parametrize("row_filters, message", [
    ([("event_date", "=", D1)], r"row filters on \['event_date'\] for .*: these are partition columns"),
    ([("missing", ">=", D1)], r"row filters on \['missing'\] for .*, which are not columns it writes"),
])
def test_row_filters_on_partition_or_unknown_columns_are_refused(spark, tmp_path, row_filters, message):
    target = delta_write.Target(str(tmp_path / "t"), ["key", "n", "event_time", "event_date"], ["event_date"],
                                [("event_date", "=", D1)], row_filters=row_filters)
    with pytest.raises(ValueError, match=message):
        delta_write.replace_partitions_routed(hourly(spark, []), "dest", {"t": target})
    assert not table_exists(str(tmp_path / "t"))


def test_an_interval_must_be_non_empty():
    with pytest.raises(ValueError, match="interval of event_time: .* is not before"):
        interval("event_time", ts(D1, 13), ts(D1, 13))
