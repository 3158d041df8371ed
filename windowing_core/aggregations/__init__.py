"""The aggregation algebra: one small class per aggregation, one factory, one place.

The interface and shared arithmetic are in ``base``; the kinds by how they slide in ``sums``
(invertible), ``tiles`` (not invertible) and ``chronon`` (Chronon's list); the registry and the
factory here.

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

A configuration may also define its own (``custom``): named partials, each a built-in ``sum``,
``count``, ``min`` or ``max`` over a Spark SQL row expression, and a value over them; built by
``windowing_core.config`` from its fields, not by the factory.

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

from typing import Any

from windowing_core.aggregations.base import (
    DEFAULT_FIELD,
    HLL_LG_K,
    KINDS,
    Aggregation,
    Partial,
    PartialField,
)
from windowing_core.aggregations.chronon import (
    KLL_K,
    KLL_RANK_ERROR,
    MAX_K,
    ApproxPercentile,
    BottomK,
    FirstK,
    Histogram,
    KList,
    Kurtosis,
    LastK,
    Moments,
    Skew,
    TopK,
    UniqueCount,
)
from windowing_core.aggregations.custom import Custom
from windowing_core.aggregations.sums import (
    SUM_TYPE,
    Additive,
    Count,
    Mean,
    StddevPop,
    StddevSample,
    Sum,
    Variance,
    VariancePop,
    VarianceSample,
)
from windowing_core.aggregations.tiles import ApproxDistinct, Extreme, First, Last, Max, Min, Ordered

__all__ = [
    "AGGREGATIONS", "DEFAULT_AGGREGATIONS", "DEFAULT_FIELD", "HLL_LG_K", "KLL_K", "KLL_RANK_ERROR", "MAX_K",
    "SUM_TYPE", "Additive", "Aggregation", "ApproxDistinct", "ApproxPercentile", "BottomK", "Count", "Custom",
    "Extreme", "First", "FirstK", "Histogram", "KList", "Kurtosis", "Last", "LastK", "Max", "Mean", "Min",
    "Moments", "Ordered", "Partial", "PartialField", "Skew", "StddevPop", "StddevSample", "Sum", "TopK",
    "UniqueCount", "Variance", "VariancePop", "VarianceSample", "aggregation",
]

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

KINDS.update({cls: kind for kind, cls in AGGREGATIONS.items()})
KINDS[Custom] = "custom"  # built from its configuration by ``windowing_core.config``, not the factory


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
