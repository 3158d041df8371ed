"""``online_matches_snapshot``: the online store holds exactly what ``window_snapshot`` says.

Blocking: a store that disagrees with the tables is not served silently. Per day of the run,
each snapshot row must be the store's row of its key and window, value by value, and the store
may hold no other row of that day; a window whose store already holds a later day passes (its
rows were replaced by newer ones, as they should be). ``jobs.online_values.compare`` does it in
the database.
"""

import warnings
from datetime import timedelta

import dagster as dg

from jobs import online_values
from jobs.errors import MissingInputError, OnlineStoreError
from jobs.online.postgres import store_name
from jobs.tables import asset_key, op_name, root
from jobs.tables import days as day_list
from windowing_core.config import PipelineConfig

CHECK = "online_matches_snapshot"


def build_online_check(config: PipelineConfig, asset: str,
                       partitions_def: dg.PartitionsDefinition) -> dg.AssetChecksDefinition | None:
    online = config.online
    if online is None:
        return None
    served = dg.AssetKey(asset_key(asset, config))
    with warnings.catch_warnings():  # partitioned checks are a preview in Dagster 1.13
        warnings.simplefilter("ignore", dg.PreviewWarning)
        spec = dg.AssetCheckSpec(CHECK, asset=served, blocking=True, partitions_def=partitions_def,
                                 description="[ERROR] the store's rows equal window_snapshot of the day, value by "
                                             "value (a window the store holds a later day of passes)",
                                 metadata={"severity": "ERROR"})

    @dg.multi_asset_check(specs=[spec], name=op_name(f"{asset}_checks", config), required_resource_keys={"lakehouse"},
                          description="The online store against window_snapshot, per daily partition.")
    def online_checks(context: dg.AssetCheckExecutionContext):
        window = context.partition_time_window
        lakehouse = root(context.resources.lakehouse.lakehouse_root, config)
        for day in day_list(window.start.date(), (window.end - timedelta(days=1)).date()):
            try:
                found = online_values.compare(lakehouse, day, config, online)
            except (OnlineStoreError, MissingInputError) as err:
                yield dg.AssetCheckEvaluation(asset_key=served, check_name=CHECK, passed=False,
                                              description=str(err), blocking=True, partition=day.isoformat(),
                                              metadata={"problem": str(err)})
                continue
            yield dg.AssetCheckEvaluation(
                asset_key=served, check_name=CHECK, passed=found.ok, blocking=True,
                partition=day.isoformat(),
                description=None if found.ok else f"{found.differing_count} rows of the store differ from "
                                                  f"window_snapshot of {day}",
                metadata={"snapshot_rows": found.snapshot_rows, "equal_rows": found.equal,
                          "superseded_rows": found.superseded, "differing_rows": found.differing_count,
                          "differing_examples": dg.MetadataValue.json(
                              [{"key": k, "window": w, "how": how} for k, w, how in found.differing]),
                          "store": store_name(online)})
        assets_def = context.op_execution_context.assets_def  # the output a blocked downstream step waits on
        yield dg.Output(None, output_name=assets_def.get_output_name_for_asset_check_key(
            dg.AssetCheckKey(served, CHECK)))

    return online_checks
