"""The watermark's promise, in Dagster terms: freshness policies and the output watermark check.

A window output for event time t can only be final once every arrival day within the allowed
lateness has landed, so it is promised within lateness + processing slack: that is the
freshness policy of the window assets. The ``output_watermark_within_bound`` check measures the
promise on the data itself: the output watermark (the last closed window end every window
table has been computed to, with no missing partition before it) against the newest event time.
"""

from datetime import UTC, datetime, timedelta

import dagster as dg

from assets.keys import key
from assets.resources import LakehouseResource
from expectations.catalog import WARN
from jobs.storage import delta_io
from jobs.tables import EVENTS, WINDOW_CHANGES, WINDOW_SNAPSHOT, ingest_root, root
from windowing_core.config import PipelineConfig
from windowing_core.run_interval import partition_key, partition_starts
from windowing_core.window_spec import from_epoch_seconds, to_epoch_seconds


def promised_within(config: PipelineConfig) -> timedelta:
    return timedelta(seconds=config.allowed_lateness + config.freshness_slack)


def with_freshness(assets: list[dg.AssetsDefinition], config: PipelineConfig) -> list[dg.AssetsDefinition]:
    policy = dg.FreshnessPolicy.time_window(fail_window=promised_within(config) + timedelta(days=1),
                                            warn_window=promised_within(config))
    windows = {key(t.name, config) for t in (WINDOW_CHANGES, WINDOW_SNAPSHOT)}
    return [a.map_asset_specs(lambda spec: spec.replace_attributes(freshness_policy=policy)
                              if spec.key in windows else spec)
            if isinstance(a, dg.AssetsDefinition) else a for a in assets]


def output_watermark(config: PipelineConfig, materialized: set[str],
                     now: datetime | None = None) -> tuple[datetime | None, list[str]]:
    """The last window end (of the slowest window) covered by contiguous materialised partitions
    (days, or parts of ``partition:``) that have ended by ``now``, and the partitions missing
    inside the materialised range. The partition under way has not seen all its data yet."""
    step = timedelta(seconds=config.partition)
    starts = sorted(start for start in partition_starts(materialized, config.partition)
                    if now is None or start + step <= now)
    if not starts:
        return None, []
    covered, last = set(starts), starts[-1]
    missing = [start for start in (starts[0] + i * step for i in range((last - starts[0]) // step + 1))
               if start not in covered]
    end_of_cover = to_epoch_seconds(missing[0] if missing else last + step)
    # a configuration of session windows only: their rows are final up to the covered days' end
    return (from_epoch_seconds(min((w.end_at_or_before(end_of_cover - 1) for w in config.windows),
                                   default=end_of_cover)),
            [partition_key(start, config.partition) for start in missing])


def build_watermark_check(config: PipelineConfig) -> dg.AssetChecksDefinition:
    bound = promised_within(config)

    # WARN, so not blocking, as every check's severity says (``expectations.catalog``): late
    # windows are still right, and what reads them may go on.
    @dg.asset_check(asset=key(WINDOW_CHANGES.name, config), name="output_watermark_within_bound",
                    blocking=False,
                    metadata={"severity": WARN},
                    description=f"[{WARN}] The output watermark lags the newest event time by at most {bound}, "
                                "with no missing partition before it: otherwise windows are late, not wrong.")
    def output_watermark_within_bound(context: dg.AssetCheckExecutionContext,
                                      lakehouse: LakehouseResource) -> dg.AssetCheckResult:
        materialized = context.instance.get_materialized_partitions(key(WINDOW_CHANGES.name, config))
        watermark, missing = output_watermark(config, materialized, datetime.now(UTC))
        newest = delta_io.column_max(EVENTS.path(ingest_root(root(lakehouse.lakehouse_root, config), config)),
                                     "event_time")
        lag = None if watermark is None or newest is None else max(newest - watermark, timedelta(0))
        passed = watermark is not None and not missing and (lag is None or lag <= bound)
        return dg.AssetCheckResult(passed=passed, severity=dg.AssetCheckSeverity(WARN), metadata={
            "output_watermark": str(watermark),
            "newest_event_time": str(newest),
            "lag_seconds": None if lag is None else int(lag.total_seconds()),
            "bound_seconds": int(bound.total_seconds()),
            "missing_partitions": ", ".join(missing[:20]) or "none",
        })

    return output_watermark_within_bound
