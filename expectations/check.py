"""What a check is: its name (a predicate), table, severity and why it exists, and one day's outcome.

``ERROR`` checks are blocking: when one fails, nothing downstream of its table materialises in the
same run (a wrong window output must not be read). ``WARN`` checks only report. Aggregations are
recognised by their class in ``windowing_core.aggregations.AGGREGATIONS``, never by the output name
a user gave them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from windowing_core.aggregations import AGGREGATIONS, Aggregation
from windowing_core.config import PipelineConfig

ERROR = "ERROR"
WARN = "WARN"


@dataclass(frozen=True)
class Check:
    name: str
    table: str
    severity: str
    guards: str  # what goes wrong if it is not there: the check's description in the UI

    @property
    def blocking(self) -> bool:
        return self.severity == ERROR


@dataclass
class Outcome:
    """One check's result for one daily partition."""

    passed: bool
    metadata: dict[str, Any] = field(default_factory=dict)


def of_kinds(config: PipelineConfig, *kinds: str) -> list[Aggregation]:
    """The configured aggregations of these kinds (``count``, ``sum``, ``mean`` ...), in order.

    A kind the algebra does not define (yet) matches nothing, so its checks do not apply.
    """
    classes = tuple(AGGREGATIONS[k] for k in kinds if k in AGGREGATIONS)
    return [a for a in config.aggregations if classes and type(a) in classes]


VARIANCE_KINDS = ("var_pop", "var_samp", "stddev_pop", "stddev_samp")
K_LIST_KINDS = ("first_k", "last_k", "top_k", "bottom_k")


def counts_of_fields(config: PipelineConfig) -> list[Aggregation]:
    """The counts of a declared field's values, which may be below the event count (a field's
    nulls); the default value is never null, so its count is the event count."""
    return [a for a in of_kinds(config, "count") if config.fields]


def has_mean_min_max(config: PipelineConfig) -> bool:
    return all(of_kinds(config, kind) for kind in ("mean", "min", "max"))
