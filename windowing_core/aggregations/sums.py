"""Invertible aggregations: partials that are vectors of exact sums, so a window deducts what leaves
(count, sum, mean, the variances; over doubles they slide over tiles instead)."""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Mapping
from decimal import Decimal
from fractions import Fraction
from typing import TYPE_CHECKING, Any, ClassVar

from pyspark.sql import functions as F

from windowing_core.aggregations.base import (
    DEFAULT_FIELD,
    Aggregation,
    Partial,
    PartialField,
    _add,
    _negate,
    _ordered_sum,
    _over,
    _spark_unscaled,
    _sum_type,
    _unscaled,
)
from windowing_core.field_types import (
    DECIMAL,
    DOUBLE,
    EXACT,
    NUMERIC,
    precision_and_scale,
)

if TYPE_CHECKING:
    from pyspark.sql import Column
    from pyspark.sql.window import WindowSpec



# -- invertible: vectors of exact sums -----------------------------------------------------------


class Additive(Aggregation):
    """An invertible aggregation whose partial is a vector of exact sums: ``contributions`` of
    one event, summed (Python integers and wide decimals, Spark ``decimal``/``bigint``)."""

    invertible = True

    def empty(self) -> Partial:
        return (0,) * len(self.fields)

    def accumulate(self, partial: Partial, value: Any, at: Any = None) -> Partial:
        return partial if value is None else self.combine(partial, self.contributions(value))

    def combine(self, a: Partial, b: Partial) -> Partial:
        return tuple(_add(x, y) for x, y in zip(a, b, strict=True))

    def deduct(self, a: Partial, b: Partial) -> Partial:
        return tuple(_add(x, _negate(y)) for x, y in zip(a, b, strict=True))

    @abstractmethod
    def contributions(self, value: Any) -> Partial:
        """What one (non-null) value adds to each field (the Python twin of ``spark_contributions``)."""

    @abstractmethod
    def spark_contributions(self, value: Column) -> list[Column]:
        """Per event, what it adds to each field; null where the value is null (ignored)."""

    def spark_accumulate(self, value: Column, at: Column) -> list[Column]:
        return [F.coalesce(F.sum(c), F.lit(0)).cast(f.spark_type)
                for c, f in zip(self.spark_contributions(value), self.fields, strict=True)]

    def spark_merge(self, fields: list[Column], over: WindowSpec | None = None) -> list[Column]:
        return [_over(F.sum(c), over).cast(f.spark_type) for c, f in zip(fields, self.fields, strict=True)]


class Count(Additive):
    """The number of events whose field is not null (every event for the default ``value``,
    which is 1 where a record has none)."""

    fields = (PartialField("n", "bigint"),)
    output_type = "bigint"

    def contributions(self, value: Any) -> Partial:
        return (1,)

    def finish(self, partial: Partial) -> int:
        return partial[0]

    def spark_contributions(self, value: Column) -> list[Column]:
        return [F.when(value.isNotNull(), F.lit(1)).cast("bigint")]

    def spark_finish(self, fields: list[Column]) -> Column:
        return fields[0]


SUM_TYPE = "decimal(38,0)"
"""The type of every sum of long values: a sum of two longs can leave their range (two of
2**63 - 1), where a bigint sum would fail the day (ANSI mode's ARITHMETIC_OVERFLOW) or, without
ANSI mode, wrap. 38 digits hold 10**19 such values: an integer still, exact, never a wrap
(Python's integers, the oracle's, agree). A decimal(P,S) field sums in decimal(38,S) alike."""


class _DoubleSums:
    """The non-invertible side shared by sum and mean of doubles: partial sums folded in Spark
    in a fixed order (``_ordered_sum``), exactly in Python (fractions)."""

    @staticmethod
    def merge(column: Column, over: WindowSpec | None) -> Column:
        return _ordered_sum(column) if over is None else F.sum(column).over(over)


class Sum(Aggregation):
    """Sum of a numeric field.

    ``long`` and ``decimal(P,S)``: an exact sum in ``decimal(38,S)``, invertible, so running
    sums carry no error. ``double``: not invertible (see the module's docstring), so a window's
    sum is folded from its own frames only; the empty window's sum is 0 for every type.
    """

    applies_to = NUMERIC
    needs = "a numeric"

    def __init__(self, name: str, field: str = DEFAULT_FIELD, value_type: str = "bigint", **params: Any) -> None:
        super().__init__(name, field, value_type, **params)
        self.invertible = self.family in EXACT
        self.output_type = _sum_type(value_type) if self.invertible else "double"
        self.fields = (PartialField("s", self.output_type),)

    def empty(self) -> Partial:
        return (0,) if self.invertible else (None,)

    def accumulate(self, partial: Partial, value: Any, at: Any = None) -> Partial:
        return partial if value is None else self.combine(partial, (value,))

    def combine(self, a: Partial, b: Partial) -> Partial:
        return (_add(a[0], b[0]),)

    def deduct(self, a: Partial, b: Partial) -> Partial:
        if not self.invertible:
            return super().deduct(a, b)
        return (_add(a[0], _negate(b[0])),)

    def finish(self, partial: Partial) -> Any:
        if self.invertible:
            return partial[0] if partial[0] is not None else 0
        return float(partial[0]) if partial[0] is not None else 0.0

    def spark_accumulate(self, value: Column, at: Column) -> list[Column]:
        if not self.invertible:
            return [_ordered_sum(value)]
        return [F.coalesce(F.sum(value.cast(self.output_type)), F.lit(0)).cast(self.output_type)]

    def spark_merge(self, fields: list[Column], over: WindowSpec | None = None) -> list[Column]:
        if not self.invertible:
            return [_DoubleSums.merge(fields[0], over)]
        return [_over(F.sum(fields[0]), over).cast(self.output_type)]

    def spark_finish(self, fields: list[Column]) -> Column:
        return F.coalesce(fields[0], F.lit(0).cast(self.output_type))


class Mean(Aggregation):
    """Mean as (n, sum), divided once when finished (null when empty).

    ``long``: both exact integers, the mean a double (as before). ``decimal(P,S)``: the exact
    quotient rounded half up to S digits, a ``decimal(P,S)`` (``_spark_decimal_mean``).
    ``double``: not invertible, as its sum.
    """

    applies_to = NUMERIC
    needs = "a numeric"

    def __init__(self, name: str, field: str = DEFAULT_FIELD, value_type: str = "bigint", **params: Any) -> None:
        super().__init__(name, field, value_type, **params)
        self.invertible = self.family in EXACT
        self.fields = (PartialField("n", "bigint"),
                       PartialField("s", _sum_type(value_type) if self.invertible else "double"))
        self.output_type = value_type if self.family == DECIMAL else "double"

    def empty(self) -> Partial:
        return (0, 0)

    def accumulate(self, partial: Partial, value: Any, at: Any = None) -> Partial:
        return partial if value is None else self.combine(partial, (1, value))

    def combine(self, a: Partial, b: Partial) -> Partial:
        return (_add(a[0], b[0]), _add(a[1], b[1]))

    def deduct(self, a: Partial, b: Partial) -> Partial:
        if not self.invertible:
            return super().deduct(a, b)
        return (_add(a[0], _negate(b[0])), _add(a[1], _negate(b[1])))

    def finish(self, partial: Partial) -> Any:
        n, s = partial
        if not n:
            return None
        if self.family == DECIMAL:
            scale = precision_and_scale(self.value_type)[1]
            return Decimal(_round_half_up(_unscaled(s, scale), int(n))).scaleb(-scale)
        if self.family == DOUBLE:
            return float(Fraction(s) / int(n))
        return float(s) / float(n)

    def spark_accumulate(self, value: Column, at: Column) -> list[Column]:
        n = F.count(value).cast("bigint")
        if not self.invertible:
            return [n, _ordered_sum(value)]
        return [n, F.coalesce(F.sum(value.cast(self.fields[1].spark_type)), F.lit(0)).cast(self.fields[1].spark_type)]

    def spark_merge(self, fields: list[Column], over: WindowSpec | None = None) -> list[Column]:
        n = _over(F.sum(fields[0]), over).cast("bigint")
        if not self.invertible:
            return [n, _DoubleSums.merge(fields[1], over)]
        return [n, _over(F.sum(fields[1]), over).cast(self.fields[1].spark_type)]

    def spark_finish(self, fields: list[Column]) -> Column:
        n, s = fields
        if self.family == DECIMAL:
            return F.when(n > 0, _spark_decimal_mean(s, n, self.value_type))
        return F.when(n > 0, s.cast("double") / n.cast("double"))


def _round_half_up(numerator: int, denominator: int) -> int:
    """``numerator / denominator`` (denominator > 0) rounded to an integer, halves away from
    zero (Spark's and SQL's rounding of decimals)."""
    q, r = divmod(numerator, denominator)  # floor division: 0 <= r < denominator
    up = 2 * r >= denominator if numerator >= 0 else 2 * r > denominator
    return q + 1 if up else q


def _spark_floor_div(numerator: Column, divisor: Column) -> tuple[Column, Column]:
    """``divmod`` of two decimal(38,0) integers (divisor > 0) in exact decimal arithmetic: the
    floor quotient and the remainder, ``0 <= remainder < divisor``; the quotient is null where
    ``numerator - remainder`` leaves decimal(38,0).

    The remainder first: ``pmod`` is exact for decimals, and ``numerator - remainder`` is a
    multiple of the divisor, which Spark's decimal division (rounding at 6 digits here) divides
    without rounding. Each operand appears at most twice: a finish is inlined wherever its value
    is compared, and a tree that repeats its operands is analysed, optimised and shipped with
    every task (docs/performance.md, "Many aggregations")."""
    whole = "decimal(38,0)"
    remainder = F.pmod(numerator, divisor).cast(whole)
    return (F.try_subtract(numerator, remainder) / divisor).cast(whole), remainder


def _spark_decimal_mean(s: Column, n: Column, value_type: str) -> Column:
    """``_round_half_up(s * 10**S, n) / 10**S`` in exact decimal arithmetic: Spark's division
    would round once at its own scale and again at S (``_spark_floor_div``)."""
    precision, scale = precision_and_scale(value_type)
    numerator = (s * F.lit(10**scale)).cast("decimal(38,0)")  # an integer: exact at any scale Spark keeps
    count = n.cast("decimal(20,0)")
    floor, r = _spark_floor_div(numerator, count)
    up = F.when(numerator >= 0, r * 2 >= count).otherwise(r * 2 > count)
    rounded = (floor + F.when(up, F.lit(1)).otherwise(F.lit(0))).cast(f"decimal({precision},0)")
    unit = F.lit(Decimal(1).scaleb(-scale)).cast(f"decimal({max(scale, 1)},{scale})")
    return (rounded * unit).cast(value_type)


class Variance(Aggregation):
    """Population or sample variance (``sample``), or its root (``root``), of a numeric field.

    ``long`` and ``decimal(P,S)`` (invertible): exact integer moments of the unscaled values u
    (a decimal's value times 10**S). ``n**2 * variance = n * sum(u**2) - sum(u)**2`` is computed
    exactly and divided once, so large values suffer no catastrophic cancellation, which the
    textbook ``E[x**2] - E[x]**2`` in floating point does; Welford's update is stable too, but
    is not invertible; exact integer moments are both. ``sum(u**2)`` of 64-bit values overflows
    38 digits after two of them, so each u is split into 32-bit limbs, ``u = a * 2**32 + b``,
    and the partial holds n, sum(a), sum(b), sum(a*a), sum(a*b), sum(b*b): every one fits
    decimal(38,0) for 10**18 events. The finish recombines them exactly in decimal(38,0) wherever
    the result fits there, and otherwise without cancellation to within two roundings
    (``_spark_exact_numerator``): never an overflow, never a wrap, exact where it can be.

    ``double`` (not invertible): the partial is (n, mean, M2), merged by Chan, Golub and
    LeVeque's pairwise update ("Algorithms for computing the sample variance", 1979), in a
    fixed order in Spark (``_chan_merge``); the Python side does the same arithmetic in exact
    fractions.
    """

    applies_to = NUMERIC
    needs = "a numeric"
    sample: ClassVar[bool] = False
    root: ClassVar[bool] = False

    def __init__(self, name: str, field: str = DEFAULT_FIELD, value_type: str = "bigint", **params: Any) -> None:
        super().__init__(name, field, value_type, **params)
        self.invertible = self.family in EXACT
        self.scale = precision_and_scale(value_type)[1]
        self.output_type = "double"
        if self.invertible:
            self.fields = (PartialField("n", "bigint"), *[PartialField(f, "decimal(38,0)")
                                                          for f in ("sa", "sb", "aa", "ab", "bb")])
        else:
            self.fields = (PartialField("n", "bigint"), PartialField("mean", "double"), PartialField("m2", "double"))

    # -- Python --

    def empty(self) -> Partial:
        return (0,) * 6 if self.invertible else (0, 0, 0)

    def accumulate(self, partial: Partial, value: Any, at: Any = None) -> Partial:
        if value is None:
            return partial
        if not self.invertible:
            return self.combine(partial, (1, Fraction(value), 0))
        u = _unscaled(value, self.scale)
        a, b = u >> 32, u & 0xFFFFFFFF  # floor: a * 2**32 + b == u, 0 <= b < 2**32
        return self.combine(partial, (1, a, b, a * a, a * b, b * b))

    def combine(self, a: Partial, b: Partial) -> Partial:
        if self.invertible:
            return tuple(_add(x, y) for x, y in zip(a, b, strict=True))
        (na, ma, qa), (nb, mb, qb) = ((int(n or 0), Fraction(m or 0), Fraction(q or 0)) for n, m, q in (a, b))
        if not nb:
            return (na, ma, qa)
        if not na:
            return (nb, mb, qb)
        n, delta = na + nb, mb - ma
        return (n, ma + delta * nb / n, qa + qb + delta * delta * na * nb / n)

    def deduct(self, a: Partial, b: Partial) -> Partial:
        if not self.invertible:
            return super().deduct(a, b)
        return tuple(_add(x, _negate(y)) for x, y in zip(a, b, strict=True))

    def _denominator(self, n: int) -> int:
        return n * (n - 1) if self.sample else n * n

    def finish(self, partial: Partial) -> float | None:
        n = int(partial[0] or 0)
        if n < (2 if self.sample else 1):
            return None
        if self.invertible:
            sa, sb, aa, ab, bb = (int(x) for x in partial[1:])
            s, ss = sa * 2**32 + sb, aa * 2**64 + ab * 2**33 + bb
            variance = float(n * ss - s * s) / (float(self._denominator(n)) * float(10 ** (2 * self.scale)))
        else:
            variance = float(Fraction(partial[2]) / (n - 1 if self.sample else n))
        return math.sqrt(variance) if self.root else variance

    # -- Spark --

    def spark_accumulate(self, value: Column, at: Column) -> list[Column]:
        if not self.invertible:
            one = F.when(value.isNotNull(), F.struct(F.lit(1).cast("bigint").alias("n"),
                                                       value.cast("double").alias("mean"), F.lit(0.0).alias("m2")))
            return _chan_merge(one, None)
        u = _spark_unscaled(value, self.value_type)
        a, b = F.shiftright(u, 32), u.bitwiseAND(F.lit(0xFFFFFFFF))
        whole = "decimal(38,0)"
        parts = [F.when(value.isNotNull(), F.lit(1)), a, b, a.cast(whole) * a, a.cast(whole) * b, b.cast(whole) * b]
        return [F.coalesce(F.sum(p), F.lit(0)).cast(f.spark_type) for p, f in zip(parts, self.fields, strict=True)]

    def spark_merge(self, fields: list[Column], over: WindowSpec | None = None) -> list[Column]:
        if not self.invertible:
            n, mean, m2 = fields
            return _chan_merge(F.when(n > 0, F.struct(n.cast("bigint").alias("n"), mean.alias("mean"),
                                                      m2.alias("m2"))), over)
        return [_over(F.sum(c), over).cast(f.spark_type) for c, f in zip(fields, self.fields, strict=True)]

    @property
    def merges_in_passes(self) -> bool:
        return not self.invertible

    def spark_combine(self, a: list[Column], b: list[Column]) -> list[Column] | None:
        return None if self.invertible else _combined(_chan, _CHAN, a, b)

    def spark_finish(self, fields: list[Column]) -> Column:
        n = fields[0]
        if self.invertible:  # as ``finish``: the exact numerator rounded once, divided once
            count = n.cast("double")
            denominator = (count * (count - 1) if self.sample else count * count) * F.lit(float(10 ** (2 * self.scale)))
            variance = _spark_exact_numerator(fields) / denominator
        else:
            variance = fields[2] / (n - 1 if self.sample else n).cast("double")
        return F.when(n >= (2 if self.sample else 1), F.sqrt(variance) if self.root else variance)


def _spark_exact_numerator(fields: list[Column]) -> Column:
    """``N = n * sum(u**2) - sum(u)**2`` from the limbs, as a double.

    Where every step fits decimal(38,0), N is computed exactly and rounded once, as ``finish``
    does (``try_*`` gives null where a step does not fit). Otherwise N is recombined without
    cancellation: with ``X = n*aa - sa**2``, ``Y = n*ab - sa*sb``, ``Z = n*bb - sb**2`` (exact
    for up to 2 * 10**9 events), ``N = 2**64 X + W`` where ``W = 2**33 Y + Z``; writing
    ``W = q 2**64 + r`` (``0 <= r < 2**64``), ``N = 2**64 (X + q) + r`` is a sum of two
    non-negative terms (N >= 0 and r >= 0 make X + q >= 0), so the double it gives is within two
    roundings of N, however close the values. Beyond that, the limbs' moments in doubles.
    """
    n, sa, sb, aa, ab, bb = fields
    whole = "decimal(38,0)"

    def big(value: int) -> Column:
        return F.lit(Decimal(value)).cast(whole)

    nn = n.cast(whole)
    s = F.try_add(F.try_multiply(sa, big(2**32)), sb)
    ss = F.try_add(F.try_add(F.try_multiply(aa, big(2**64)), F.try_multiply(ab, big(2**33))), bb)
    exact = F.try_subtract(F.try_multiply(nn, ss), F.try_multiply(s, s))

    def moment(x: Column, y: Column, xy: Column) -> Column:
        return F.try_subtract(F.try_multiply(nn, xy), F.try_multiply(x, y))

    x, y, z = moment(sa, sa, aa), moment(sa, sb, ab), moment(sb, sb, bb)
    w = F.try_add(F.try_multiply(y, big(2**33)), z)
    q, r = _spark_floor_div(w, big(2**64))
    recombined = F.try_add(x, q).cast("double") * float(2**64) + r.cast("double")

    d = [c.cast("double") for c in fields]
    mean_a, mean_b = d[1] / d[0], d[2] / d[0]
    var_a, var_b, cov = (d[3] / d[0] - mean_a * mean_a, d[5] / d[0] - mean_b * mean_b,
                         d[4] / d[0] - mean_a * mean_b)
    rough = (var_a * float(2**64) + cov * float(2**33) + var_b) * (d[0] * d[0])
    return F.coalesce(exact.cast("double"), recombined, rough)


def _chan(a: Mapping[str, Column], b: Mapping[str, Column]) -> dict[str, Column]:
    """Chan, Golub and LeVeque's update of (n, mean, m2): ``a`` then ``b``, both non-empty."""
    n = a["n"] + b["n"]
    delta = b["mean"] - a["mean"]
    return {"n": n, "mean": a["mean"] + delta * b["n"] / n, "m2": a["m2"] + b["m2"] + delta * delta * a["n"] * b["n"] / n}


def _combined(merge: Any, names: tuple[str, ...], a: list[Column], b: list[Column]) -> list[Column]:
    """``merge`` of two partials given as columns (``spark_combine``): the other where one is
    empty (null, as a lag before a partition's first row, or counting no value)."""
    merged = merge(dict(zip(names, a, strict=True)), dict(zip(names, b, strict=True)))
    a_empty, b_empty = F.coalesce(a[0], F.lit(0)) == 0, F.coalesce(b[0], F.lit(0)) == 0
    return [F.when(a_empty, y).when(b_empty, x).otherwise(merged[name]) for name, x, y in zip(names, a, b, strict=True)]


def _folded(merge: Any, names: tuple[str, ...], states: Column, over: WindowSpec | None) -> list[Column]:
    """The non-null ``states`` (structs of ``names``, counting ``n`` > 0 values) folded left to
    right by ``merge``: over a window frame in its order, in ``groupBy`` in ascending order of
    the states, so that every run folds them alike. Over a growing frame this refolds the
    frame at every row (quadratic); running merges use ``spark_combine`` instead."""
    collected = F.collect_list(states)
    ordered = collected.over(over) if over is not None else F.array_sort(collected)
    zero = F.struct(F.lit(0).cast("bigint").alias("n"), *[F.lit(0.0).alias(m) for m in names[1:]])

    def step(acc: Column, x: Column) -> Column:
        merged = merge({m: acc[m] for m in names}, {m: x[m] for m in names})
        return F.when(acc["n"] == 0, x).otherwise(F.struct(*[merged[m].alias(m) for m in names]))

    folded = F.aggregate(ordered, zero, step)
    return [folded[m] for m in names]


_CHAN = ("n", "mean", "m2")


def _chan_merge(states: Column, over: WindowSpec | None) -> list[Column]:
    """(n, mean, M2) of the non-null ``states`` merged by Chan's update (``_folded``)."""
    return _folded(_chan, _CHAN, states, over)


class VariancePop(Variance):
    pass


class VarianceSample(Variance):
    sample = True


class StddevPop(Variance):
    root = True


class StddevSample(Variance):
    sample = True
    root = True


