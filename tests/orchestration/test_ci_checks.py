"""The CI command: its exit code follows the ERROR checks, and its table shows every check."""

from datetime import date
from types import SimpleNamespace

import dagster as dg
import pytest
from pyspark.sql import functions as F

from orchestration import ci_checks

DAY = date(2025, 1, 28)


def evaluation(asset, check, day, passed, severity="ERROR"):
    return SimpleNamespace(asset_key=dg.AssetKey(asset), check_name=check, partition=day and day.isoformat(),
                           passed=passed, severity=dg.AssetCheckSeverity(severity), description=None,
                           metadata={})


def test_exit_code_follows_error_checks_only():
    expected = [("events", "input_records_reconcile", "ERROR"),
                ("quarantine", "quarantine_share_below_limit", "WARN")]
    warn_failed = [evaluation("events", "input_records_reconcile", DAY, True),
                   evaluation("quarantine", "quarantine_share_below_limit", DAY, False, "WARN")]
    assert ci_checks.exit_code(ci_checks.rows_of(warn_failed, expected, [DAY]), run_succeeded=True) == 0
    error_failed = [evaluation("events", "input_records_reconcile", DAY, False)]
    assert ci_checks.exit_code(ci_checks.rows_of(error_failed, expected, [DAY]), run_succeeded=False) == 1
    never_ran = ci_checks.rows_of([], expected, [DAY])  # blocked upstream: not a pass
    assert ci_checks.exit_code(never_ran, run_succeeded=True) == 1
    assert ci_checks.exit_code(ci_checks.rows_of(warn_failed, expected, [DAY]), run_succeeded=False) == 1


def test_an_unpartitioned_check_stands_for_every_day():
    rows = ci_checks.rows_of([evaluation("window_changes", "output_watermark_within_bound", None, True)],
                             [("window_changes", "output_watermark_within_bound", "ERROR")],
                             [DAY, DAY.replace(day=29)])
    assert [r.passed for r in rows] == [True, True]


@pytest.mark.parametrize("argv", [["--from", "2025-01-29", "--to", "2025-01-28"],
                                  ["--from", "yesterday", "--to", "2025-01-28"],
                                  ["--from", "2024-12-31", "--to", "2025-01-28"],  # before the first partition
                                  ["--from", "2025-01-28", "--to", "2025-01-28", "--events-per-day", "0"]])
def test_bad_arguments_exit_with_2(argv):
    with pytest.raises(SystemExit) as exit_info:
        ci_checks.main(argv)
    assert exit_info.value.code == 2


def test_the_ci_command_passes_on_demo_data_and_prints_every_check(spark, tmp_path, capsys):
    code = ci_checks.main(["--from", DAY.isoformat(), "--to", DAY.isoformat(), "--events-per-day", "500",
                           "--keys", "30", "--workdir", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "all ERROR checks passed" in out
    for name in ("input_records_reconcile", "partials_count_accepted_events", "changes_conserve_frames",
                 "snapshot_matches_last_change", "schema_matches_declared"):
        assert name in out


def test_the_ci_command_fails_when_an_error_check_fails(spark, tmp_path, capsys, monkeypatch):
    import jobs.minute_partials as partials_job

    original = partials_job.to_partials
    def losing_every_other_minute(events, config):
        return original(events, config).where(F.minute("frame_start") % 2 == 0)

    monkeypatch.setattr(partials_job, "to_partials", losing_every_other_minute)
    code = ci_checks.main(["--from", DAY.isoformat(), "--to", DAY.isoformat(), "--events-per-day", "500",
                           "--keys", "30", "--workdir", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 1
    assert "minute_partials.partials_count_accepted_events" in out and "FAIL" in out
    assert "did not run" in out  # the window checks: their assets were blocked
