"""A vacuum deletes only what no table version within the retention needs, and says how much."""

import os
from datetime import date

import pytest

from assets.resources import LakehouseResource
from jobs import vacuum
from jobs.storage import delta_io, delta_write
from jobs.tables import MINUTE_PARTIALS, WINDOW_CHANGES
from orchestration.maintenance import build_vacuum

DAY = date(2025, 1, 28)


def rewritten_table(spark, lakehouse: str, times: int) -> str:
    """minute_partials' path, its day replaced ``times`` times, plus a file a killed run left."""
    path = MINUTE_PARTIALS.path(lakehouse)
    for n in range(times):
        df = spark.createDataFrame([("k", n, DAY)], "key string, n long, event_date date").coalesce(1)
        delta_write.replace_partitions(df, path, partition_by=["event_date"], partition_filters=[("event_date", "=", DAY)])
    with open(os.path.join(path, f"event_date={DAY}", "part-left-by-a-killed-run.parquet"), "wb") as f:
        f.write(b"PAR1")
    return path


def data_files(path: str) -> int:
    return sum(len([f for f in files if f.endswith(".parquet")]) for root, files in
               ((r, fs) for r, _, fs in os.walk(path) if "_delta_log" not in r))


def test_vacuum_keeps_what_the_retention_needs_and_deletes_the_rest(spark, tmp_path):
    lakehouse = str(tmp_path / "lake")
    path = rewritten_table(spark, lakehouse, 3)
    before = sorted(tuple(r) for r in delta_io.read_table(spark, path).collect())
    assert data_files(path) == 4

    # Within the default retention (7 days) every file stays: all are younger.
    assert vacuum.vacuum_lakehouse(lakehouse) == [vacuum.Vacuumed(MINUTE_PARTIALS.name, 0, 0)]
    with pytest.raises(ValueError, match="retention"):
        vacuum.vacuum_lakehouse(lakehouse, retain_hours=0)

    # 3 data files (2 replaced, 1 a killed run's) and the checksum sidecars (``.<file>.crc``) that
    # Hadoop's local file system writes beside every file Spark writes: the log names none of
    # them, the live file's included (without it a reader only skips a checksum).
    lines = []
    dry = vacuum.vacuum_lakehouse(lakehouse, retain_hours=0, allow_short_retention=True, dry_run=True, log=lines.append)
    assert [(v.files, v.bytes > 0) for v in dry] == [(3 + 3, True)] and data_files(path) == 4
    assert lines == [f"{MINUTE_PARTIALS.name}: 6 files, {dry[0].bytes / 2**20:,.1f} MiB to delete"]

    done = vacuum.vacuum_lakehouse(lakehouse, retain_hours=0, allow_short_retention=True)
    assert done == dry
    assert data_files(path) == 1
    assert sorted(tuple(r) for r in delta_io.read_table(spark, path).collect()) == before == [("k", 2, DAY)]


def test_the_command_line_exit_codes(spark, tmp_path, capsys):
    lakehouse = str(tmp_path / "lake")
    assert vacuum.main(["--lakehouse", lakehouse]) == 1
    assert "no Delta tables under" in capsys.readouterr().err
    rewritten_table(spark, lakehouse, 2)
    with pytest.raises(SystemExit) as exit_:
        vacuum.main(["--lakehouse", lakehouse, "--retain-hours", "1"])
    assert exit_.value.code == 2 and "minimum retention" in capsys.readouterr().err
    assert vacuum.main(["--lakehouse", lakehouse, "--retain-hours", "0", "--allow-short-retention"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("deleted 4 files, ")  # 2 data files, 2 sidecars


def test_the_dagster_job_reports_each_table(spark, tmp_path):
    """Every table of the root and of each group's folder (here: one group, ``views``)."""
    lakehouse = str(tmp_path / "lake")
    rewritten_table(spark, lakehouse, 2)
    rewritten_table(spark, os.path.join(lakehouse, "views"), 2)
    vacuum_lakehouse_job, _ = build_vacuum((None, "views"))
    other = os.path.join(lakehouse, "not-a-table")
    spark.createDataFrame([("k", DAY)], "key string, date date").write.parquet(other)
    others = data_files(other)
    result = vacuum_lakehouse_job.execute_in_process(
        resources={"lakehouse": LakehouseResource(landing_root=str(tmp_path), lakehouse_root=lakehouse)},
        run_config={"ops": {"vacuum_tables": {"config": {"retain_hours": 0, "allow_short_retention": True}}}})
    assert result.success
    [output] = [e for e in result.all_events if e.event_type_value == "STEP_OUTPUT"]
    metadata = output.event_specific_data.metadata
    assert metadata["files"].value == 8 and metadata["dry_run"].value is False  # 2 data files, 2 sidecars each
    assert f"| {MINUTE_PARTIALS.name} | 4 |" in metadata["tables"].value
    assert f"| views/{MINUTE_PARTIALS.name} | 4 |" in metadata["tables"].value
    assert WINDOW_CHANGES.name not in metadata["tables"].value  # not materialised: not vacuumed
    assert data_files(other) == others > 0  # a folder of the lakehouse that is no table is left alone

    refused = vacuum_lakehouse_job.execute_in_process(
        resources={"lakehouse": LakehouseResource(landing_root=str(tmp_path), lakehouse_root=lakehouse)},
        run_config={"ops": {"vacuum_tables": {"config": {"retain_hours": 0}}}}, raise_on_error=False)
    assert not refused.success
