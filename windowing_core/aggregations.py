"""The aggregation algebra: one small class per aggregation, one factory, one place.

Every aggregation turns the events of a frame into a fixed-size *partial* and defines

- ``accumulate(partial, value)``: fold one event's value in (Chronon's ``update``);
- ``combine(a, b)``: merge two partials (``merge``);
- ``deduct(a, b)``: take ``b`` back out of ``a`` (``delete``), only when ``invertible``;
- ``finish(partial)``: the value a user sees (``finalize``).

The jobs never branch on an aggregation's name. They read ``invertible`` to choose the sliding
method: an invertible aggregation rolls a window forward by combining the frame that enters and
deducting the frame that leaves. In panes every invertible partial is a vector of sums (an
abelian group under component-wise addition), so combine is ``+`` and deduct is ``-`` on each
field, in Python and in Spark alike, and a running sum over the fields is exact for integers.

Each class also states its partial in Spark: ``spark_contributions`` is what one event adds
to each field and ``spark_finish`` the finish expression. Python and Spark sides are checked
against each other by the property tests.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from pyspark.sql import Column

Partial = tuple


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

    def field_columns(self) -> list[str]:
        """Column names of this aggregation's partial in ``minute_partials`` and snapshots."""
        return [f"{self.name}__{f.name}" for f in self.fields]

    @abstractmethod
    def empty(self) -> Partial: ...

    @abstractmethod
    def accumulate(self, partial: Partial, value: int) -> Partial: ...

    @abstractmethod
    def combine(self, a: Partial, b: Partial) -> Partial: ...

    def deduct(self, a: Partial, b: Partial) -> Partial:
        raise TypeError(f"{type(self).__name__} is not invertible: it cannot deduct a frame")

    @abstractmethod
    def finish(self, partial: Partial) -> object: ...

    @abstractmethod
    def spark_contributions(self, value: Column) -> list[Column]: ...

    @abstractmethod
    def spark_finish(self, fields: list[Column]) -> Column: ...


class Additive(Aggregation):
    """An invertible aggregation whose partial is a vector of sums."""

    invertible = True

    def empty(self) -> Partial:
        return (0,) * len(self.fields)

    def accumulate(self, partial: Partial, value: int) -> Partial:
        return self.combine(partial, self.contributions(value))

    def combine(self, a: Partial, b: Partial) -> Partial:
        return tuple(x + y for x, y in zip(a, b, strict=True))

    def deduct(self, a: Partial, b: Partial) -> Partial:
        return tuple(x - y for x, y in zip(a, b, strict=True))

    @abstractmethod
    def contributions(self, value: int) -> Partial:
        """What one event adds to each field (the Python twin of ``spark_contributions``)."""


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


class Sum(Additive):
    """Sum of integer values: stays an integer, so running sums carry no floating error."""

    fields = (PartialField("s", "bigint"),)
    output_type = "bigint"

    def contributions(self, value: int) -> Partial:
        return (value,)

    def finish(self, partial: Partial) -> int:
        return partial[0]

    def spark_contributions(self, value: Column) -> list[Column]:
        return [value.cast("bigint")]

    def spark_finish(self, fields: list[Column]) -> Column:
        return fields[0]


AGGREGATIONS: dict[str, type[Aggregation]] = {
    "count": Count,
    "sum": Sum,
}


def aggregation(kind: str, name: str | None = None) -> Aggregation:
    """The factory: an aggregation kind (``count``, ``sum``, ...) under an output name."""
    try:
        cls = AGGREGATIONS[kind]
    except KeyError:
        known = ", ".join(sorted(AGGREGATIONS))
        raise ValueError(f"unknown aggregation {kind!r}; known: {known}") from None
    return cls(name or kind)


DEFAULT_AGGREGATIONS: tuple[Aggregation, ...] = (aggregation("count"), aggregation("sum"))
