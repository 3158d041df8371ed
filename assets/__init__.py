"""Dagster assets, named after the tables they hold; each calls one job and reports metadata."""

from __future__ import annotations

import dagster as dg

from assets.events import build_events_assets
from assets.minute_partials import build_minute_partials_asset
from assets.online_values import build_online_values_asset
from assets.spine_values import build_spine_values_asset
from assets.windows import build_window_assets
from windowing_core.config import PipelineConfig


def build_assets(config: PipelineConfig) -> list[dg.AssetsDefinition]:
    """The asset graph for one pipeline configuration (its lateness and windows shape the mappings;
    ``spine_values`` and ``online_values`` exist only where a spine and a store are configured)."""
    optional = [build_spine_values_asset(config), build_online_values_asset(config)]
    return [build_events_assets(config), build_minute_partials_asset(config), build_window_assets(config),
            *[a for a in optional if a is not None]]
