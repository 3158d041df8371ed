"""Several windows in one plan, and the grid of ``windowing_core.window_spec`` as Spark expressions.

The windows a job computes together (sliding, or session windows) are rows of one plan, told
apart by the ``window`` column, so one shuffle, sort and Window serve all of them: a plan branch
per window repeated each of them per window, and a small day's run paid its planning and its
stages once per window. A window's parameter is a literal where every window has the same value
(so a single window's plan holds constants), else a CASE on the name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from pyspark.sql import Column
from pyspark.sql import functions as F

from windowing_core.sessions import SessionSpec
from windowing_core.window_spec import DAY_SECONDS, WindowSpec

Spec = WindowSpec | SessionSpec


class Windows:
    """Windows computed together; ``param`` and ``choose`` turn what differs between them into
    expressions over the row's ``window``."""

    def __init__(self, specs: Iterable[Spec]) -> None:
        self.specs = tuple(specs)
        self.names = [s.name for s in self.specs]

    def __bool__(self) -> bool:
        return bool(self.specs)

    def where(self, keep: Callable[[Spec], bool]) -> Windows:
        return Windows(s for s in self.specs if keep(s))

    def filter(self) -> Column:
        """Rows of these windows."""
        return F.col("window").isin(self.names)

    def param(self, value: Callable[[Spec], int | bool | str | None]) -> Column:
        """``value(spec)`` of the row's window. Whole numbers (and None) are longs: epoch seconds
        and their sums must not overflow an int."""
        by_name = {s.name: value(s) for s in self.specs}

        def literal(v: int | bool | str | None) -> Column:
            return F.lit(v) if isinstance(v, bool | str) else F.lit(v).cast("long")

        if len(set(by_name.values())) == 1:
            return literal(next(iter(by_name.values())))
        window, case = F.col("window"), None
        for name, v in by_name.items():
            case = F.when(window == name, literal(v)) if case is None else case.when(window == name, literal(v))
        return case

    def choose(self, flag: Callable[[Spec], bool], yes: Callable[[], Column], no: Callable[[], Column]) -> Column:
        """``yes()`` for the windows where ``flag`` holds, ``no()`` for the others."""
        flags = {bool(flag(s)) for s in self.specs}
        if flags == {True}:
            return yes()
        if flags == {False}:
            return no()
        return F.when(self.param(lambda s: bool(flag(s))), yes()).otherwise(no())

    # -- the grid ---------------------------------------------------------------------------------

    def end_at_or_after(self, seconds: Column) -> Column:
        """``WindowSpec.end_at_or_after``."""
        return seconds + F.pmod(self.param(lambda s: s.end_offset) - seconds, self.param(lambda s: s.every))

    def window_start_of(self, end: Column) -> Column:
        """``WindowSpec.window_start``: ``end - length``, or a cumulating window's period start."""
        length = self.param(lambda s: s.length)

        def period_start() -> Column:
            before = end - self.param(lambda s: s.step or 0)
            return before - F.pmod(before - self.param(lambda s: s.offset), length)

        return self.choose(lambda s: s.cumulating, period_start, lambda: end - length)


def floor_to(seconds: Column, size: Column | int) -> Column:
    return seconds - F.pmod(seconds, size if isinstance(size, Column) else F.lit(size))


def window_start_of(end: Column, spec: WindowSpec) -> Column:
    """One window's ``WindowSpec.window_start`` as a Spark expression."""
    return Windows((spec,)).window_start_of(end)


def seconds_of(column: str = "frame_start") -> Column:
    """A timestamp column in whole epoch seconds."""
    return F.unix_seconds(F.col(column))


def utc_midnight(day: Column) -> Column:
    """Epoch seconds of a date's start, UTC."""
    return F.unix_date(day).cast("long") * DAY_SECONDS
