"""Processing-time windows (``time: arrival``) in the oracle: the accepted events, placed by
their arrival time.

A window by arrival time folds exactly the events every other window folds (both
deduplications, the lateness cut and the late policy decide acceptance, each at the event's
arrival); only the instant that places an event differs. So the oracle of such windows is the
brute-force reference over the accepted events with ``event_time`` replaced by ``arrival_time``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from datetime import date

from windowing_core import reference
from windowing_core.config import MAX_LATENESS_DAYS, PipelineConfig
from windowing_core.window_spec import DAY_SECONDS


def by_arrival(events: Iterable[reference.Event], config: PipelineConfig) -> list[reference.Event]:
    """The accepted events, each placed at its arrival time."""
    return [replace(e, event_time=e.arrival_time) for e in reference.accepted_events(events, config)]


def _arrival_config(config: PipelineConfig) -> PipelineConfig:
    # Acceptance was decided already: nothing is dropped again, however the new times fall.
    return replace(config, windows=config.arrival_windows, sessions=(), counts=(), late_policy="include",
                   allowed_lateness=MAX_LATENESS_DAYS * DAY_SECONDS)


def window_changes(events: Iterable[reference.Event], config: PipelineConfig, first: date,
                   last: date) -> list[reference.ChangeRow]:
    """``reference.window_changes`` of the ``time: arrival`` windows."""
    return reference.window_changes(by_arrival(events, config), _arrival_config(config), first, last)


def snapshot(events: Iterable[reference.Event], config: PipelineConfig, day: date) -> dict:
    """``reference.snapshot`` of the ``time: arrival`` windows."""
    return reference.snapshot(by_arrival(events, config), _arrival_config(config), day)
