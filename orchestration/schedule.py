"""The pipeline's schedule: every partition runs as it ends, whatever landed or not, since frames
leaving a window change it without new data.

A day runs at 01:00, when its files have landed. A part of a day runs right as it ends. Below a
day the partition under way exists too (the landing sensor and late firings keep it current),
so Dagster's partitioned schedule, which asks for the last partition, would run the part that
has just begun; this one asks for the part that has just ended.
"""

from __future__ import annotations

from datetime import timedelta

import dagster as dg


def build_pipeline_schedule(job: dg.UnresolvedAssetJobDefinition,
                            partitions: dg.TimeWindowPartitionsDefinition) -> dg.ScheduleDefinition:
    if partitions.cron_schedule == "0 0 * * *":
        return dg.build_schedule_from_partitioned_job(job, hour_of_day=1, minute_of_hour=0)

    @dg.schedule(name=f"{job.name}_schedule", cron_schedule=partitions.cron_schedule, job=job,
                 execution_timezone=partitions.timezone,
                 description="Runs every asset of each partition as it ends.")
    def pipeline_schedule(context: dg.ScheduleEvaluationContext):
        ended = context.scheduled_execution_time - timedelta(microseconds=1)
        key = partitions.get_partition_key_for_timestamp(ended.timestamp())
        if not partitions.has_partition_key(key):
            return dg.SkipReason(f"the partition that ended at {context.scheduled_execution_time} ({key}) is not one "
                                 "of the deployment's (PANES_START_DATE, PANES_END_DATE)")
        return dg.RunRequest(run_key=key, partition_key=key)

    return pipeline_schedule
