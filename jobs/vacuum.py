"""Vacuum: delete the data files that no version of a table within its retention needs.

A partition replace leaves the files it replaced where they are, so that whoever reads an
older version (a long query, time travel, a run that started before the replace) still can;
late firings and backfills rewrite a day several times, so each table's folder grows with every
rewrite until a vacuum deletes what only versions older than the retention period (7 days by
default) reference, and what a killed run left behind. The Delta log and every version within
the retention stay readable. Dagster runs it weekly (``orchestration/maintenance.py``).

With groups (``--config``), the tables of every group's and named source's folder too.

    python -m jobs.vacuum --lakehouse DIR [--config FILE] [--retain-hours H] [--dry-run]
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from jobs.cli import documented_parser
from jobs.storage import delta_io
from jobs.tables import ALL_TABLES
from windowing_core.deployment import Deployment


@dataclass(frozen=True)
class Vacuumed:
    table: str
    files: int
    bytes: int


def vacuum_lakehouse(lakehouse: str, *, folders: Sequence[str | None] = (None,), retain_hours: int | None = None,
                     dry_run: bool = False, allow_short_retention: bool = False,
                     log: Callable[[str], None] = lambda line: None) -> list[Vacuumed]:
    """Vacuum every table of the lakehouse that exists, at its root (None) and in each of
    ``folders`` (``Deployment.folders``: groups' and named sources'); a line per table goes to
    ``log``, named ``<folder>/<table>`` below the root.

    ``retain_hours`` below a table's own retention (``delta.deletedFileRetentionDuration``) is
    refused unless ``allow_short_retention``: a run still reading an older version, or still
    writing, would lose its files.
    """
    if retain_hours is not None and retain_hours < 0:
        raise ValueError(f"retain_hours must be 0 or more, not {retain_hours}")
    done = []
    for folder, table in ((f, t) for f in folders for t in ALL_TABLES):
        path = table.path(f"{lakehouse.rstrip('/')}/{folder}" if folder else lakehouse)
        if not delta_io.table_exists(path):
            continue
        files, size = delta_io.vacuum(path, retain_hours=retain_hours, dry_run=dry_run,
                                      enforce_retention=not allow_short_retention)
        name = f"{folder}/{table.name}" if folder else table.name
        done.append(Vacuumed(name, files, size))
        log(f"{name}: {files} files, {size / 2**20:,.1f} MiB {'to delete' if dry_run else 'deleted'}")
    return done


def main(argv: list[str] | None = None) -> int:
    parser = documented_parser(__doc__)
    parser.add_argument("--lakehouse", required=True, help="root folder (or URI) of the Delta tables")
    parser.add_argument("--retain-hours", type=int, default=None,
                        help="keep what versions of the last H hours need (default: each table's "
                             "delta.deletedFileRetentionDuration, 7 days)")
    parser.add_argument("--allow-short-retention", action="store_true",
                        help="accept --retain-hours below a table's own retention (runs in progress may fail)")
    parser.add_argument("--dry-run", action="store_true", help="count what would be deleted, delete nothing")
    parser.add_argument("--config", default=None,
                        help="pipeline configuration YAML: with groups, their folders' tables are vacuumed too")
    args = parser.parse_args(argv)
    try:
        folders = Deployment.load(args.config).folders
        done = vacuum_lakehouse(args.lakehouse, folders=folders, retain_hours=args.retain_hours, dry_run=args.dry_run,
                                allow_short_retention=args.allow_short_retention, log=print)
    except ValueError as err:
        parser.error(str(err))
    if not done:
        print(f"{parser.prog}: error: no Delta tables under {args.lakehouse}", file=sys.stderr)
        return 1
    files, size = sum(v.files for v in done), sum(v.bytes for v in done)
    print(f"{'would delete' if args.dry_run else 'deleted'} {files} files, {size / 2**20:,.1f} MiB "
          f"in {len(done)} tables")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
