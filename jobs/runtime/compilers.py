"""How a job run alone compiles: the JVM's JIT, and Spark's code for its expressions, both the
quick way for a small input.

Most of a small job run alone is its cold JVM compiling Spark's and Delta's code: HotSpot's
optimising compiler (C2) spends more CPU than the rows do, on cores the driver needs, and its code
pays that back only on larger inputs. So where the run's input is small, the JVM stops
at the quick compiler (C1, ``-XX:TieredStopAtLevel=1``); where it is larger, or cannot be sized
before Spark starts (a table source, object storage), it keeps the default tiers. Below a
smaller limit Spark also evaluates expressions interpreted instead of generating and compiling
Java for each query (whole-stage code generation), as Spark's own tests can (``factoryMode``).

The sizes are the run's own input, never the lakehouse's: the landing files of the days ingest
reads, the events of the arrival days the other jobs run (from the Delta log's counts, no data
read). Each limit is the largest size at which the quick way was measured to win
(``docs/performance.md``, "A job's start"). ``PANES_JIT`` sets it by hand: ``quick`` (both),
``full`` (neither) or ``auto`` (the default).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

from jobs.storage import delta_io
from jobs.storage.locations import is_local
from jobs.tables import EVENTS, day_filter, ingest_root
from windowing_core.config import PipelineConfig
from windowing_core.run_interval import RunInterval
from windowing_core.window_spec import DAY_SECONDS

if TYPE_CHECKING:  # pyspark loads once a job runs, not for --help
    from pyspark.sql import SparkSession

JIT_ENV = "PANES_JIT"
CHOICES = ("auto", "quick", "full")
QUICK_OPTION = "-XX:TieredStopAtLevel=1"

SMALL_EVENTS = 1_000_000
"""The most events of a run's arrival days that the quick compiler takes (partials, windows):
at 10^6 events a day, run alone, partials took 0.79x and windows 0.84x their time under C2."""
SMALL_LANDING_BYTES = 16 * 2**20
"""The most landing bytes of a run's days that the quick compiler takes (ingest): a day of
200,000 demo events (14 MB) took 0.84x its time under C2, one of 10^6 (70 MB) 1.35x."""


TINY_EVENTS = 20_000
"""The most events of a run's arrival days that Spark evaluates interpreted (partials, windows):
in one session, a day of 2,000 events took 0.62x (partials) and 0.74x (windows) its time with
generated code, one of 20,000 0.77x and 0.89x, one of 200,000 1.36x and 1.77x."""
TINY_LANDING_BYTES = 512 * 2**10
"""The most landing bytes that ingest evaluates interpreted: a day of 2,000 events (274 KB) took
0.86x its time with generated code, one of 20,000 (2.6 MB) 1.07x."""
INTERPRETED = {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN"}
"""Spark's settings for expressions evaluated without generated code."""


def choice() -> str:
    """``PANES_JIT``, checked: a bad value is a configuration error (a ValueError, one line)."""
    text = (os.environ.get(JIT_ENV) or "auto").strip().lower()
    if text not in CHOICES:
        raise ValueError(f"{JIT_ENV} must be one of {', '.join(CHOICES)}, not {text!r}")
    return text


def bytes_under(folders: Iterable[str], limit: int) -> int | None:
    """The bytes of the files under local ``folders`` (missing ones hold none), counted until
    they pass ``limit``; None for a folder that is not local, which cannot be sized cheaply. Links
    are followed, as ingest reads through them (a loop only counts past the limit)."""
    total = 0
    for folder in folders:
        if not is_local(folder):
            return None
        for dirpath, _, names in os.walk(folder.removeprefix("file:"), followlinks=True):
            for name in names:
                try:
                    total += Path(dirpath, name).stat().st_size
                except OSError:
                    continue
                if total > limit:
                    return total
    return total


def _small(events: int | None, landing_bytes: int | None, most_events: int, most_bytes: int) -> bool:
    """Under ``PANES_JIT=auto``, only where the input's size is known and within the limits."""
    wanted = choice()
    if wanted != "auto":
        return wanted == "quick"
    if events is not None:
        return events <= most_events
    if landing_bytes is not None:
        return landing_bytes <= most_bytes
    return False


def quick(*, events: int | None = None, landing_bytes: int | None = None) -> bool:
    """Whether a run of this input compiles with C1 alone."""
    return _small(events, landing_bytes, SMALL_EVENTS, SMALL_LANDING_BYTES)


def interpreted(*, events: int | None = None, landing_bytes: int | None = None) -> bool:
    """Whether a run of this input evaluates Spark's expressions without generated code."""
    return _small(events, landing_bytes, TINY_EVENTS, TINY_LANDING_BYTES)


def landing_input(folders: list[str]) -> dict[str, int]:
    """What ``quick`` weighs for ingest: the bytes of the landing folders it reads (none for
    folders not on a local disk)."""
    size = bytes_under(folders, SMALL_LANDING_BYTES)
    return {} if size is None else {"landing_bytes": size}


def events_input(events_path: str, first: date, last: date, interval: RunInterval | None = None) -> dict[str, int]:
    """What ``quick`` weighs for the jobs after ingest: the events of arrival days ``first ..
    last``, counted in the Delta log (none where it cannot say); for a run of part of a day
    (``interval``), the part's share of them.

    A part reads its day's events but works on its share (the ids with a copy in it, the frames
    entering and leaving in it): one hour's partials and windows took 0.63x their time interpreted
    at 10^5 events a day (about 4,000 an hour) and 1.06x at 10^6 (42,000, above ``TINY_EVENTS``),
    alternating four rounds each in one session."""
    try:
        events = delta_io.row_count(events_path, partition_filters=day_filter("arrival_date", first, last))
    except Exception:  # the size only advises: the job itself says what is wrong with its input
        return {}
    if interval is not None:
        start, until = interval.seconds
        events = -(-events * (until - start) // DAY_SECONDS)
    return {"events": events}


def events_of_the_days(group_root: str, config: PipelineConfig, first: date, last: date,
                       interval: RunInterval | None = None) -> dict[str, int]:
    """A run's input as the jobs after ingest weigh it: the events of its arrival days (of a
    part, its share: ``events_input``)."""
    return events_input(EVENTS.path(ingest_root(group_root, config)), first, last, interval)


@contextmanager
def expressions_for(spark: SparkSession, *, events: int | None = None,
                    landing_bytes: int | None = None) -> Iterator[bool]:
    """A job on a session it did not start (a Dagster step, the bench): where ``interpreted``
    says so, Spark's expressions evaluated without generated code for the job's duration, as a
    job run alone starts its JVM; the session's own settings again after. Whether it did. (Two
    jobs on one session at once would only share the quicker or slower way, never other rows.)"""
    if not interpreted(events=events, landing_bytes=landing_bytes):
        yield False
        return
    saved = {key: spark.conf.get(key, None) for key in INTERPRETED}
    for key, value in INTERPRETED.items():
        spark.conf.set(key, value)
    try:
        yield True
    finally:
        for key, value in saved.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def java_options(quick_compile: bool) -> str:
    return QUICK_OPTION if quick_compile else ""


def spark_settings(interpreted_expressions: bool) -> dict[str, str]:
    return dict(INTERPRETED) if interpreted_expressions else {}
