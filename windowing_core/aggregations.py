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

import bisect
import inspect
import math
from abc import ABC, abstractmethod
from fractions import Fraction
from dataclasses import dataclass
from functools import reduce
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
        params = "".join(f", {k}={v!r}" for k, v in self.params.items())
        return f"{type(self).__name__}({self.name!r}{params})"

    def __eq__(self, other: object) -> bool:
        return (type(self) is type(other) and self.name == other.name  # type: ignore[attr-defined]
                and self.params == other.params)  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self), self.name, repr(self.params)))

    @property
    def params(self) -> dict[str, Any]:
        """The kind's parameters as configured (``k``, ``percentiles``), none for most kinds."""
        return {}

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

    def spark_negate(self, fields: list[Column]) -> list[Column]:
        """The partial that deducting ``fields`` adds (a frame's ``-partial`` as it leaves); only
        when ``invertible``."""
        return [-f for f in fields]

    def spark_deduct(self, a: list[Column], b: list[Column]) -> list[Column]:
        """``deduct`` as Spark expressions; only when ``invertible``."""
        return [x - y for x, y in zip(a, b, strict=True)]

    def spark_comparable(self, value: Column) -> Column:
        """The finished value in a form Spark can compare for equality (change points): itself,
        but for maps, which Spark cannot compare."""
        return value

    def spark_empty_value(self) -> Column:
        """``finish(empty())`` as a Spark literal of ``output_type``: what every key's window
        starts from (0, null, an empty list or map)."""
        from pyspark.sql import functions as F

        value = self.finish(self.empty())
        if isinstance(value, (list, dict)) and not value:
            return (F.array() if isinstance(value, list) else F.create_map()).cast(self.output_type)
        return F.lit(value).cast(self.output_type)


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


# -- Chronon's list: moments, quantiles, k-lists, distinct values, histograms ------------------


def _whole(name: str, param: str, value: Any, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"aggregations.{name}.{param}: a whole number from {low} to {high}, got {value!r}")
    return value


class Moments(Additive):
    """Skewness or excess kurtosis as Spark's ``skewness`` and ``kurtosis`` define them: with
    ``M_k`` the sum of the k-th powers of the deviations from the mean, ``sqrt(n) M3 / M2**1.5``
    and ``n M4 / M2**2 - 3`` (population moments), null where the window holds no value or every
    value is the same (``M2 = 0``), as Spark's are.

    The partial is exact integer power sums (n, s1 .. s4), as ``Variance``'s: invertible, no
    floating error carried from frame to frame, and no cancellation, since the central moments
    are recovered exactly, ``A2 = n s2 - s1**2 = n M2``, ``A3 = n**2 M3``, ``A4 = n**3 M4``, so
    that skewness is ``A3 / A2**1.5`` and kurtosis ``A4 / A2**2 - 3``, rounded once. Chronon's
    Welford-style moments merge (Pebay's formulas) are stable too, but neither deduct nor run as a
    Spark aggregate over a window frame. The power sums are decimal(38,0): exact while they fit,
    ``sum(x**4) < 10**38`` (a million values up to 10**8); beyond, Spark's ANSI arithmetic fails
    the day rather than return a wrong moment.
    """

    fields = (PartialField("n", "bigint"), PartialField("s", SUM_TYPE), PartialField("ss", SUM_TYPE),
              PartialField("s3", SUM_TYPE), PartialField("s4", SUM_TYPE))
    output_type = "double"
    order: ClassVar[int]  # 3: skewness, 4: kurtosis

    def contributions(self, value: int) -> Partial:
        return (1, value, value ** 2, value ** 3, value ** 4)

    def finish(self, partial: Partial) -> float | None:
        n, s1, s2, s3, s4 = (int(x) for x in partial)
        a2 = n * s2 - s1 * s1
        if n == 0 or a2 == 0:
            return None
        if self.order == 3:
            return float(n * n * s3 - 3 * n * s1 * s2 + 2 * s1 ** 3) / (float(a2) * math.sqrt(float(a2)))
        a4 = n ** 3 * s4 - 4 * n * n * s1 * s3 + 6 * n * s1 * s1 * s2 - 3 * s1 ** 4
        return float(a4) / (float(a2) * float(a2)) - 3.0

    def spark_contributions(self, value: Column) -> list[Column]:
        from pyspark.sql import functions as F

        x = value.cast(SUM_TYPE)
        return [F.lit(1).cast("bigint"), x, x * x, x * x * x, x * x * x * x]

    def spark_finish(self, fields: list[Column]) -> Column:
        """The same integers and the same rounding as ``finish``, so equal windows give equal
        bits. The power sums are first shifted by ``c = floor(s1 / n)``, exactly
        (``t_k = sum((x - c)**k)`` by the binomial expansion; no term exceeds ``6 s4``), so the
        ``A``s, which do not depend on the shift, come from small numbers: exact in decimal(38,0)
        where they fit (``try_`` arithmetic, null on overflow), else rounded from the shifted
        sums in double, where nothing large cancels."""
        from pyspark.sql import functions as F

        n, s1, s2, s3, s4 = (f.cast(SUM_TYPE) for f in fields)
        c = F.floor(s1 / n).cast(SUM_TYPE)

        def exact(*terms: tuple[int, list[Column]]) -> Column:
            total = None
            for coefficient, factors in terms:
                product = F.lit(coefficient).cast(SUM_TYPE)
                for factor in factors:
                    product = F.try_multiply(product, factor)
                total = product if total is None else F.try_add(total, product)
            return total

        t1 = exact((1, [s1]), (-1, [n, c]))
        t2 = exact((1, [s2]), (-2, [c, s1]), (1, [c, c, n]))
        t3 = exact((1, [s3]), (-3, [c, s2]), (3, [c, c, s1]), (-1, [c, c, c, n]))
        t4 = exact((1, [s4]), (-4, [c, s3]), (6, [c, c, s2]), (-4, [c, c, c, s1]), (1, [c, c, c, c, n]))

        def rounded(*terms: tuple[int, list[Column]]) -> Column:
            in_double = reduce(lambda a, b: a + b, [
                F.lit(float(k)) * reduce(lambda x, y: x * y, [f.cast("double") for f in fs]) for k, fs in terms])
            return F.coalesce(exact(*terms).cast("double"), in_double)

        a2 = rounded((1, [n, t2]), (-1, [t1, t1]))
        if self.order == 3:
            moment = rounded((1, [n, n, t3]), (-3, [n, t1, t2]), (2, [t1, t1, t1])) / (a2 * F.sqrt(a2))
        else:
            moment = rounded((1, [n, n, n, t4]), (-4, [n, n, t1, t3]), (6, [n, t1, t1, t2]),
                             (-3, [t1, t1, t1, t1])) / (a2 * a2) - F.lit(3.0)
        return F.when((fields[0] > 0) & (a2 != 0), moment)


class Skew(Moments):
    order = 3


class Kurtosis(Moments):
    order = 4


KLL_K = 400
"""Sketch size of ``approx_percentile``: DataSketches' KLL with k = 400 answers a quantile
within a normalised rank error of 0.68% with 99% confidence (``2.296 / k**0.9723``, its
stated bound; Spark's default k = 200 gives 1.33%, over the 1% promised); it holds every
value exactly up to k values."""
KLL_RANK_ERROR = 2.296 / KLL_K ** 0.9723


class ApproxPercentile(Aggregation):
    """Quantiles at ``percentiles`` (in that order) from a mergeable KLL sketch (Apache
    DataSketches, Spark's ``kll_sketch_agg_*``): each within ``KLL_RANK_ERROR`` in rank. A
    quantile at rank r is the smallest value at least r·n of the window's n values are at or
    below (DataSketches' inclusive rule), r read as the decimal written. Sketches merge but
    cannot deduct. The Python side keeps the exact sorted values: the oracle the sketch is held
    to. Beyond k values KLL compacts at random, so a re-run may answer another value within the
    same rank error."""

    invertible = False
    fields = (PartialField("kll", "binary"),)
    output_type = "array<bigint>"
    DEFAULT = (0.5, 0.95, 0.99)

    def __init__(self, name: str, percentiles: Any = DEFAULT) -> None:
        super().__init__(name)
        where = f"aggregations.{name}.percentiles"
        if not isinstance(percentiles, (list, tuple)) or not percentiles:
            raise ValueError(f"{where}: a non-empty list of fractions from 0 to 1, got {percentiles!r}")
        for p in percentiles:
            if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 <= p <= 1:
                raise ValueError(f"{where}: each a fraction from 0 to 1, got {p!r}")
        if any(a >= b for a, b in zip(percentiles, percentiles[1:])):
            raise ValueError(f"{where}: list them in increasing order, each once, got {list(percentiles)}")
        self.percentiles = tuple(float(p) for p in percentiles)

    @property
    def params(self) -> dict[str, Any]:
        return {"percentiles": list(self.percentiles)}

    def empty(self) -> Partial:
        return ((),)

    def accumulate(self, partial: Partial, value: int, at: Any = None) -> Partial:
        values = list(partial[0])
        bisect.insort(values, value)
        return (tuple(values),)

    def combine(self, a: Partial, b: Partial) -> Partial:
        return (tuple(sorted(a[0] + b[0])),)

    def finish(self, partial: Partial) -> list | None:
        values = partial[0]
        if not values:
            return None
        return [values[max(math.ceil(Fraction(str(p)) * len(values)), 1) - 1] for p in self.percentiles]

    def spark_accumulate(self, value: Column, at: Column) -> list[Column]:
        from pyspark.sql import functions as F

        return [F.kll_sketch_agg_bigint(value, KLL_K)]

    def spark_merge(self, fields: list[Column], over: WindowSpec | None = None) -> list[Column]:
        from pyspark.sql import functions as F

        return [_over(F.kll_merge_agg_bigint(fields[0]), over)]

    def spark_finish(self, fields: list[Column]) -> Column:
        from pyspark.sql import functions as F

        ranks = F.array(*[F.lit(p) for p in self.percentiles])
        return F.when(F.kll_sketch_get_n_bigint(fields[0]) > 0, F.kll_sketch_get_quantile_bigint(fields[0], ranks))


MAX_K = 1000
"""The longest k-list: a window's list is written whole in every change point."""


class KList(Aggregation):
    """The k first or last values by event time, or the k largest or smallest, as a list in
    that order (Chronon's FirstK, LastK, TopK, BottomK); empty for a window without values.
    The partial is the list itself, at most k long: merging two keeps the k best of both, which
    cannot deduct (a value leaving may have pushed out the one that should return).

    Ties: ``first_k`` orders by (event time, value) ascending and ``last_k`` descending, so events
    of one instant go by their value (smaller first in ``first_k``, larger first in ``last_k``,
    as ``first`` and ``last`` break theirs); equal (time, value) pairs are interchangeable. Spark's
    row order never decides.
    """

    invertible = False
    timed: ClassVar[bool]  # first_k / last_k: by (event time, value); top_k / bottom_k: by value
    descending: ClassVar[bool]
    DEFAULT_K = 5

    def __init__(self, name: str, k: Any = DEFAULT_K) -> None:
        super().__init__(name)
        self.k = _whole(name, "k", k, 1, MAX_K)
        element = "struct<at:timestamp,v:bigint>" if self.timed else "bigint"
        self.fields = (PartialField("list", f"array<{element}>"),)
        self.output_type = "array<bigint>"

    @property
    def params(self) -> dict[str, Any]:
        return {"k": self.k}

    def empty(self) -> Partial:
        return ((),)

    def accumulate(self, partial: Partial, value: int, at: Any) -> Partial:
        return self.combine(partial, (((at, value),) if self.timed else (value,),))

    def combine(self, a: Partial, b: Partial) -> Partial:
        # tuple(): a partial Spark stored (a list, its items rows) combines as the Python one does
        return (tuple(sorted((*a[0], *b[0]), reverse=self.descending)[: self.k]),)

    def finish(self, partial: Partial) -> list:
        return [item[1] for item in partial[0]] if self.timed else list(partial[0])

    def _item(self, value: Column, at: Column) -> Column:
        from pyspark.sql import functions as F

        # a null value is no item: a struct holding one would still sort and be kept
        return F.when(value.isNotNull(), F.struct(at.alias("at"), value.alias("v"))) if self.timed else value

    def _best(self, items: Column) -> Column:
        from pyspark.sql import functions as F

        return F.slice(F.sort_array(items, asc=not self.descending), 1, self.k)

    def spark_accumulate(self, value: Column, at: Column) -> list[Column]:
        from pyspark.sql import functions as F

        item = self._item(value, at)
        best = (F.max_by if self.descending else F.min_by)(item, item, self.k)  # sorted, at most k
        return [F.coalesce(best, F.array().cast(self.fields[0].spark_type))]

    def spark_merge(self, fields: list[Column], over: WindowSpec | None = None) -> list[Column]:
        from pyspark.sql import functions as F

        return [self._best(F.flatten(_over(F.collect_list(fields[0]), over)))]

    def spark_finish(self, fields: list[Column]) -> Column:
        from pyspark.sql import functions as F

        items = F.coalesce(fields[0], F.array().cast(self.fields[0].spark_type))
        return F.transform(items, lambda x: x["v"]) if self.timed else items


class FirstK(KList):
    timed, descending = True, False


class LastK(KList):
    timed, descending = True, True


class TopK(KList):
    timed, descending = False, True


class BottomK(KList):
    timed, descending = False, False


class UniqueCount(Aggregation):
    """Exact count of distinct values (Chronon's UniqueCount): the partial is the set of values,
    kept sorted in Spark so that equal sets are equal arrays. Sets merge but cannot deduct (a
    value leaving may still be in the window), so they slide over tiles; ``approx_distinct`` is
    the bounded-size alternative."""

    invertible = False
    fields = (PartialField("values", "array<bigint>"),)
    output_type = "bigint"

    def empty(self) -> Partial:
        return (frozenset(),)

    def accumulate(self, partial: Partial, value: int, at: Any = None) -> Partial:
        return (partial[0] | {value},)

    def combine(self, a: Partial, b: Partial) -> Partial:
        return (frozenset(a[0]) | frozenset(b[0]),)  # also a partial Spark stored (a list)

    def finish(self, partial: Partial) -> int:
        return len(partial[0])

    def spark_accumulate(self, value: Column, at: Column) -> list[Column]:
        from pyspark.sql import functions as F

        return [F.array_sort(F.collect_set(value))]

    def spark_merge(self, fields: list[Column], over: WindowSpec | None = None) -> list[Column]:
        from pyspark.sql import functions as F

        return [F.array_sort(F.array_distinct(F.flatten(_over(F.collect_list(fields[0]), over))))]

    def spark_finish(self, fields: list[Column]) -> Column:
        from pyspark.sql import functions as F

        return F.coalesce(F.size(fields[0]), F.lit(0)).cast("bigint")


class Histogram(Aggregation):
    """How often each value occurs: a map from value to count (Chronon's Histogram), without
    values that no longer occur; empty for a window without values. Invertible: counts add, and
    a leaving frame's counts are deducted. The map's entries are stored in value order, so an
    equal histogram is an equal map, byte for byte."""

    invertible = True
    fields = (PartialField("counts", "map<bigint,bigint>"),)
    output_type = "map<bigint,bigint>"

    def empty(self) -> Partial:
        return ({},)

    def accumulate(self, partial: Partial, value: int, at: Any = None) -> Partial:
        return self.combine(partial, ({value: 1},))

    def _add(self, a: dict, b: dict, sign: int) -> Partial:
        counts = dict(a)
        for value, n in b.items():
            counts[value] = counts.get(value, 0) + sign * n
            if counts[value] == 0:
                del counts[value]
        return (counts,)

    def combine(self, a: Partial, b: Partial) -> Partial:
        return self._add(a[0], b[0], 1)

    def deduct(self, a: Partial, b: Partial) -> Partial:
        return self._add(a[0], b[0], -1)

    def finish(self, partial: Partial) -> dict:
        return dict(partial[0])

    def _empty_map(self) -> Column:
        from pyspark.sql import functions as F

        return F.create_map().cast(self.fields[0].spark_type)

    def _canonical(self, counts: Column) -> Column:
        """Without zero counts, entries in value order."""
        from pyspark.sql import functions as F

        kept = F.map_filter(counts, lambda _, n: n != 0)
        return F.map_from_entries(F.array_sort(F.map_entries(kept)))

    def _sum(self, maps: Column) -> Column:
        from pyspark.sql import functions as F

        def add(acc: Column, m: Column) -> Column:
            return F.map_zip_with(acc, m, lambda _, x, y: F.coalesce(x, F.lit(0)) + F.coalesce(y, F.lit(0)))

        return self._canonical(F.aggregate(maps, self._empty_map(), add))

    def spark_accumulate(self, value: Column, at: Column) -> list[Column]:
        from pyspark.sql import functions as F

        counted = F.aggregate(F.collect_list(value), self._empty_map(),
                              lambda acc, x: F.map_zip_with(acc, F.create_map(x, F.lit(1).cast("bigint")),
                                                            lambda _, a, b: F.coalesce(a, F.lit(0)) + F.coalesce(b, F.lit(0))))
        return [self._canonical(counted)]

    def spark_merge(self, fields: list[Column], over: WindowSpec | None = None) -> list[Column]:
        from pyspark.sql import functions as F

        return [self._sum(_over(F.collect_list(fields[0]), over))]

    def spark_finish(self, fields: list[Column]) -> Column:
        from pyspark.sql import functions as F

        return F.coalesce(fields[0], self._empty_map())

    def spark_negate(self, fields: list[Column]) -> list[Column]:
        from pyspark.sql import functions as F

        return [F.transform_values(fields[0], lambda _, n: -n)]

    def spark_deduct(self, a: list[Column], b: list[Column]) -> list[Column]:
        from pyspark.sql import functions as F

        return [self._sum(F.array(a[0], F.transform_values(b[0], lambda _, n: -n)))]

    def spark_comparable(self, value: Column) -> Column:
        from pyspark.sql import functions as F

        return F.array_sort(F.map_entries(value))


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
    "skew": Skew,
    "kurtosis": Kurtosis,
    "approx_percentile": ApproxPercentile,
    "first_k": FirstK,
    "last_k": LastK,
    "top_k": TopK,
    "bottom_k": BottomK,
    "unique_count": UniqueCount,
    "histogram": Histogram,
}


def aggregation(kind: str, name: str | None = None, **params: Any) -> Aggregation:
    """The factory: an aggregation kind (``count``, ``sum``, ...) under an output name, with the
    kind's parameters (``k``, ``percentiles``), each validated with a message naming it."""
    try:
        cls = AGGREGATIONS[kind]
    except (KeyError, TypeError):
        known = ", ".join(sorted(AGGREGATIONS))
        raise ValueError(f"aggregations.{name or kind}: unknown aggregation {kind!r}; known: {known}") from None
    accepted = set(inspect.signature(cls.__init__).parameters) - {"self", "name"}
    unknown = sorted(set(params) - accepted)
    if unknown:
        takes = f"takes {', '.join(sorted(accepted))}" if accepted else "takes no parameters"
        raise ValueError(f"aggregations.{name or kind}.{unknown[0]}: {kind} {takes}")
    return cls(name or kind, **params)


DEFAULT_AGGREGATIONS: tuple[Aggregation, ...] = (aggregation("count"), aggregation("sum"))
