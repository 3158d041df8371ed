"""jobs.storage.delta_io against real Delta tables in tmp_path: what the log says without Spark, and reads."""

from __future__ import annotations

import shutil
from datetime import date
from decimal import Decimal

import pyarrow as pa
import pytest
from deltalake import DeltaTable
from pyspark.sql import functions as F

from jobs import errors
from jobs.errors import MissingTableError
from jobs.storage import commits, delta_io, delta_write
from jobs.storage.delta_io import read_table, table_exists, table_version
from tests.jobs.storage.delta_tables import D1, D2, D3, SCHEMA, contents, expected, frame, row, ts, write


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


def test_a_stamp_in_delta_sparks_user_metadata_is_read(tmp_path):
    """delta-spark's commits carry the stamp in their userMetadata, as JSON."""
    path = str(tmp_path / "t")
    from deltalake import CommitProperties, write_deltalake
    write_deltalake(path, pa.table({"n": [1]}), commit_properties=CommitProperties(
        custom_metadata={"userMetadata": '{"writeId": "w", "bucketSeconds": "60"}'}))
    write_deltalake(path, pa.table({"n": [2]}), mode="append", commit_properties=CommitProperties(
        custom_metadata={"userMetadata": "not json"}))
    assert commits.commit_stamp(path, "bucketSeconds") == "60"


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
