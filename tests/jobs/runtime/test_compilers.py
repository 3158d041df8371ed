"""How a job run alone compiles: C1 alone for a small input only, and Spark's expressions
interpreted for a smaller one."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from jobs import cli, ingest_events, minute_partials
from jobs.runtime import compilers, spark_session
from windowing_core.run_interval import RunInterval


@pytest.fixture(autouse=True)
def auto(monkeypatch):
    monkeypatch.delenv(compilers.JIT_ENV, raising=False)


def test_a_small_known_input_compiles_quickly_and_a_large_or_unknown_one_fully():
    assert compilers.quick(events=compilers.SMALL_EVENTS)
    assert not compilers.quick(events=compilers.SMALL_EVENTS + 1)
    assert compilers.quick(landing_bytes=0)
    assert not compilers.quick(landing_bytes=compilers.SMALL_LANDING_BYTES + 1)
    assert not compilers.quick()  # a table source, object storage: the default tiers
    assert compilers.interpreted(events=compilers.TINY_EVENTS)
    assert not compilers.interpreted(events=compilers.TINY_EVENTS + 1)
    assert compilers.interpreted(landing_bytes=compilers.TINY_LANDING_BYTES)
    assert not compilers.interpreted(landing_bytes=compilers.TINY_LANDING_BYTES + 1)
    assert not compilers.interpreted()
    assert compilers.TINY_EVENTS < compilers.SMALL_EVENTS and compilers.TINY_LANDING_BYTES < compilers.SMALL_LANDING_BYTES


@pytest.mark.parametrize("setting, small, large", [("quick", True, True), ("full", False, False),
                                                   ("AUTO", True, False)])
def test_panes_jit_decides_by_hand(monkeypatch, setting, small, large):
    monkeypatch.setenv(compilers.JIT_ENV, setting)
    assert compilers.quick(events=1) is small and compilers.interpreted(events=1) is small
    assert compilers.quick(events=10**9) is large and compilers.interpreted(events=10**9) is large


def test_a_bad_panes_jit_is_a_one_line_error(monkeypatch, capsys):
    monkeypatch.setenv(compilers.JIT_ENV, "c2")
    with pytest.raises(SystemExit) as exit_:
        minute_partials.main(["--lakehouse", "y", "--date", "2025-01-30"])
    assert exit_.value.code == cli.EXIT_BAD_ARGUMENTS
    assert capsys.readouterr().err.strip().splitlines()[-1].endswith(
        "PANES_JIT must be one of auto, quick, full, not 'c2'")


def test_landing_bytes_count_every_file_below_a_day_and_stop_past_the_limit(tmp_path):
    day = tmp_path / "2025-01-30"
    (day / "13").mkdir(parents=True)
    (day / "a.json").write_bytes(b"x" * 100)
    (day / "13" / "b.json.gz").write_bytes(b"x" * 50)
    folders = [str(day), str(tmp_path / "2025-01-31")]  # a day with no folder holds nothing
    assert compilers.bytes_under(folders, limit=1_000) == 150
    assert 100 < compilers.bytes_under(folders, limit=120) <= 150  # counting stopped past the limit
    assert compilers.bytes_under(["s3a://bucket/landing/2025-01-30"], limit=1_000) is None
    assert compilers.landing_input(["s3a://bucket/landing/2025-01-30"]) == {}
    (day / "13" / "loop").symlink_to(day)  # followed, as ingest reads through links: a loop ends past the limit
    assert compilers.bytes_under([str(day)], limit=1_000) > 1_000


def test_the_events_of_the_run_days_are_counted_from_the_delta_log(tmp_path):
    path = str(tmp_path / "events")
    days = [date(2025, 1, 29)] * 2 + [date(2025, 1, 30)] * 3 + [date(2025, 1, 31)] * 5
    write_deltalake(path, pa.table({"event_id": [str(i) for i in range(len(days))],
                                    "arrival_date": pa.array(days, pa.date32())}),
                    partition_by=["arrival_date"])
    assert compilers.events_input(path, date(2025, 1, 30), date(2025, 1, 30)) == {"events": 3}
    assert compilers.events_input(path, date(2025, 1, 29), date(2025, 1, 30)) == {"events": 5}
    assert compilers.events_input(str(tmp_path / "none"), date(2025, 1, 30), date(2025, 1, 30)) == {}
    # a part of a day weighs its share of the day's events, rounded up
    half = RunInterval(datetime(2025, 1, 31, 12, tzinfo=UTC), datetime(2025, 1, 31, 0, tzinfo=UTC) + timedelta(days=1))
    assert compilers.events_input(path, date(2025, 1, 31), date(2025, 1, 31), half) == {"events": 3}
    hour = RunInterval(datetime(2025, 1, 30, 13, tzinfo=UTC), datetime(2025, 1, 30, 14, tzinfo=UTC))
    assert compilers.events_input(path, date(2025, 1, 30), date(2025, 1, 30), hour) == {"events": 1}


class Options(str):
    def __new__(cls, text: str, settings: dict[str, str]):
        options = super().__new__(cls, text)
        options.settings = settings
        return options

    @property
    def interpreted(self) -> bool:
        return all(self.settings.get(k) == v for k, v in compilers.INTERPRETED.items())


class Started(Exception):
    """Raised by the stand-in for ``get_spark``: the test needs the JVM's options, not a JVM."""


@pytest.fixture
def jvm_options(monkeypatch):
    """The settings a job run alone would start its JVM with: its driver options (each an
    ``Options`` string, the session's other settings in its ``settings``)."""
    seen = []

    def started(overrides=None, roots=()):
        seen.append(Options((overrides or {}).get("spark.driver.extraJavaOptions", ""), dict(overrides or {})))
        raise Started

    monkeypatch.setattr(spark_session, "starts_a_jvm", lambda: True)
    monkeypatch.setattr(spark_session, "get_spark", started)
    monkeypatch.setenv(cli.LOG_DIR_ENV, "/tmp/panes-test-logs")
    return seen


def _ingest(tmp_path) -> None:
    with pytest.raises(Started):
        ingest_events.main(["--landing", str(tmp_path / "landing"), "--lakehouse", str(tmp_path / "lake"),
                            "--date", "2025-01-30"])


def test_a_small_ingest_starts_its_jvm_with_the_quick_compiler_alone(tmp_path, monkeypatch, jvm_options):
    folder = tmp_path / "landing" / "2025-01-30"
    folder.mkdir(parents=True)
    (folder / "a.json").write_bytes(b'{"user_id": "u1", "timestamp": "2025-01-30T10:00:00Z"}\n' * 100)
    _ingest(tmp_path)
    monkeypatch.setattr(compilers, "TINY_LANDING_BYTES", 1_000)  # the same day, now over the smaller limit
    _ingest(tmp_path)
    monkeypatch.setattr(compilers, "SMALL_LANDING_BYTES", 1_000)  # and over the larger one
    _ingest(tmp_path)
    monkeypatch.setattr(compilers, "SMALL_LANDING_BYTES", 10**9)
    monkeypatch.setattr(compilers, "TINY_LANDING_BYTES", 10**9)
    monkeypatch.setenv(compilers.JIT_ENV, "full")
    _ingest(tmp_path)
    quick = [compilers.QUICK_OPTION in options for options in jvm_options]
    assert quick == [True, True, False, False]
    assert [options.interpreted for options in jvm_options] == [True, False, False, False]
    assert all("-XX:+UseParallelGC" in options and "-Dlog4j2.configurationFile" in options for options in jvm_options)


def test_the_jobs_after_ingest_weigh_the_events_of_their_days(tmp_path, monkeypatch, jvm_options):
    lake = tmp_path / "lake"
    write_deltalake(str(lake / "events"), pa.table({"event_id": ["a", "b", "c"],
                                                    "arrival_date": pa.array([date(2025, 1, 30)] * 3, pa.date32())}),
                    partition_by=["arrival_date"])
    for small, tiny in ((3, 3), (3, 2), (2, 2)):
        monkeypatch.setattr(compilers, "SMALL_EVENTS", small)
        monkeypatch.setattr(compilers, "TINY_EVENTS", tiny)
        with pytest.raises(Started):
            minute_partials.main(["--lakehouse", str(lake), "--date", "2025-01-30"])
    with pytest.raises(Started):  # no events table yet: not weighed, the default tiers
        minute_partials.main(["--lakehouse", str(tmp_path / "empty"), "--date", "2025-01-30"])
    assert [compilers.QUICK_OPTION in options for options in jvm_options] == [True, True, False, False]
    assert [options.interpreted for options in jvm_options] == [True, False, False, False]


def test_a_step_on_a_shared_session_evaluates_a_tiny_input_interpreted_then_restores_the_session(spark, monkeypatch):
    """A Dagster step (or the bench) runs a job on a session it did not start: for a tiny input
    the job's expressions are interpreted, and the session keeps its own settings after; a large
    or unknown input, or ``PANES_JIT=full``, leaves them alone."""
    whole_stage, factory = compilers.INTERPRETED
    spark.conf.set(whole_stage, "true")
    spark.conf.unset(factory)

    def settings():
        return spark.conf.get(whole_stage), spark.conf.get(factory)

    try:
        default = settings()
        assert default == ("true", "FALLBACK")
        with compilers.expressions_for(spark, events=2_000) as interpreted:
            assert interpreted and settings() == ("false", "NO_CODEGEN")
        assert settings() == default
        with pytest.raises(RuntimeError), compilers.expressions_for(spark, landing_bytes=1_000):
            raise RuntimeError("the job failed")
        assert settings() == default
        for sizes in ({"events": compilers.TINY_EVENTS + 1}, {}):
            with compilers.expressions_for(spark, **sizes) as interpreted:
                assert not interpreted and settings() == default
        monkeypatch.setenv(compilers.JIT_ENV, "full")
        with compilers.expressions_for(spark, events=10) as interpreted:
            assert not interpreted and settings() == default
    finally:
        for key, value in compilers.INTERPRETED.items():  # the tests' session evaluates interpreted
            spark.conf.set(key, value)
