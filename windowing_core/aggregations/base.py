"""The aggregation interface and the exact arithmetic the kinds share (``windowing_core.aggregations``)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Context, Decimal
from fractions import Fraction
from typing import TYPE_CHECKING, Any, ClassVar

from pyspark.sql import functions as F

from windowing_core.field_types import (
    ANY,
    declared_name,
    family,
    precision_and_scale,
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


KINDS: dict[type, str] = {}
"""Each registered class's kind, filled by the registry (``windowing_core.aggregations``)."""


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
    # A partial that is one map of counts (a histogram): the running sum adds it entry by entry
    # (``jobs.windows.partial_merges.running_counts``), not map by map.
    counts_by_entry: ClassVar[bool] = False
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
        return KINDS[type(self)]

    @property
    def reads(self) -> tuple[str, ...]:
        """The events' fields this aggregation reads."""
        return (self.field,)

    @property
    def read_types(self) -> dict[str, str]:
        """Each field read, with the type it was built for."""
        return {self.field: self.value_type}

    @property
    def row_expressions(self) -> tuple[tuple[str, str, str], ...]:
        """``(name, Spark SQL, type)`` of the per-event inputs Spark computes for it (a custom
        aggregation's partials' expressions); none for a kind that reads its field as it is."""
        return ()

    def event_value(self, field: Callable[[str], Any]) -> Any:
        """What ``accumulate`` takes of one event, given a lookup of its fields by name."""
        return field(self.field)

    def spark_value(self) -> Column:
        """What ``spark_accumulate`` takes of the events: the field's column."""
        return F.col(self.field)

    @property
    def description(self) -> str:
        """What the finished value is, for catalogs and the Dagster UI."""
        return f"the {self.kind} of the window's events' {self.field}"

    def partial_notes(self) -> dict[str, str]:
        """What a partial field holds, where the kind's own names do not say
        (``jobs.tables.column_notes`` knows the built-in ones)."""
        return {}

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

    def spark_merged(self, over: WindowSpec | None = None, prefix: str = "") -> list[Column]:
        """``spark_merge`` of this aggregation's partial columns, each named ``prefix`` + its column."""
        columns = self.field_columns()
        return [c.alias(prefix + n) for c, n in zip(self.spark_merge([F.col(c) for c in columns], over), columns,
                                                    strict=True)]

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
        this instead (``jobs.windows.partial_merges.prefix_merged``). None where ``spark_merge`` is a
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
    _, scale = precision_and_scale(value_type)
    return value.cast("bigint") if scale == 0 else (value * F.lit(10**scale)).cast("bigint")


def _sum_type(value_type: str) -> str:
    """The type of an exact sum: 38 digits at the values' scale (``SUM_TYPE`` for longs)."""
    return f"decimal(38,{precision_and_scale(value_type)[1]})"


def _ordered_sum(values: Column) -> Column:
    """The sum of a group's doubles added in ascending order: the same bits on every run, which
    Spark's ``sum`` (adding in whatever order rows arrive from a shuffle) does not promise.
    Nulls are skipped; an empty group sums to 0.0."""
    return F.aggregate(F.array_sort(F.collect_list(values)), F.lit(0.0), lambda acc, x: acc + x)


