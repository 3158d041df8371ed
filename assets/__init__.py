"""Dagster assets, named after the tables they hold; each calls one job and reports metadata."""

from __future__ import annotations

import warnings

import dagster as dg

from assets.events import build_events_assets, build_source_spec
from assets.minute_partials import build_minute_partials_asset
from assets.online_values import build_online_values_asset
from assets.spine_values import build_joined_spine_asset, build_spine_values_asset
from assets.windows import build_window_assets
from windowing_core.config import PipelineConfig
from windowing_core.deployment import Deployment


def build_assets(configured: PipelineConfig | Deployment) -> list[dg.AssetsDefinition | dg.AssetSpec]:
    """The asset graph: each source's ingest once (and a table source as an external asset),
    then each group's partials and windows (their lateness and windows shape the mappings), and
    ``spine_values`` and ``online_values`` where a group configures a spine and a store."""
    deployment = Deployment.of(configured)
    # BackfillPolicy.single_run makes a range of days one run; the parameter is beta in Dagster
    # 1.13, and its warning (one per asset on every load of the code) is silenced here only.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Parameter `backfill_policy`", category=dg.BetaWarning)
        return _build(deployment)


def _build(deployment: Deployment) -> list[dg.AssetsDefinition | dg.AssetSpec]:
    ingests = [built for ingest in deployment.ingests
               for built in (build_events_assets(ingest), build_source_spec(ingest)) if built is not None]
    groups = [built for group in deployment.groups
              for built in (build_minute_partials_asset(group), build_window_assets(group),
                            build_spine_values_asset(group), build_online_values_asset(group)) if built is not None]
    joined = build_joined_spine_asset(deployment)
    return [*ingests, *groups, *([joined] if joined is not None else [])]
