"""What a read of values at an instant answers (``Reading``: its windows, its aggregations,
whether a point exactly at the instant is seen, its precision) and which window end a read at an
instant gets (``read_end``: in Spark, and in Python for the days a read reaches)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone

from pyspark.sql import Column
from pyspark.sql import functions as F

from windowing_core.aggregations import Aggregation
from windowing_core.config import PipelineConfig
from windowing_core.count_windows import CountSpec
from windowing_core.sessions import SessionSpec
from windowing_core.spine import read_at_instant, selected
from windowing_core.window_spec import DAY_SECONDS, WindowSpec

MICROS = 1_000_000
KEY, AT = "_pit_key", "_pit_at"
"""The lookups' key (a string) and instant (a timestamp): what ``with_values_as_of`` reads them by."""


@dataclass(frozen=True)
class Reading:
    """What a read answers: which windows (sliding and session) and aggregations, and whether a
    change point exactly at the instant is seen (not with ``exclusive``)."""

    windows: tuple[WindowSpec | SessionSpec | CountSpec, ...]
    aggregations: tuple[Aggregation, ...]
    exclusive: bool = False
    precision: str = "bucket"  # "event": sliding and cumulating windows exact at the instant

    @classmethod
    def of(cls, config: PipelineConfig, windows: tuple[str, ...] | None = None,
           aggregations: tuple[str, ...] | None = None, exclusive: bool = False, *, where: str = "spine",
           precision: str = "bucket") -> Reading:
        """A join's reading: by name, every keyed window and every aggregation by default."""
        specs, aggs = selected(config, windows, aggregations, where=where)
        return cls(specs, aggs, exclusive, precision)

    @classmethod
    def everything(cls, config: PipelineConfig, precision: str = "bucket") -> Reading:
        return cls((*config.windows, *config.sessions, *config.counts), tuple(config.aggregations),
                   precision=precision)

    @property
    def exact(self) -> list[WindowSpec]:
        """The windows read at the instant itself (``precision: event``), not at a bucket end."""
        return [w for w in self.windows if self.precision == "event" and read_at_instant(w)]

    def columns(self, spec: WindowSpec | SessionSpec | CountSpec) -> list[str]:
        """A window's output columns in a join, in order."""
        return [f"{spec.name}__{c}" for c in ("window_end", "read_at", "event_count",
                                              *[a.name for a in self.aggregations])]


def end_at_or_before(seconds: Column, spec: WindowSpec) -> Column:
    """``WindowSpec.end_at_or_before`` as a Spark expression (epoch seconds)."""
    return seconds - F.pmod(seconds - F.lit(spec.end_offset), F.lit(spec.every))


def read_end(at: Column, spec: WindowSpec, exclusive: bool) -> Column:
    """The end ``L`` (epoch seconds) of the window a read at the timestamp ``at`` gets: the last
    end ``<= at``, or ``< at`` with ``exclusive``, at microsecond precision."""
    micros, unit = F.unix_micros(at), F.lit(MICROS)
    # whole seconds in integers: exact for every timestamp (a quotient in doubles keeps the
    # microseconds only while the seconds fit in 32 bits, until 2106)
    seconds = ((micros + F.pmod(-micros, unit)) / unit - 1) if exclusive else (micros - F.pmod(micros, unit)) / unit
    return end_at_or_before(seconds.cast("long"), spec)


def read_end_seconds(at: datetime, spec: WindowSpec, exclusive: bool) -> int:
    """``read_end`` in Python, for the days a read reaches."""
    micros = (at - datetime(1970, 1, 1, tzinfo=timezone.utc)) // timedelta(microseconds=1)
    seconds = -(-micros // MICROS) - 1 if exclusive else micros // MICROS
    return spec.end_at_or_before(seconds)


def day_of(seconds: int) -> date:
    return date(1970, 1, 1) + timedelta(days=seconds // DAY_SECONDS)


def unix_day(day: date) -> int:
    return (day - date(1970, 1, 1)).days
