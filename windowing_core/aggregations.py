"""The aggregation algebra: one small class per aggregation, one factory, one place.

An aggregation reads one measured field of the events (``field``, of Spark type
``value_type``) and turns the events of a frame into a fixed-size *partial*. It defines

- ``accumulate(partial, value, at)``: fold one event's value in (Chronon's ``update``); a
  ``None`` value (the field is null) leaves the partial as it is, as SQL aggregates ignore
  nulls, while the event still counts in ``event_count``;
- ``combine(a, b)``: merge two partials (``merge``);
- ``deduct(a, b)``: take ``b`` back out of ``a`` (``delete``), only when ``invertible``;
- ``finish(partial)``: the value a user sees (``finalize``).

An aggregation is built by the factory from its configuration, ``aggregation(kind, name,
field, value_type, **params)``; its class refuses, with one line naming it, a field type it
does not apply to (``aggregations.total: sum needs a numeric field, page is string``) or a bad
parameter (``aggregations.<name>.<param>: ...``). Its partial's layout (``fields``), its
``output_type`` and ``invertible`` are the instance's: they may depend on the value type and
the parameters, so every caller reads them from the instance.

The jobs never branch on an aggregation's kind or type; they read ``invertible`` to choose the
sliding method:

- Invertible aggregations roll a window forward by combining the frame that enters and
  deducting the frame that leaves. In panes every invertible partial is a vector of exact sums
  (integers, or decimals of one scale: an abelian group under component-wise addition), so
  combine is ``+`` and deduct is ``-`` on each field, and a running sum is exact.
- The others (min, max, first, last, approximate distinct, and every sum, mean and variance of
  a ``double``) cannot deduct exactly. They slide exactly over hierarchical frames, as Chronon
  does: a window is the suffix of the tile its start falls in, the whole tiles in between, and
  the prefix of the tile its end falls in. Suffix and prefix are the two stacks of the
  two-stacks queue (Hirzel et al., "Sliding-window aggregation algorithms"), computed as
  running aggregates over the frames of one tile; the tiles in between are read as coarser
  partials. No window is ever refolded from its frames.

Why a double sum does not deduct: a running sum of +/- deltas in floating point cancels against
its whole history. After 1e15 has entered and left a window among values near 0.1, the window's
sum keeps an error of about ulp(1e15) = 0.125, a million times the values it holds, and a
window that empties keeps that residue instead of 0. Folding only the frames inside the window
bounds the error by the window's own magnitude (sum of |x| of its events) times its event count
times 2**-53. Kahan's compensated running sum shrinks the residue but does not remove it (the
compensation is itself a double); an exact representation of every double (a superaccumulator
of about 2100 bits) is no Spark type. Measured: ``tests/jobs/test_typed_fields.py`` drives both
past 1e15 and back.

Each class states its partial in Spark too: ``spark_accumulate`` folds a frame's events,
``spark_merge`` combines partials (a plain aggregate, so it serves ``groupBy`` and running
window frames alike) and ``spark_finish`` finishes. The property tests check the Spark side
against the Python side through the oracle.
"""

from __future__ import annotations

import bisect
import math
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Context, Decimal
from fractions import Fraction
from functools import reduce
from typing import TYPE_CHECKING, Any, ClassVar

from windowing_core.field_types import (
    ANY, DECIMAL, DOUBLE, EXACT, INTEGER, NUMERIC, STRING, declared_name, family, precision_and_scale,
)

if TYPE_CHECKING:
    from pyspark.sql import Column
    from pyspark.sql.window import WindowSpec

Partial = tuple

DEFAULT_FIELD = "value"
"""The events column an aggregation reads when its configuration names no field: the one
integer ``value`` of a configuration without declared ``fields``."""

_EXACT = Context(prec=120)
"""Decimal arithmetic wide enough that no sum or difference of partials rounds (Python's
default context keeps 28 digits)."""


def _over(aggregate: Column, window: WindowSpec | None) -> Column:
    return aggregate if window is None else aggregate.over(window)


HLL_LG_K = 12
"""Sketch size of ``approx_distinct``: 2**12 registers, relative standard error about 1.6%."""


@dataclass(frozen=True)
class PartialField:
    name: str
    spark_type: str  # Spark SQL DDL type of the stored field


class Aggregation(ABC):
    """An aggregation named ``name`` (its output column) over the event field ``field``.

    Subclasses say which field families they apply to (``applies_to``, described in errors
    by ``needs``) and which parameters they take (``parameters``: name to default), and set
    ``fields``, ``output_type`` and ``invertible`` (class attributes where they never vary,
    else in ``__init__`` from ``value_type`` and ``params``).
    """

    applies_to: ClassVar[frozenset[str]] = ANY
    needs: ClassVar[str] = "a"
    parameters: ClassVar[Mapping[str, Any]] = {}

    invertible: bool
    fields: tuple[PartialField, ...]
    output_type: str  # Spark SQL DDL type of the finished value

    def __init__(self, name: str, field: str = DEFAULT_FIELD, value_type: str = "bigint", **params: Any) -> None:
        self.name, self.field, self.value_type = name, field, value_type
        self.family = family(value_type)
        if self.family not in self.applies_to:
            raise ValueError(f"aggregations.{name}: {self.kind} needs {self.needs} field, "
                             f"{field} is {declared_name(value_type)}")
        unknown = sorted(set(params) - set(self.parameters))
        if unknown:
            known = ", ".join(sorted(self.parameters)) or "none"
            raise ValueError(f"aggregations.{name}.{unknown[0]}: {self.kind} takes no parameter "
                             f"{unknown[0]!r} (its parameters: {known})")
        self.params = {**self.parameters, **params}

    def parameter_error(self, param: str, problem: str) -> ValueError:
        """The one-line error for a bad parameter: ``aggregations.<name>.<param>: <problem>``."""
        return ValueError(f"aggregations.{self.name}.{param}: {problem}")

    def __repr__(self) -> str:
        params = "".join(f", {k}={v!r}" for k, v in sorted(self.params.items()))
        return f"{type(self).__name__}({self.name!r}, {self.field!r}, {self.value_type!r}{params})"

    def _identity(self) -> tuple:
        return (type(self), self.name, self.field, self.value_type, repr(sorted(self.params.items())))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Aggregation) and self._identity() == other._identity()

    def __hash__(self) -> int:
        return hash(self._identity())

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
    def accumulate(self, partial: Partial, value: Any, at: Any) -> Partial: ...

    @abstractmethod
    def combine(self, a: Partial, b: Partial) -> Partial: ...

    def deduct(self, a: Partial, b: Partial) -> Partial:
        raise TypeError(f"{type(self).__name__} over {self.value_type} is not invertible: it cannot deduct a frame")

    @abstractmethod
    def finish(self, partial: Partial) -> Any: ...

    @abstractmethod
    def spark_accumulate(self, value: Column, at: Column) -> list[Column]:
        """Aggregate expressions folding one frame's events into the partial's fields
        (``value`` is the field's column; null values leave the partial unchanged)."""

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

    @property
    def merges_in_passes(self) -> bool:
        """Whether a running merge takes ``spark_combine`` in passes: asked without building the
        expression, which is hundreds of Py4J calls for moments."""
        return False

    def spark_combine(self, a: list[Column], b: list[Column]) -> list[Column] | None:
        """``combine`` of two partials' columns in Spark (a null or zero-count partial is empty),
        for the partials whose ``spark_merge`` over a growing window frame folds the whole frame
        again at every row (``merges_in_passes``): a running merge of those takes log2 passes of
        this instead (``jobs.partial_merges.prefix_merged``). None where ``spark_merge`` is a
        window aggregate Spark evaluates incrementally (sums, min/max, sketch unions)."""
        return None

    def spark_elements(self, fields: list[Column]) -> Column | None:
        """For a partial that is one collection (a list or set): that array, so that a running
        merge can take its elements one row each (``spark_merge_elements``) rather than copy a
        growing buffer of whole partials at every row; None for other partials."""
        return None

    def spark_merge_elements(self, element: Column, over: WindowSpec) -> list[Column]:
        """The partial merged from one element per row, over a window frame (with
        ``spark_elements``)."""
        raise TypeError(f"{type(self).__name__} has no elements to merge")

    def spark_empty_value(self) -> Column:
        """``finish(empty())`` as a Spark literal of ``output_type``: what every key's window
        starts from (0, null, an empty list or map)."""
        from pyspark.sql import functions as F

        value = self.finish(self.empty())
        if isinstance(value, (list, dict)) and not value:
            return (F.array() if isinstance(value, list) else F.create_map()).cast(self.output_type)
        return F.lit(value).cast(self.output_type)


# -- exact arithmetic shared by the Python side -------------------------------------------------


def _add(x: Any, y: Any) -> Any:
    """``x + y`` without rounding, ``None`` being nothing: ints as ints, decimals in a context
    wide enough, doubles as exact fractions (the oracle's double sums are exact, then rounded
    once)."""
    if x is None or y is None:
        return y if x is None else x
    if isinstance(x, (float, Fraction)) or isinstance(y, (float, Fraction)):
        return Fraction(x) + Fraction(y)
    if isinstance(x, Decimal) or isinstance(y, Decimal):
        return _EXACT.add(Decimal(x), Decimal(y))
    return x + y


def _negate(x: Any) -> Any:
    return None if x is None else -x


def _unscaled(value: Any, scale: int) -> int:
    """A long, or a decimal of ``scale`` digits as the integer of its last digit's unit."""
    return int(value) if scale == 0 else int(Decimal(value).scaleb(scale))


def _spark_unscaled(value: Column, value_type: str) -> Column:
    """``_unscaled`` in Spark, as a bigint: a decimal(P,S) times 10**S is exact (P + S + 2 <= 38
    digits, as ``field_types.MAX_DECIMAL_PRECISION`` keeps P <= 18) and fits 64 bits."""
    from pyspark.sql import functions as F

    _, scale = precision_and_scale(value_type)
    return value.cast("bigint") if scale == 0 else (value * F.lit(10**scale)).cast("bigint")


def _sum_type(value_type: str) -> str:
    """The type of an exact sum: 38 digits at the values' scale (``SUM_TYPE`` for longs)."""
    return f"decimal(38,{precision_and_scale(value_type)[1]})"


def _ordered_sum(values: Column) -> Column:
    """The sum of a group's doubles added in ascending order: the same bits on every run, which
    Spark's ``sum`` (adding in whatever order rows arrive from a shuffle) does not promise.
    Nulls are skipped; an empty group sums to 0.0."""
    from pyspark.sql import functions as F

    return F.aggregate(F.array_sort(F.collect_list(values)), F.lit(0.0), lambda acc, x: acc + x)


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
        from pyspark.sql import functions as F

        return [F.coalesce(F.sum(c), F.lit(0)).cast(f.spark_type)
                for c, f in zip(self.spark_contributions(value), self.fields, strict=True)]

    def spark_merge(self, fields: list[Column], over: WindowSpec | None = None) -> list[Column]:
        from pyspark.sql import functions as F

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
        from pyspark.sql import functions as F

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
        from pyspark.sql import functions as F

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
        from pyspark.sql import functions as F

        if not self.invertible:
            return [_ordered_sum(value)]
        return [F.coalesce(F.sum(value.cast(self.output_type)), F.lit(0)).cast(self.output_type)]

    def spark_merge(self, fields: list[Column], over: WindowSpec | None = None) -> list[Column]:
        from pyspark.sql import functions as F

        if not self.invertible:
            return [_DoubleSums.merge(fields[0], over)]
        return [_over(F.sum(fields[0]), over).cast(self.output_type)]

    def spark_finish(self, fields: list[Column]) -> Column:
        from pyspark.sql import functions as F

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
        from pyspark.sql import functions as F

        n = F.count(value).cast("bigint")
        if not self.invertible:
            return [n, _ordered_sum(value)]
        return [n, F.coalesce(F.sum(value.cast(self.fields[1].spark_type)), F.lit(0)).cast(self.fields[1].spark_type)]

    def spark_merge(self, fields: list[Column], over: WindowSpec | None = None) -> list[Column]:
        from pyspark.sql import functions as F

        n = _over(F.sum(fields[0]), over).cast("bigint")
        if not self.invertible:
            return [n, _DoubleSums.merge(fields[1], over)]
        return [n, _over(F.sum(fields[1]), over).cast(self.fields[1].spark_type)]

    def spark_finish(self, fields: list[Column]) -> Column:
        from pyspark.sql import functions as F

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
    floor quotient and the remainder, ``0 <= remainder < divisor``.

    Spark's own decimal division rounds its quotient at whatever scale its precision rules
    leave (6 digits here), so its floor is only a guess, off by one where the quotient rounded
    up to the next integer; the exact remainder tells, and corrects it."""
    from pyspark.sql import functions as F

    whole = "decimal(38,0)"
    guess = F.floor(numerator / divisor).cast(whole)
    remainder = F.try_subtract(numerator, F.try_multiply(guess, divisor)).cast(whole)
    floor = (F.when(remainder < 0, guess - 1).when(remainder >= divisor, guess + 1).otherwise(guess)).cast(whole)
    return floor, F.try_subtract(numerator, F.try_multiply(floor, divisor)).cast(whole)


def _spark_decimal_mean(s: Column, n: Column, value_type: str) -> Column:
    """``_round_half_up(s * 10**S, n) / 10**S`` in exact decimal arithmetic: Spark's division
    would round once at its own scale and again at S (``_spark_floor_div``)."""
    from pyspark.sql import functions as F

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
        from pyspark.sql import functions as F

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
        from pyspark.sql import functions as F

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
        from pyspark.sql import functions as F

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
    from pyspark.sql import functions as F

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
    from pyspark.sql import functions as F

    merged = merge(dict(zip(names, a, strict=True)), dict(zip(names, b, strict=True)))
    a_empty, b_empty = F.coalesce(a[0], F.lit(0)) == 0, F.coalesce(b[0], F.lit(0)) == 0
    return [F.when(a_empty, y).when(b_empty, x).otherwise(merged[name]) for name, x, y in zip(names, a, b, strict=True)]


def _folded(merge: Any, names: tuple[str, ...], states: Column, over: WindowSpec | None) -> list[Column]:
    """The non-null ``states`` (structs of ``names``, counting ``n`` > 0 values) folded left to
    right by ``merge``: over a window frame in its order, in ``groupBy`` in ascending order of
    the states, so that every run folds them alike. Over a growing frame this refolds the
    frame at every row (quadratic); running merges use ``spark_combine`` instead."""
    from pyspark.sql import functions as F

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


# -- not invertible: exact over hierarchical frames ----------------------------------------------


class Extreme(Aggregation):
    """Min or max: a partial of one field of the value's own type, empty as None; not
    invertible (a max cannot leave). Strings compare by code point, booleans false < true."""

    invertible = False
    pick: ClassVar[Any]

    def __init__(self, name: str, field: str = DEFAULT_FIELD, value_type: str = "bigint", **params: Any) -> None:
        super().__init__(name, field, value_type, **params)
        self.fields = (PartialField("m", value_type),)
        self.output_type = value_type

    def empty(self) -> Partial:
        return (None,)

    def accumulate(self, partial: Partial, value: Any, at: Any = None) -> Partial:
        return partial if value is None else self.combine(partial, (value,))

    def combine(self, a: Partial, b: Partial) -> Partial:
        present = [x[0] for x in (a, b) if x[0] is not None]
        return (type(self).pick(present) if present else None,)

    def finish(self, partial: Partial) -> Any:
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
    """First or last non-null value by event time; ties between equal times go to the smaller
    (first) or larger (last) value, so the result never depends on how Spark ordered the rows."""

    invertible = False
    latest: ClassVar[bool]

    def __init__(self, name: str, field: str = DEFAULT_FIELD, value_type: str = "bigint", **params: Any) -> None:
        super().__init__(name, field, value_type, **params)
        self.fields = (PartialField("at", "timestamp"), PartialField("v", value_type))
        self.output_type = value_type

    def empty(self) -> Partial:
        return (None, None)

    def accumulate(self, partial: Partial, value: Any, at: Any) -> Partial:
        return partial if value is None else self.combine(partial, (at, value))

    def combine(self, a: Partial, b: Partial) -> Partial:
        present = [x for x in (a, b) if x[0] is not None]
        if not present:
            return (None, None)
        return (max if self.latest else min)(present)

    def finish(self, partial: Partial) -> Any:
        return partial[1]

    def spark_accumulate(self, value: Column, at: Column) -> list[Column]:
        from pyspark.sql import functions as F

        return self.spark_merge([F.when(value.isNotNull(), at), value])

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
    """Approximate count of distinct non-null values: a mergeable HyperLogLog sketch (Apache
    DataSketches, built into Spark), relative standard error about 1.6% with 2**12 registers
    and exact for small counts. Sketches merge but cannot deduct. Spark sketches longs and
    strings as they are, other types by their text (``cast`` to string: one text per value of
    a double, a decimal of fixed scale, a boolean). The Python side keeps the exact set: it is
    the oracle the sketch is measured against."""

    invertible = False
    fields = (PartialField("sketch", "binary"),)
    output_type = "bigint"
    relative_error = 1.04 / math.sqrt(2**HLL_LG_K)

    def empty(self) -> Partial:
        return (frozenset(),)

    def accumulate(self, partial: Partial, value: Any, at: Any = None) -> Partial:
        return partial if value is None else (partial[0] | {value},)

    def combine(self, a: Partial, b: Partial) -> Partial:
        return (a[0] | b[0],)

    def finish(self, partial: Partial) -> int:
        return len(partial[0])

    def spark_accumulate(self, value: Column, at: Column) -> list[Column]:
        from pyspark.sql import functions as F

        sketched = value if self.family in (INTEGER, STRING) else value.cast("string")
        return [F.hll_sketch_agg(sketched, HLL_LG_K)]

    def spark_merge(self, fields: list[Column], over: WindowSpec | None = None) -> list[Column]:
        from pyspark.sql import functions as F

        return [_over(F.hll_union_agg(fields[0]), over)]

    def spark_finish(self, fields: list[Column]) -> Column:
        from pyspark.sql import functions as F

        return F.coalesce(F.hll_sketch_estimate(fields[0]), F.lit(0).cast("bigint"))


# -- Chronon's list: moments, quantiles, k-lists, distinct values, histograms ------------------


def _whole(agg: Aggregation, param: str, low: int, high: int) -> int:
    value = agg.params[param]
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise agg.parameter_error(param, f"a whole number from {low} to {high}, got {value!r}")
    return value


class Moments(Aggregation):
    """Skewness or excess kurtosis as Spark's ``skewness`` and ``kurtosis`` define them: with
    ``M_k`` the sum of the k-th powers of the deviations from the mean, ``sqrt(n) M3 / M2**1.5``
    and ``n M4 / M2**2 - 3`` (population moments), null where the window holds no value or every
    value is the same (``M2 = 0``), as Spark's are.

    ``long`` and ``decimal(P,S)`` (invertible): exact integer power sums (n, s1 .. s4) of the
    unscaled values (both moments are scale-free), as ``Variance``'s: no floating error carried
    from frame to frame, and no cancellation, since the central moments are recovered exactly,
    ``A2 = n s2 - s1**2 = n M2``, ``A3 = n**2 M3``, ``A4 = n**3 M4``: skewness is
    ``A3 / A2**1.5`` and kurtosis ``A4 / A2**2 - 3``, rounded once, the same bits in Spark and
    Python. The sums are decimal(38,0): exact while ``sum(u**4) < 10**38`` (a million values up to
    10**8). A value whose fourth power alone leaves 38 digits is counted apart (``wide``), and a
    window holding one, or whose sums leave 38 digits, is null: never a wrong moment, never a
    failed day; it is exact again once they leave.

    ``double`` (not invertible): the partial is (n, mean, M2, M3, M4), merged by Pebay's pairwise
    update ("Formulas for robust, one-pass parallel computation of covariances and arbitrary-order
    statistical moments", 2008; Chronon's MomentAggregator), folded in a fixed order in Spark as
    ``Variance``'s Chan update is; the Python side does the same arithmetic in exact fractions.
    """

    applies_to = NUMERIC
    needs = "a numeric"
    order: ClassVar[int]  # 3: skewness, 4: kurtosis

    def __init__(self, name: str, field: str = DEFAULT_FIELD, value_type: str = "bigint", **params: Any) -> None:
        super().__init__(name, field, value_type, **params)
        self.invertible = self.family in EXACT
        self.scale = precision_and_scale(value_type)[1]
        self.output_type = "double"
        if self.invertible:
            self.fields = (PartialField("n", "bigint"),
                           *[PartialField(f, SUM_TYPE) for f in ("s", "ss", "s3", "s4")], PartialField("wide", "bigint"))
        else:
            self.fields = (PartialField("n", "bigint"),
                           *[PartialField(f, "double") for f in ("mean", "m2", "m3", "m4")])

    # -- Python --

    def empty(self) -> Partial:
        return (0,) * len(self.fields)

    def accumulate(self, partial: Partial, value: Any, at: Any = None) -> Partial:
        if value is None:
            return partial
        if not self.invertible:
            return self.combine(partial, (1, Fraction(value), 0, 0, 0))
        u = _unscaled(value, self.scale)
        if u ** 4 > _DECIMAL_38:  # too wide for the sums: counted, and its windows are null
            return self.combine(partial, (0, 0, 0, 0, 0, 1))
        return self.combine(partial, (1, u, u ** 2, u ** 3, u ** 4, 0))

    def combine(self, a: Partial, b: Partial) -> Partial:
        if self.invertible:
            return tuple(_add(x, y) for x, y in zip(a, b, strict=True))
        (na, ma, a2, a3, a4), (nb, mb, b2, b3, b4) = (
            (int(p[0] or 0), *(Fraction(x or 0) for x in p[1:])) for p in (a, b))
        if not nb:
            return (na, ma, a2, a3, a4)
        if not na:
            return (nb, mb, b2, b3, b4)
        n, d = na + nb, mb - ma
        return (n, ma + d * nb / n, a2 + b2 + d * d * na * nb / n,
                a3 + b3 + d ** 3 * na * nb * (na - nb) / n ** 2 + 3 * d * (na * b2 - nb * a2) / n,
                a4 + b4 + d ** 4 * na * nb * (na * na - na * nb + nb * nb) / n ** 3
                + 6 * d * d * (na * na * b2 + nb * nb * a2) / n ** 2 + 4 * d * (na * b3 - nb * a3) / n)

    def deduct(self, a: Partial, b: Partial) -> Partial:
        if not self.invertible:
            return super().deduct(a, b)
        return tuple(_add(x, _negate(y)) for x, y in zip(a, b, strict=True))

    def finish(self, partial: Partial) -> float | None:
        n = int(partial[0] or 0)
        if not self.invertible:
            m2, m3, m4 = (Fraction(x or 0) for x in partial[2:])
            if n == 0 or m2 == 0:
                return None
            if self.order == 3:
                return math.sqrt(n) * float(m3) / (float(m2) * math.sqrt(float(m2)))
            return float(n * m4 / (m2 * m2)) - 3.0
        s1, s2, s3, s4, wide = (int(x) for x in partial[1:])
        a2 = n * s2 - s1 * s1
        if n == 0 or a2 == 0 or wide or any(abs(x) > _DECIMAL_38 for x in (s1, s2, s3, s4)):
            return None
        if self.order == 3:
            return float(n * n * s3 - 3 * n * s1 * s2 + 2 * s1 ** 3) / (float(a2) * math.sqrt(float(a2)))
        a4 = n ** 3 * s4 - 4 * n * n * s1 * s3 + 6 * n * s1 * s1 * s2 - 3 * s1 ** 4
        return float(a4) / (float(a2) * float(a2)) - 3.0

    # -- Spark --

    def spark_accumulate(self, value: Column, at: Column) -> list[Column]:
        from pyspark.sql import functions as F

        if not self.invertible:
            one = F.when(value.isNotNull(), F.struct(F.lit(1).cast("bigint").alias("n"), value.cast("double").alias("mean"),
                                                       *[F.lit(0.0).alias(m) for m in ("m2", "m3", "m4")]))
            return _pebay_merge(one, None)
        u = _spark_unscaled(value, self.value_type).cast(SUM_TYPE)
        u4 = F.try_multiply(F.try_multiply(u * u, u), u)
        fits = u4.isNotNull()
        parts = [F.when(fits, F.lit(1)), *[F.when(fits, p) for p in (u, u * u, F.try_multiply(u * u, u), u4)],
                 F.when(value.isNotNull() & ~fits, F.lit(1))]
        return self.spark_merge([F.coalesce(p, F.lit(0)) for p in parts])

    def spark_merge(self, fields: list[Column], over: WindowSpec | None = None) -> list[Column]:
        from pyspark.sql import functions as F

        if not self.invertible:
            n, mean, m2, m3, m4 = fields
            return _pebay_merge(F.when(n > 0, F.struct(n.cast("bigint").alias("n"), mean.alias("mean"), m2.alias("m2"),
                                                       m3.alias("m3"), m4.alias("m4"))), over)
        # try_sum: null exactly where the window's sum leaves 38 digits (Spark's decimal sum
        # keeps a wider buffer, so a running sum past the limit and back is exact again)
        return [_over(F.sum(c) if f.spark_type == "bigint" else F.try_sum(c), over).cast(f.spark_type)
                for c, f in zip(fields, self.fields, strict=True)]

    @property
    def merges_in_passes(self) -> bool:
        return not self.invertible

    def spark_combine(self, a: list[Column], b: list[Column]) -> list[Column] | None:
        return None if self.invertible else _combined(_pebay, _PEBAY, a, b)

    def spark_finish(self, fields: list[Column]) -> Column:
        """As ``finish``. Exact types: the same integers and the same rounding, so equal windows
        give equal bits. The power sums are first shifted by ``c = floor(s1 / n)``, exactly
        (``t_k = sum((u - c)**k)`` by the binomial expansion; no term exceeds ``6 s4``), so the
        ``A``s, which do not depend on the shift, come from small numbers: exact in decimal(38,0)
        where they fit (``try_`` arithmetic, null on overflow), else rounded from the shifted
        sums in double, where nothing large cancels."""
        from pyspark.sql import functions as F

        if not self.invertible:
            n, _, m2, m3, m4 = fields
            count = n.cast("double")
            moment = (F.sqrt(count) * m3 / (m2 * F.sqrt(m2)) if self.order == 3
                      else count * m4 / (m2 * m2) - F.lit(3.0))
            return F.when((n > 0) & (m2 != 0), moment)
        n, s1, s2, s3, s4 = (f.cast(SUM_TYPE) for f in fields[:5])
        c = F.floor(F.try_divide(s1, n)).cast(SUM_TYPE)  # null where n = 0: the moment is null

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
        complete = (fields[5] == 0) & s1.isNotNull() & s2.isNotNull() & s3.isNotNull() & s4.isNotNull()
        return F.when((fields[0] > 0) & complete & (a2 != 0), moment)


_DECIMAL_38 = 10**38 - 1
"""The largest decimal(38,0)."""


def _pebay(a: Mapping[str, Column], b: Mapping[str, Column]) -> dict[str, Column]:
    """Pebay's pairwise update of (n, mean, M2, M3, M4): ``a`` then ``b``, both non-empty."""
    from pyspark.sql import functions as F

    na, nb = a["n"].cast("double"), b["n"].cast("double")
    n = na + nb
    d = b["mean"] - a["mean"]
    m2 = a["m2"] + b["m2"] + d * d * na * nb / n
    m3 = (a["m3"] + b["m3"] + d * d * d * na * nb * (na - nb) / (n * n)
          + F.lit(3.0) * d * (na * b["m2"] - nb * a["m2"]) / n)
    m4 = (a["m4"] + b["m4"] + d * d * d * d * na * nb * (na * na - na * nb + nb * nb) / (n * n * n)
          + F.lit(6.0) * d * d * (na * na * b["m2"] + nb * nb * a["m2"]) / (n * n)
          + F.lit(4.0) * d * (na * b["m3"] - nb * a["m3"]) / n)
    return {"n": a["n"] + b["n"], "mean": a["mean"] + d * nb / n, "m2": m2, "m3": m3, "m4": m4}


_PEBAY = ("n", "mean", "m2", "m3", "m4")


def _pebay_merge(states: Column, over: WindowSpec | None) -> list[Column]:
    """(n, mean, M2, M3, M4) of the non-null ``states`` merged by Pebay's update (``_folded``)."""
    return _folded(_pebay, _PEBAY, states, over)


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
    below (DataSketches' inclusive rule), r read as the decimal written. A long field keeps
    longs (``kll_sketch_agg_bigint``); doubles and decimals are sketched as doubles. Sketches
    merge but cannot deduct. The Python side keeps the exact sorted values: the oracle the
    sketch is held to. Beyond k values KLL compacts at random, so a re-run may answer another
    value within the same rank error."""

    applies_to = NUMERIC
    needs = "a numeric"
    parameters = {"percentiles": (0.5, 0.95, 0.99)}
    invertible = False
    fields = (PartialField("kll", "binary"),)

    def __init__(self, name: str, field: str = DEFAULT_FIELD, value_type: str = "bigint", **params: Any) -> None:
        super().__init__(name, field, value_type, **params)
        percentiles = self.params["percentiles"]
        if not isinstance(percentiles, (list, tuple)) or not percentiles:
            raise self.parameter_error("percentiles", f"a non-empty list of fractions from 0 to 1, got {percentiles!r}")
        for p in percentiles:
            if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 <= p <= 1:
                raise self.parameter_error("percentiles", f"each a fraction from 0 to 1, got {p!r}")
        if any(a >= b for a, b in zip(percentiles, percentiles[1:])):
            raise self.parameter_error("percentiles", f"list them in increasing order, each once, got {list(percentiles)}")
        self.percentiles = tuple(float(p) for p in percentiles)
        self.params["percentiles"] = list(self.percentiles)
        self.longs = self.family == INTEGER
        self.output_type = "array<bigint>" if self.longs else "array<double>"

    def empty(self) -> Partial:
        return ((),)

    def accumulate(self, partial: Partial, value: Any, at: Any = None) -> Partial:
        if value is None:
            return partial
        values = list(partial[0])
        bisect.insort(values, int(value) if self.longs else float(value))
        return (tuple(values),)

    def combine(self, a: Partial, b: Partial) -> Partial:
        return (tuple(sorted(a[0] + b[0])),)

    def finish(self, partial: Partial) -> list | None:
        values = partial[0]
        if not values:
            return None
        return [values[max(math.ceil(Fraction(str(p)) * len(values)), 1) - 1] for p in self.percentiles]

    def _kll(self, name: str):
        from pyspark.sql import functions as F

        return getattr(F, f"{name}_{'bigint' if self.longs else 'double'}")

    def spark_accumulate(self, value: Column, at: Column) -> list[Column]:
        return [self._kll("kll_sketch_agg")(value if self.longs else value.cast("double"), KLL_K)]

    def spark_merge(self, fields: list[Column], over: WindowSpec | None = None) -> list[Column]:
        return [_over(self._kll("kll_merge_agg")(fields[0]), over)]

    def spark_finish(self, fields: list[Column]) -> Column:
        from pyspark.sql import functions as F

        ranks = F.array(*[F.lit(p) for p in self.percentiles])
        return F.when(self._kll("kll_sketch_get_n")(fields[0]) > 0,
                      self._kll("kll_sketch_get_quantile")(fields[0], ranks))


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
    row order never decides. Strings order by code point, booleans false before true.
    """

    invertible = False
    parameters = {"k": 5}
    timed: ClassVar[bool]  # first_k / last_k: by (event time, value); top_k / bottom_k: by value
    descending: ClassVar[bool]

    def __init__(self, name: str, field: str = DEFAULT_FIELD, value_type: str = "bigint", **params: Any) -> None:
        super().__init__(name, field, value_type, **params)
        self.k = _whole(self, "k", 1, MAX_K)
        element = f"struct<at:timestamp,v:{value_type}>" if self.timed else value_type
        self.fields = (PartialField("list", f"array<{element}>"),)
        self.output_type = f"array<{value_type}>"

    def empty(self) -> Partial:
        return ((),)

    def accumulate(self, partial: Partial, value: Any, at: Any) -> Partial:
        if value is None:
            return partial
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

    def spark_accumulate(self, value: Column, at: Column) -> list[Column]:
        from pyspark.sql import functions as F

        item = self._item(value, at)
        best = (F.max_by if self.descending else F.min_by)(item, item, self.k)  # sorted, at most k
        return [F.coalesce(best, F.array().cast(self.fields[0].spark_type))]

    def spark_merge(self, fields: list[Column], over: WindowSpec | None = None) -> list[Column]:
        from pyspark.sql import functions as F

        merged = F.flatten(_over(F.collect_list(fields[0]), over))
        return [F.slice(F.sort_array(merged, asc=not self.descending), 1, self.k)]

    def spark_elements(self, fields: list[Column]) -> Column:
        return fields[0]

    def spark_merge_elements(self, element: Column, over: WindowSpec) -> list[Column]:
        from pyspark.sql import functions as F

        best = (F.max_by if self.descending else F.min_by)(element, element, self.k).over(over)
        return [F.coalesce(best, F.array().cast(self.fields[0].spark_type))]

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
    """Exact count of distinct non-null values (Chronon's UniqueCount): the partial is the set
    of values, kept sorted in Spark so that equal sets are equal arrays. Sets merge but cannot
    deduct (a value leaving may still be in the window), so they slide over tiles;
    ``approx_distinct`` is the bounded-size alternative."""

    invertible = False
    output_type = "bigint"

    def __init__(self, name: str, field: str = DEFAULT_FIELD, value_type: str = "bigint", **params: Any) -> None:
        super().__init__(name, field, value_type, **params)
        self.fields = (PartialField("values", f"array<{value_type}>"),)

    def empty(self) -> Partial:
        return (frozenset(),)

    def accumulate(self, partial: Partial, value: Any, at: Any = None) -> Partial:
        return partial if value is None else (partial[0] | {value},)

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

    def spark_elements(self, fields: list[Column]) -> Column:
        return fields[0]

    def spark_merge_elements(self, element: Column, over: WindowSpec) -> list[Column]:
        from pyspark.sql import functions as F

        return [F.array_sort(F.collect_set(element).over(over))]

    def spark_finish(self, fields: list[Column]) -> Column:
        from pyspark.sql import functions as F

        return F.coalesce(F.size(fields[0]), F.lit(0)).cast("bigint")


class Histogram(Aggregation):
    """How often each value of an integer or string field occurs: a map from value to count
    (Chronon's Histogram), without values that no longer occur; empty for a window without
    values. Invertible: counts add, and a leaving frame's counts are deducted. The map's entries
    are stored in value order, so an equal histogram is an equal map, byte for byte."""

    applies_to = frozenset({INTEGER, STRING})
    needs = "an integer or string"
    invertible = True

    def __init__(self, name: str, field: str = DEFAULT_FIELD, value_type: str = "bigint", **params: Any) -> None:
        super().__init__(name, field, value_type, **params)
        self.output_type = f"map<{value_type},bigint>"
        self.fields = (PartialField("counts", self.output_type),)

    def empty(self) -> Partial:
        return ({},)

    def accumulate(self, partial: Partial, value: Any, at: Any = None) -> Partial:
        return partial if value is None else self.combine(partial, ({value: 1},))

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

        return F.create_map().cast(self.output_type)

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

        ones = F.transform(F.collect_list(value), lambda x: F.create_map(x, F.lit(1).cast("bigint")))
        return [self._sum(ones)]

    def spark_merge(self, fields: list[Column], over: WindowSpec | None = None) -> list[Column]:
        """Counts added map by map. Over the running sum's window frame this folds every map of
        the key's deltas before the row, at every row: quadratic in a key's entering and leaving
        frames within one run (never in the window's length), which a key seen every minute
        pays (``bench.aggregation_cost``, configuration ``collections``). The linear method is
        known and not built: running counts per (key, value), each exploded over the indices of
        the key's ends it holds (``sequence`` from its end to the next change of that value), and
        grouped back into one map per end, so the work is the size of the maps written."""
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


def aggregation(kind: str, name: str | None = None, field: str = DEFAULT_FIELD, value_type: str = "bigint",
                **params: Any) -> Aggregation:
    """The factory: an aggregation kind (``count``, ``sum``, ...) under an output name, over the
    event field ``field`` of Spark type ``value_type``, with the kind's parameters."""
    try:
        cls = AGGREGATIONS[kind]
    except (KeyError, TypeError):
        known = ", ".join(sorted(AGGREGATIONS))
        raise ValueError(f"aggregations.{name or kind}: unknown aggregation {kind!r}; known: {known}") from None
    return cls(name or kind, field, value_type, **params)


DEFAULT_AGGREGATIONS: tuple[Aggregation, ...] = (aggregation("count"), aggregation("sum"))
