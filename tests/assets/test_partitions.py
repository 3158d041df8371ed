"""Partitions below a day: their keys, the mappings in parts, and the job runs of a range."""

from dataclasses import replace
from datetime import UTC, date, datetime, timedelta

import dagster as dg
import pytest

from assets.partitions import (
    Run,
    arrivals_of_event_day,
    arrivals_of_event_part,
    frames_of_window_day,
    partitions_from_environment,
    reach_days,
    runs_of,
)
from tests.landing import random_landing
from windowing_core import reference
from windowing_core.config import PipelineConfig
from windowing_core.run_interval import RunInterval, part_key
from windowing_core.window_spec import DAY_SECONDS, WindowSpec

DAYS = {"PANES_START_DATE": "2025-01-27", "PANES_END_DATE": "2025-02-08"}


def at(day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(2025, 1, day, hour, minute, tzinfo=UTC)


@pytest.mark.parametrize("seconds, first, second, count", [
    (3600, "2025-01-27-00:00", "2025-01-27-01:00", 13 * 24),
    (900, "2025-01-27-00:00", "2025-01-27-00:15", 13 * 96),
    (7200, "2025-01-27-00:00", "2025-01-27-02:00", 13 * 12),
])
def test_parts_of_a_day_are_keyed_by_their_start_through_the_last_day(seconds, first, second, count):
    keys = partitions_from_environment(DAYS, seconds).get_partition_keys()
    assert (keys[0], keys[1], keys[-1][:10], len(keys)) == (first, second, "2025-02-08", count)


@pytest.mark.parametrize("seconds", [900, 3600])
def test_below_a_day_the_partition_under_way_exists_and_a_day_once_it_has_ended(seconds):
    now = datetime.now(UTC)
    start = {"PANES_START_DATE": now.date().isoformat()}
    under_way = partitions_from_environment(start, seconds).get_last_partition_window()
    assert under_way.start <= now < under_way.end
    assert partitions_from_environment(start).get_last_partition_window() is None  # today is not a partition yet


def _upstream(mapping: dg.TimeWindowPartitionMapping, partitions: dg.TimeWindowPartitionsDefinition,
              key: str) -> list[str]:
    subset = partitions.empty_subset().with_partition_keys([key])
    return sorted(mapping.get_upstream_mapped_partitions_result_for_partitions(
        subset, partitions, partitions).partitions_subset.get_partition_keys())


@pytest.mark.parametrize("hour", [0, 13, 23])
def test_an_event_hour_reads_every_arrival_hour_its_days_job_reads(hour):
    config = PipelineConfig(partition=3600, allowed_lateness=2 * DAY_SECONDS)
    partitions = partitions_from_environment(DAYS, 3600)
    read = _upstream(arrivals_of_event_day(config), partitions, f"2025-01-30-{hour:02d}:00")
    needed = {f"2025-{1 + (d > 31):02d}-{(d - 1) % 31 + 1:02d}-{h:02d}:00" for d in (30, 31, 32) for h in range(24)}
    assert needed <= set(read)  # the day's first hour to D + L's last: an hour's events arrive in any of them
    assert len(read) < len(needed) + 24  # over-covered by less than a day


@pytest.mark.parametrize("policy, last", [("include", "2025-01-30-16:00"), ("drop", "2025-01-31-15:00")])
def test_below_a_day_an_event_hour_fires_on_the_arrival_hours_its_lateness_reaches(policy, last):
    """``allowed_lateness: 3h``: the events of 13:00 .. 14:00 count from arrival hours starting
    before 17:00, so later hours change nothing (under ``drop``: nothing but the watermark of their
    day's earlier arrivals, so up to that day's end, over-covered by less than a day)."""
    config = PipelineConfig(partition=3600, allowed_lateness=3 * 3600, late_policy=policy)
    partitions = partitions_from_environment(DAYS, 3600)
    read = _upstream(arrivals_of_event_part(config), partitions, "2025-01-30-13:00")
    assert (read[0], read[-1]) == ("2025-01-29-14:00", last)  # an event may arrive before its time, in its day
    whole_days = replace(config, allowed_lateness=DAY_SECONDS)
    assert arrivals_of_event_part(whole_days) == arrivals_of_event_day(whole_days)


def test_every_event_in_time_arrives_in_a_part_its_event_hour_fires_on(tmp_path):
    """The mapping against the oracle's rule: each event within a lateness of 5 hours, in hour
    folders and day folders alike, landed in an arrival hour its event hour is mapped to."""
    config = PipelineConfig(partition=3600, allowed_lateness=5 * 3600)
    partitions = partitions_from_environment(DAYS, 3600)
    landing = random_landing(tmp_path, 3, date(2025, 1, 28), 3, events_per_day=200, max_delay_days=1,
                             part_hours=(0, 4, 7, 11, 15, 19, 22))
    in_time = [e for e in landing.events if reference.within_lateness(e, config)]
    assert len(in_time) > 300 and len(in_time) < len(landing.events)
    mapping, fired_on = arrivals_of_event_part(config), {}
    for e in in_time:
        event_hour = e.event_time.replace(minute=0, second=0, microsecond=0).strftime("%Y-%m-%d-%H:%M")
        if event_hour not in fired_on:
            fired_on[event_hour] = set(_upstream(mapping, partitions, event_hour))
        arrival_hour = part_key(e.arrival_date, e.arrival_part or datetime.combine(
            e.arrival_date + timedelta(days=1), datetime.min.time(), UTC), 3600)
        assert arrival_hour in fired_on[event_hour], (e.event_id, event_hour, arrival_hour)
    assert max(len(hours) for hours in fired_on.values()) <= 23 + 1 + 5  # not the 71 of a lateness of 1d


@pytest.mark.parametrize("hour", [0, 23])
def test_a_window_hour_reads_the_frames_of_its_days_reach(hour):
    config = PipelineConfig(partition=3600, windows=(WindowSpec.of("2d", "2d", "1m"),))
    partitions = partitions_from_environment(DAYS, 3600)
    read = _upstream(frames_of_window_day(config), partitions, f"2025-02-05-{hour:02d}:00")
    assert reach_days(config) == 3
    assert "2025-02-02-00:00" in read and read[0] > "2025-02-01-00:00"  # from D - ceil(W) - 1: less than a day more
    assert read[-1] == f"2025-02-05-{hour:02d}:00"
    daily = _upstream(frames_of_window_day(PipelineConfig(windows=config.windows)),
                      partitions_from_environment(DAYS), "2025-02-05")
    assert daily == ["2025-02-02", "2025-02-03", "2025-02-04", "2025-02-05"]


@pytest.mark.parametrize("start, end, expected", [
    (at(28), at(29), [Run(date(2025, 1, 28), date(2025, 1, 28))]),
    (at(28), at(31), [Run(date(2025, 1, 28), date(2025, 1, 30))]),
    (at(28, 13), at(28, 14), [Run(date(2025, 1, 28), date(2025, 1, 28), RunInterval(at(28, 13), at(28, 14)))]),
    (at(28, 13), at(29), [Run(date(2025, 1, 28), date(2025, 1, 28), RunInterval(at(28, 13), at(29)))]),
    (at(28), at(28, 0, 15), [Run(date(2025, 1, 28), date(2025, 1, 28), RunInterval(at(28), at(28, 0, 15)))]),
    (at(27, 22), at(30, 5), [Run(date(2025, 1, 27), date(2025, 1, 27), RunInterval(at(27, 22), at(28))),
                             Run(date(2025, 1, 28), date(2025, 1, 29)),
                             Run(date(2025, 1, 30), date(2025, 1, 30), RunInterval(at(30), at(30, 5)))]),
    (at(27, 22), at(29), [Run(date(2025, 1, 27), date(2025, 1, 27), RunInterval(at(27, 22), at(28))),
                          Run(date(2025, 1, 28), date(2025, 1, 28))]),
])
def test_a_range_of_partitions_runs_its_whole_days_as_one_run_and_the_parts_at_its_ends_alone(start, end, expected):
    assert runs_of(start, end) == expected


def test_a_runs_command_line_is_the_jobs_days_or_part():
    assert Run(date(2025, 1, 28), date(2025, 1, 30)).argv("lh") == [
        "--lakehouse", "lh", "--date", "2025-01-28", "--until", "2025-01-30"]
    assert Run(date(2025, 1, 28), date(2025, 1, 28), RunInterval(at(28, 13), at(29))).argv("lh") == [
        "--lakehouse", "lh", "--from", "2025-01-28T13:00:00+00:00", "--until", "2025-01-29T00:00:00+00:00"]
