"""Table maintenance: a weekly vacuum of the lakehouse, as a Dagster job of its own.

Not an asset: a vacuum changes no table's contents, only which old versions' files remain.
Its schedule starts stopped, like the daily one; turn it on in the UI (Automation), or launch
the job with ``dry_run: true`` first to see what it would delete.
"""

from collections.abc import Sequence

import dagster as dg  # no postponed annotations here: Dagster reads the op's config type from them

from assets.resources import LakehouseResource
from jobs.vacuum import vacuum_lakehouse


class VacuumConfig(dg.Config):
    retain_hours: int | None = None
    """Keep the files that versions of the last N hours need; default: each table's
    delta.deletedFileRetentionDuration (7 days)."""
    allow_short_retention: bool = False
    """Accept retain_hours below a table's own retention: a run still reading an older version,
    or still writing, may then fail."""
    dry_run: bool = False
    """Count what would be deleted and delete nothing."""


def build_vacuum(folders: Sequence[str | None] = (None,)) -> tuple[dg.JobDefinition, dg.ScheduleDefinition]:
    """The vacuum job of the lakehouse's tables, at its root and in ``folders`` (every group's
    and named source's: ``Deployment.folders``), and its weekly schedule."""

    @dg.op(description="Delete the data files no table version within the retention needs (jobs/vacuum.py).")
    def vacuum_tables(context: dg.OpExecutionContext, config: VacuumConfig,
                      lakehouse: LakehouseResource) -> dg.Output:
        try:
            done = vacuum_lakehouse(lakehouse.lakehouse_root, folders=folders, retain_hours=config.retain_hours,
                                    dry_run=config.dry_run, allow_short_retention=config.allow_short_retention,
                                    log=context.log.info)
        except ValueError as err:
            raise dg.Failure(description=str(err)) from None
        rows = "\n".join(f"| {v.table} | {v.files} | {v.bytes / 2**20:,.1f} |" for v in done)
        return dg.Output(None, metadata={
            "dry_run": config.dry_run,
            "files": sum(v.files for v in done),
            "bytes": sum(v.bytes for v in done),
            "tables": dg.MetadataValue.md("| table | files | MiB |\n|---|---:|---:|\n" + rows),
        })

    @dg.job(name="vacuum_lakehouse", description="Vacuum every Delta table of the lakehouse.")
    def vacuum_lakehouse_job():
        vacuum_tables()

    return vacuum_lakehouse_job, dg.ScheduleDefinition(
        name="weekly_vacuum", job=vacuum_lakehouse_job, cron_schedule="0 3 * * 0", execution_timezone="UTC",
        description="Sundays at 03:00 UTC.")
