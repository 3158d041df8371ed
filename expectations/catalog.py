"""Every data-quality check panes runs, and who evaluates each table's: one list, so the UI, the
CI table and the docs' checks page say the same thing.

Each table's checks sit in a module of its own, beside the suite and the reconciliations that
evaluate them (``events``, ``quarantine``, ``minute_partials``, ``daily_partials``,
``window_changes``, ``window_snapshot``, ``spine_values``); the checks several tables share are in
``shared_checks``. Which checks apply depends on the configuration: ``mean_between_min_and_max``
exists only when a mean, a min and a max are all configured, ``sums_non_negative`` only when a sum
is.
"""

from __future__ import annotations

from collections.abc import Callable

from expectations import (
    daily_partials, events, minute_partials, quarantine, shared_checks, spine_values, window_changes,
    window_snapshot,
)
from expectations.check import ERROR, WARN, Check, Outcome
from expectations.inputs import Inputs, Results
from jobs.tables import DAILY_PARTIALS
from windowing_core.config import PipelineConfig, reads_day_tiles

__all__ = ["ERROR", "EVALUATORS", "WARN", "Check", "Outcome", "catalog", "checks_of"]

TABLES = (events, quarantine, minute_partials, daily_partials, window_changes, window_snapshot)
"""The tables every configuration checks, each module's ``checks(config)`` and ``evaluate(inputs)``."""

EVALUATORS: dict[str, Callable[[Inputs], Results]] = {
    **{module.TABLE.name: module.evaluate for module in TABLES},
    spine_values.TABLE.name: spine_values.evaluate,
}


def catalog(config: PipelineConfig) -> list[Check]:
    """The checks that apply to this configuration, table by table."""
    checks = [check for module in TABLES for check in module.checks(config)]
    checks += shared_checks.checks(config)
    if config.spine is not None:
        checks += spine_values.checks(config.spine)
    if not reads_day_tiles(config):  # no such asset to check
        checks = [c for c in checks if c.table != DAILY_PARTIALS.name]
    return checks


def checks_of(config: PipelineConfig, table: str) -> list[Check]:
    return [c for c in catalog(config) if c.table == table]
