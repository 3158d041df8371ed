"""Chronon's aggregations: moments, quantiles, k-lists, distinct values and histograms."""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping
from fractions import Fraction
from functools import reduce
from typing import TYPE_CHECKING, Any, ClassVar

from pyspark.sql import functions as F

from windowing_core.aggregations.base import (
    DEFAULT_FIELD,
    Aggregation,
    Partial,
    PartialField,
    _add,
    _negate,
    _over,
    _spark_unscaled,
    _unscaled,
)
from windowing_core.aggregations.sums import SUM_TYPE, _combined, _folded
from windowing_core.field_types import (
    EXACT,
    INTEGER,
    NUMERIC,
    STRING,
    precision_and_scale,
)

if TYPE_CHECKING:
    from pyspark.sql import Column
    from pyspark.sql.window import WindowSpec



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
        return getattr(F, f"{name}_{'bigint' if self.longs else 'double'}")

    def spark_accumulate(self, value: Column, at: Column) -> list[Column]:
        return [self._kll("kll_sketch_agg")(value if self.longs else value.cast("double"), KLL_K)]

    def spark_merge(self, fields: list[Column], over: WindowSpec | None = None) -> list[Column]:
        return [_over(self._kll("kll_merge_agg")(fields[0]), over)]

    def spark_finish(self, fields: list[Column]) -> Column:
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
        # a null value is no item: a struct holding one would still sort and be kept
        return F.when(value.isNotNull(), F.struct(at.alias("at"), value.alias("v"))) if self.timed else value

    def spark_accumulate(self, value: Column, at: Column) -> list[Column]:
        item = self._item(value, at)
        best = (F.max_by if self.descending else F.min_by)(item, item, self.k)  # sorted, at most k
        return [F.coalesce(best, F.array().cast(self.fields[0].spark_type))]

    def spark_merge(self, fields: list[Column], over: WindowSpec | None = None) -> list[Column]:
        merged = F.flatten(_over(F.collect_list(fields[0]), over))
        return [F.slice(F.sort_array(merged, asc=not self.descending), 1, self.k)]

    def spark_elements(self, fields: list[Column]) -> Column:
        return fields[0]

    def spark_merge_elements(self, element: Column, over: WindowSpec) -> list[Column]:
        best = (F.max_by if self.descending else F.min_by)(element, element, self.k).over(over)
        return [F.coalesce(best, F.array().cast(self.fields[0].spark_type))]

    def spark_finish(self, fields: list[Column]) -> Column:
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
        return [F.array_sort(F.collect_set(value))]

    def spark_merge(self, fields: list[Column], over: WindowSpec | None = None) -> list[Column]:
        return [F.array_sort(F.array_distinct(F.flatten(_over(F.collect_list(fields[0]), over))))]

    def spark_elements(self, fields: list[Column]) -> Column:
        return fields[0]

    def spark_merge_elements(self, element: Column, over: WindowSpec) -> list[Column]:
        return [F.array_sort(F.collect_set(element).over(over))]

    def spark_finish(self, fields: list[Column]) -> Column:
        return F.coalesce(F.size(fields[0]), F.lit(0)).cast("bigint")


class Histogram(Aggregation):
    """How often each value of an integer or string field occurs: a map from value to count
    (Chronon's Histogram), without values that no longer occur; empty for a window without
    values. Invertible: counts add, and a leaving frame's counts are deducted. The map's entries
    are stored in value order, so an equal histogram is an equal map, byte for byte."""

    applies_to = frozenset({INTEGER, STRING})
    needs = "an integer or string"
    invertible = True
    counts_by_entry = True

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
        return F.create_map().cast(self.output_type)

    def _canonical(self, counts: Column) -> Column:
        """Without zero counts, entries in value order."""
        kept = F.map_filter(counts, lambda _, n: n != 0)
        return F.map_from_entries(F.array_sort(F.map_entries(kept)))

    def _sum(self, maps: Column) -> Column:
        def add(acc: Column, m: Column) -> Column:
            return F.map_zip_with(acc, m, lambda _, x, y: F.coalesce(x, F.lit(0)) + F.coalesce(y, F.lit(0)))

        return self._canonical(F.aggregate(maps, self._empty_map(), add))

    def spark_accumulate(self, value: Column, at: Column) -> list[Column]:
        ones = F.transform(F.collect_list(value), lambda x: F.create_map(x, F.lit(1).cast("bigint")))
        return [self._sum(ones)]

    def spark_merge(self, fields: list[Column], over: WindowSpec | None = None) -> list[Column]:
        """Counts added map by map. Over a growing window frame this folds every map before the
        row at every row, quadratic in the frame: the running sum of a key's deltas adds
        histograms entry by entry instead (``counts_by_entry``)."""
        return [self._sum(_over(F.collect_list(fields[0]), over))]

    def spark_finish(self, fields: list[Column]) -> Column:
        return F.coalesce(fields[0], self._empty_map())

    def spark_negate(self, fields: list[Column]) -> list[Column]:
        return [F.transform_values(fields[0], lambda _, n: -n)]

    def spark_deduct(self, a: list[Column], b: list[Column]) -> list[Column]:
        return [self._sum(F.array(a[0], F.transform_values(b[0], lambda _, n: -n)))]

    def spark_comparable(self, value: Column) -> Column:
        return F.array_sort(F.map_entries(value))


