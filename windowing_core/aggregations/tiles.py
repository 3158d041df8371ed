"""Aggregations that cannot deduct (min, max, first, last, approximate distinct): exact over
hierarchical frames, as Chronon slides them."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, ClassVar

from pyspark.sql import functions as F

from windowing_core.aggregations.base import (
    DEFAULT_FIELD,
    HLL_LG_K,
    Aggregation,
    Partial,
    PartialField,
    _over,
)
from windowing_core.field_types import (
    INTEGER,
    STRING,
)

if TYPE_CHECKING:
    from pyspark.sql import Column
    from pyspark.sql.window import WindowSpec



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
        return self.spark_merge([F.when(value.isNotNull(), at), value])

    def spark_merge(self, fields: list[Column], over: WindowSpec | None = None) -> list[Column]:
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
        sketched = value if self.family in (INTEGER, STRING) else value.cast("string")
        return [F.hll_sketch_agg(sketched, HLL_LG_K)]

    def spark_merge(self, fields: list[Column], over: WindowSpec | None = None) -> list[Column]:
        return [_over(F.hll_union_agg(fields[0]), over)]

    def spark_finish(self, fields: list[Column]) -> Column:
        return F.coalesce(F.hll_sketch_estimate(fields[0]), F.lit(0).cast("bigint"))


