"""The aggregation algebra: one small class per aggregation, one factory, one place.

Every aggregation turns the events of a frame into a fixed-size *partial* and defines

- ``accumulate(partial, value, at)``: fold one event in (Chronon's ``update``);
- ``combine(a, b)``: merge two partials (``merge``);
- ``deduct(a, b)``: take ``b`` back out of ``a`` (``delete``), only when ``invertible``;
- ``finish(partial)``: the value a user sees (``finalize``).

The jobs never branch on an aggregation's name; they read ``invertible`` to choose the
sliding method:

- Invertible aggregations roll a window forward by combining the frame that enters and
  deducting the frame that leaves. In panes every invertible partial is a vector of sums (an
  abelian group under component-wise addition), so combine is ``+`` and deduct is ``-`` on each
  field, and a running sum over integer fields is exact.
- The others (min, max, first, last, approximate distinct) cannot deduct. They slide exactly
  over hierarchical frames, as Chronon does: a window is the suffix of the tile its start falls
  in, the whole tiles in between, and the prefix of the tile its end falls in. Suffix and prefix
  are the two stacks of the two-stacks queue (Hirzel et al., "Sliding-window aggregation
  algorithms"), computed as running aggregates over the frames of one tile; the tiles in
  between are read as coarser partials. No window is ever refolded from its frames.

Each class states its partial in Spark too: ``spark_accumulate`` folds a frame's events,
``spark_merge`` combines partials (a plain aggregate, so it serves ``groupBy`` and running
window frames alike) and ``spark_finish`` finishes. The property tests check the Spark side
against the Python side through the oracle.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from pyspark.sql import Column
    from pyspark.sql.window import WindowSpec

Partial = tuple


def _over(aggregate: Column, window: WindowSpec | None) -> Column:
    return aggregate if window is None else aggregate.over(window)

HLL_LG_K = 12
"""Sketch size of ``approx_distinct``: 2**12 registers, relative standard error about 1.6%."""


@dataclass(frozen=True)
class PartialField:
    name: str
    spark_type: str  # Spark SQL DDL type of the stored field


class Aggregation(ABC):
    """An aggregation named ``name`` (its output column) over the event value."""

    invertible: ClassVar[bool]
    fields: ClassVar[tuple[PartialField, ...]]
    output_type: ClassVar[str]  # Spark SQL DDL type of the finished value

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self.name == other.name  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self), self.name))

    @property
    def kind(self) -> str:
        """The name the configuration gives this aggregation's kind (``count``, ``mean``, ...)."""
        return next(k for k, cls in AGGREGATIONS.items() if cls is type(self))

    def field_columns(self) -> list[str]:
        """Column names of this aggregation's partial in ``minute_partials`` and snapshots."""
        return [f"{self.name}__{f.name}" for f in self.fields]

    @abstractmethod
    def empty(self) -> Partial: ...

    @abstractmethod
    def accumulate(self, partial: Partial, value: int, at: Any) -> Partial: ...

    @abstractmethod
    def combine(self, a: Partial, b: Partial) -> Partial: ...

    def deduct(self, a: Partial, b: Partial) -> Partial:
        raise TypeError(f"{type(self).__name__} is not invertible: it cannot deduct a frame")

    @abstractmethod
    def finish(self, partial: Partial) -> Any: ...

    @abstractmethod
    def spark_accumulate(self, value: Column, at: Column) -> list[Column]:
        """Aggregate expressions folding one frame's events into the partial's fields."""

    @abstractmethod
    def spark_merge(self, fields: list[Column], over: WindowSpec | None = None) -> list[Column]:
        """Aggregate expressions combining partials: in ``groupBy``, or over a window frame."""

    @abstractmethod
    def spark_finish(self, fields: list[Column]) -> Column: ...


# -- invertible: vectors of sums ---------------------------------------------------------------


class Additive(Aggregation):
    """An invertible aggregation whose partial is a vector of sums."""

    invertible = True

    def empty(self) -> Partial:
        return (0,) * len(self.fields)

    def accumulate(self, partial: Partial, value: int, at: Any = None) -> Partial:
        return self.combine(partial, self.contributions(value))

    def combine(self, a: Partial, b: Partial) -> Partial:
        return tuple(x + y for x, y in zip(a, b, strict=True))

    def deduct(self, a: Partial, b: Partial) -> Partial:
        return tuple(x - y for x, y in zip(a, b, strict=True))

    @abstractmethod
    def contributions(self, value: int) -> Partial:
        """What one event adds to each field (the Python twin of ``spark_contributions``)."""

    @abstractmethod
    def spark_contributions(self, value: Column) -> list[Column]: ...

    def spark_accumulate(self, value: Column, at: Column) -> list[Column]:
        from pyspark.sql import functions as F

        return [F.sum(c).cast(f.spark_type)
                for c, f in zip(self.spark_contributions(value), self.fields, strict=True)]

    def spark_merge(self, fields: list[Column], over: WindowSpec | None = None) -> list[Column]:
        from pyspark.sql import functions as F

        return [_over(F.sum(c), over).cast(f.spark_type) for c, f in zip(fields, self.fields, strict=True)]


class Count(Additive):
    fields = (PartialField("n", "bigint"),)
    output_type = "bigint"

    def contributions(self, value: int) -> Partial:
        return (1,)

    def finish(self, partial: Partial) -> int:
        return partial[0]

    def spark_contributions(self, value: Column) -> list[Column]:
        from pyspark.sql import functions as F

        return [F.lit(1).cast("bigint")]

    def spark_finish(self, fields: list[Column]) -> Column:
        return fields[0]


SUM_TYPE = "decimal(38,0)"
"""The type of every sum of values: values are 64-bit integers, and a sum of two of them can
leave that range (two of 2**63 - 1), where a bigint sum would fail the day (ANSI mode's
ARITHMETIC_OVERFLOW) or, without ANSI mode, wrap. 38 digits hold 10**19 such values: an
integer still, exact, never a wrap (Python's integers, the oracle's, agree)."""


class Sum(Additive):
    """Sum of integer values: stays an integer, so running sums carry no floating error; 38
    digits wide (``SUM_TYPE``), so no sum of 64-bit values overflows."""

    fields = (PartialField("s", SUM_TYPE),)
    output_type = SUM_TYPE

    def contributions(self, value: int) -> Partial:
        return (value,)

    def finish(self, partial: Partial) -> int:
        return partial[0]

    def spark_contributions(self, value: Column) -> list[Column]:
        return [value.cast(SUM_TYPE)]

    def spark_finish(self, fields: list[Column]) -> Column:
        return fields[0]


class Mean(Additive):
    """Mean as (n, sum): both exact integers, divided once when finished (null when empty)."""

    fields = (PartialField("n", "bigint"), PartialField("s", SUM_TYPE))
    output_type = "double"

    def contributions(self, value: int) -> Partial:
        return (1, value)

    def finish(self, partial: Partial) -> float | None:
        n, s = partial
        return float(s) / float(n) if n else None

    def spark_contributions(self, value: Column) -> list[Column]:
        from pyspark.sql import functions as F

        return [F.lit(1).cast("bigint"), value.cast(SUM_TYPE)]

    def spark_finish(self, fields: list[Column]) -> Column:
        from pyspark.sql import functions as F

        n, s = fields
        return F.when(n != 0, s.cast("double") / n.cast("double"))


class Variance(Additive):
    """Variance from exact integer moments (n, sum, sum of squares).

    ``n**2 * variance = n * sum(x**2) - sum(x)**2`` is computed exactly in integers (decimal(38,0)
    in Spark) and divided once, so large values suffer no catastrophic cancellation, which the
    textbook ``E[x**2] - E[x]**2`` in floating point does. Welford's update is stable too, but is
    not invertible; exact integer moments are both.
    """

    fields = (PartialField("n", "bigint"), PartialField("s", "decimal(38,0)"),
              PartialField("ss", "decimal(38,0)"))
    output_type = "double"
    sample: ClassVar[bool] = False
    root: ClassVar[bool] = False

    def contributions(self, value: int) -> Partial:
        return (1, value, value * value)

    def _denominator(self, n: int) -> int:
        return n * (n - 1) if self.sample else n * n

    def finish(self, partial: Partial) -> float | None:
        n, s, ss = (int(x) for x in partial)
        if n < (2 if self.sample else 1):
            return None
        variance = float(n * ss - s * s) / float(self._denominator(n))
        return math.sqrt(variance) if self.root else variance

    def spark_contributions(self, value: Column) -> list[Column]:
        from pyspark.sql import functions as F

        big = value.cast("decimal(38,0)")
        return [F.lit(1).cast("bigint"), big, big * big]

    def spark_finish(self, fields: list[Column]) -> Column:
        from pyspark.sql import functions as F

        n, s, ss = fields
        numerator = (n.cast("decimal(38,0)") * ss - s * s).cast("double")
        denominator = (n * (n - 1) if self.sample else n * n).cast("double")
        variance = numerator / denominator
        return F.when(n >= (2 if self.sample else 1), F.sqrt(variance) if self.root else variance)


class VariancePop(Variance):
    pass


class VarianceSample(Variance):
    sample = True


class StddevPop(Variance):
    root = True


class StddevSample(Variance):
    sample = True
    root = True


# -- not invertible: exact over hierarchical frames ----------------------------------------------


class Extreme(Aggregation):
    """Min or max: a partial of one field, empty as None; not invertible (a max cannot leave)."""

    invertible = False
    fields = (PartialField("m", "bigint"),)
    output_type = "bigint"
    pick: ClassVar[Any]

    def empty(self) -> Partial:
        return (None,)

    def accumulate(self, partial: Partial, value: int, at: Any = None) -> Partial:
        return self.combine(partial, (value,))

    def combine(self, a: Partial, b: Partial) -> Partial:
        present = [x[0] for x in (a, b) if x[0] is not None]
        return (type(self).pick(present) if present else None,)

    def finish(self, partial: Partial) -> int | None:
        return partial[0]

    def spark_accumulate(self, value: Column, at: Column) -> list[Column]:
        return self.spark_merge([value])

    def spark_merge(self, fields: list[Column], over: WindowSpec | None = None) -> list[Column]:
        from pyspark.sql import functions as F

        return [_over((F.min if type(self).pick is min else F.max)(fields[0]), over)]

    def spark_finish(self, fields: list[Column]) -> Column:
        return fields[0]


class Min(Extreme):
    pick = min


class Max(Extreme):
    pick = max


class Ordered(Aggregation):
    """First or last value by event time; ties between equal times go to the smaller (first) or
    larger (last) value, so the result never depends on how Spark ordered the rows."""

    invertible = False
    fields = (PartialField("at", "timestamp"), PartialField("v", "bigint"))
    output_type = "bigint"
    latest: ClassVar[bool]

    def empty(self) -> Partial:
        return (None, None)

    def accumulate(self, partial: Partial, value: int, at: Any) -> Partial:
        return self.combine(partial, (at, value))

    def combine(self, a: Partial, b: Partial) -> Partial:
        present = [x for x in (a, b) if x[0] is not None]
        if not present:
            return (None, None)
        return (max if self.latest else min)(present)

    def finish(self, partial: Partial) -> int | None:
        return partial[1]

    def spark_accumulate(self, value: Column, at: Column) -> list[Column]:
        return self.spark_merge([at, value])

    def spark_merge(self, fields: list[Column], over: WindowSpec | None = None) -> list[Column]:
        from pyspark.sql import functions as F

        # an absent partial must stay null: a struct of nulls would sort first and win a min
        pair = F.when(fields[0].isNotNull(), F.struct(fields[0].alias("at"), fields[1].alias("v")))
        chosen = _over(F.max(pair) if self.latest else F.min(pair), over)
        return [chosen["at"], chosen["v"]]

    def spark_finish(self, fields: list[Column]) -> Column:
        return fields[1]


class First(Ordered):
    latest = False


class Last(Ordered):
    latest = True


class ApproxDistinct(Aggregation):
    """Approximate count of distinct values: a mergeable HyperLogLog sketch (Apache DataSketches,
    built into Spark), relative standard error about 1.6% with 2**12 registers and exact for
    small counts. Sketches merge but cannot deduct. The Python side keeps the exact set: it is
    the oracle the sketch is measured against."""

    invertible = False
    fields = (PartialField("sketch", "binary"),)
    output_type = "bigint"
    relative_error = 1.04 / math.sqrt(2**HLL_LG_K)

    def empty(self) -> Partial:
        return (frozenset(),)

    def accumulate(self, partial: Partial, value: int, at: Any = None) -> Partial:
        return (partial[0] | {value},)

    def combine(self, a: Partial, b: Partial) -> Partial:
        return (a[0] | b[0],)

    def finish(self, partial: Partial) -> int:
        return len(partial[0])

    def spark_accumulate(self, value: Column, at: Column) -> list[Column]:
        from pyspark.sql import functions as F

        return [F.hll_sketch_agg(value, HLL_LG_K)]

    def spark_merge(self, fields: list[Column], over: WindowSpec | None = None) -> list[Column]:
        from pyspark.sql import functions as F

        return [_over(F.hll_union_agg(fields[0]), over)]

    def spark_finish(self, fields: list[Column]) -> Column:
        from pyspark.sql import functions as F

        return F.coalesce(F.hll_sketch_estimate(fields[0]), F.lit(0).cast("bigint"))


AGGREGATIONS: dict[str, type[Aggregation]] = {
    "count": Count,
    "sum": Sum,
    "mean": Mean,
    "var_pop": VariancePop,
    "var_samp": VarianceSample,
    "stddev_pop": StddevPop,
    "stddev_samp": StddevSample,
    "min": Min,
    "max": Max,
    "first": First,
    "last": Last,
    "approx_distinct": ApproxDistinct,
}


def aggregation(kind: str, name: str | None = None) -> Aggregation:
    """The factory: an aggregation kind (``count``, ``sum``, ...) under an output name."""
    try:
        cls = AGGREGATIONS[kind]
    except (KeyError, TypeError):
        known = ", ".join(sorted(AGGREGATIONS))
        raise ValueError(f"aggregations.{name or kind}: unknown aggregation {kind!r}; known: {known}") from None
    return cls(name or kind)


DEFAULT_AGGREGATIONS: tuple[Aggregation, ...] = (aggregation("count"), aggregation("sum"))
