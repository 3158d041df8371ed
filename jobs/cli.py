"""The shared command line of every job: the same flags, one-line errors, exit codes.

A scheduler (spark-submit, an Airflow task) needs an exit code it can trust and an error it
can show: 0 on success, 2 for bad arguments or configuration, 1 for a missing input.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from datetime import date

from windowing_core.config import PipelineConfig


class MissingInputError(Exception):
    """An input folder the job reads does not exist (exit code 1). Defined here, with the exit
    codes, so that jobs import the command line and never the other way round."""


def _day(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a date (YYYY-MM-DD): {text!r}") from None


def documented_parser(doc: str | None, *, prog: str | None = None) -> argparse.ArgumentParser:
    """A parser whose ``--help`` is the module's docstring: its first line, then the rest."""
    summary, _, rest = (doc or "").partition("\n")
    return argparse.ArgumentParser(prog=prog, description=summary, epilog=rest.strip() or None,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)


def job_arguments(doc: str | None, *, landing: bool = False) -> argparse.ArgumentParser:
    parser = documented_parser(doc)
    if landing:
        parser.add_argument("--landing", required=True, help="folder holding <arrival date>/ folders")
    parser.add_argument("--lakehouse", required=True, help="root folder (or URI) of the Delta tables")
    parser.add_argument("--date", required=True, type=_day, help="the partition's day, YYYY-MM-DD")
    parser.add_argument("--until", type=_day, default=None,
                        help="last day of a range run (YYYY-MM-DD, included); default: --date")
    parser.add_argument("--config", default=None, help="pipeline configuration YAML (default: 7d window)")
    return parser


def run_job(doc: str | None, job: Callable[..., str], argv: list[str] | None = None, *,
            landing: bool = False) -> int:
    """Parse the shared flags, load the configuration, run ``job(spark, config, args, first, last)``
    and print its one-line summary, or a one-line error. Its progress goes to stderr
    (``jobs.progress``)."""
    from jobs import progress  # Spark and Delta load only once a job runs, not for --help
    from jobs.delta_io import MissingTableError, StampMismatchError
    from jobs.spark_session import get_spark

    parser = job_arguments(doc, landing=landing)
    args = parser.parse_args(argv)
    last = args.until or args.date
    if last < args.date:
        parser.error(f"--until {args.until} is before --date {args.date}")
    try:
        config = PipelineConfig.load(args.config)
    except ValueError as err:
        parser.error(f"bad configuration: {err}")
    try:
        every = progress.every_seconds()
    except ValueError as err:
        parser.error(str(err))
    spark = get_spark()
    try:
        with progress.reported(spark, f"{_name(job)} {args.date} .. {last}", _to_stderr, every):
            summary = job(spark, config, args, args.date, last)
    except (MissingInputError, MissingTableError) as err:
        print(f"{parser.prog}: error: {err}", file=sys.stderr)
        return 1
    except StampMismatchError as err:  # the tables were made under another configuration
        print(f"{parser.prog}: error: bad configuration for these tables: {err}", file=sys.stderr)
        return 2
    print(summary)
    return 0


def _name(job: Callable) -> str:
    """``jobs.minute_partials``, also where spark-submit ran the file as ``__main__``."""
    if job.__module__ != "__main__":
        return job.__module__
    return f"jobs.{os.path.splitext(os.path.basename(sys.argv[0]))[0]}"


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
