"""The shared command line of every job: the same flags, one-line errors, exit codes.

A scheduler (spark-submit, an Airflow task) needs an exit code it can trust and an error it
can show, one line on stderr:

- 0: success;
- 1: a missing input (a landing folder, a table or a day's partials not materialised yet);
- 2: bad arguments or configuration (a date outside ``FIRST_DAY .. LAST_DAY``, a configuration
  the tables were not made with);
- 3: a write refused because another run replaced the same partitions while this one ran:
  nothing was committed; run it again once the other has finished.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Callable
from datetime import date, datetime
from pathlib import Path

from jobs.runtime import compilers, pipes
from jobs.tables import root
from windowing_core.config import PipelineConfig
from windowing_core.deployment import Deployment
from windowing_core.run_interval import RunInterval, refuse_below_a_day

FIRST_DAY = date(1970, 1, 1)
"""Event times before 1970 are quarantined (``timestamp_out_of_range``): no partition before it."""
LAST_DAY = date(9899, 12, 31)
"""Well before date's end (9999-12-31): a day's run reaches past it by up to its lateness
and its longest window (``windowing_core.config``'s limits), and no date may overflow."""
EXIT_MISSING_INPUT, EXIT_BAD_ARGUMENTS, EXIT_CONCURRENT_WRITE = 1, 2, 3


def _day(text: str) -> date:
    try:
        day = date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a date (YYYY-MM-DD): {text!r}") from None
    return _partitioned(day)


def _partitioned(day: date) -> date:
    if not FIRST_DAY <= day <= LAST_DAY:
        raise argparse.ArgumentTypeError(f"{day} is outside {FIRST_DAY} .. {LAST_DAY}, the days panes partitions")
    return day


def _time(text: str) -> datetime:
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a time (YYYY-MM-DDTHH:MM, UTC unless it has an offset): "
                                         f"{text!r}") from None


def _day_or_time(text: str) -> date:
    """A day (``--date``'s range) or, where it holds a time of day, a time (``--from``'s end)."""
    return _time(text) if len(text) > len("YYYY-MM-DD") else _day(text)


def documented_parser(doc: str | None, *, prog: str | None = None) -> argparse.ArgumentParser:
    """A parser whose ``--help`` is the module's docstring: its first line, then the rest."""
    summary, _, rest = (doc or "").partition("\n")
    return argparse.ArgumentParser(prog=prog, description=summary, epilog=rest.strip() or None,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)


def job_arguments(doc: str | None, *, landing: bool = False, below_a_day: bool = False) -> argparse.ArgumentParser:
    parser = documented_parser(doc)
    if landing:
        parser.add_argument("--landing", default=None,
                            help="folder holding <arrival date>/ folders (unless the configuration names a source:)")
    parser.add_argument("--lakehouse", required=True, help="root folder (or URI) of the Delta tables")
    when = parser.add_mutually_exclusive_group(required=True)
    when.add_argument("--date", type=_day, help="the partition's day, YYYY-MM-DD")
    if below_a_day:
        when.add_argument("--from", dest="start", type=_time,
                          help="a run below a day: its start, YYYY-MM-DDTHH:MM (UTC unless it has an offset); "
                               "with --until, its end (excluded), on the same day or the next midnight")
    parser.add_argument("--until", type=_day_or_time, default=None,
                        help="last day of a range run (YYYY-MM-DD, included); default: --date"
                             + ("; with --from: a time" if below_a_day else ""))
    parser.add_argument("--config", default=None, help="pipeline configuration YAML (default: 7d window)")
    group_arguments(parser, ingest=landing)
    return parser


def group_arguments(parser: argparse.ArgumentParser, *, ingest: bool = False) -> None:
    """``--group`` (and for ingest ``--source``): which part of a configuration of ``groups:`` runs."""
    parser.add_argument("--group", default=None, help="the group to run, where the configuration declares groups:"
                        + (" (ingest: the source it reads)" if ingest else ""))
    if ingest:
        parser.add_argument("--source", default=None, help="where the configuration declares groups: the source "
                            "to ingest, by its name (a table, or a group's own landing folders; default: the "
                            "default landing folders)")


def load_configuration(args: argparse.Namespace, *, ingest: bool = False) -> PipelineConfig:
    """The configuration ``--config`` and ``--group`` (``--source``) name, with ``args.lakehouse``
    made its tables' root (``jobs.tables.root``); a ValueError says what is wrong."""
    deployment = Deployment.load(args.config)
    if ingest and getattr(args, "source", None) is not None:
        config = deployment.source_ingest(args.source)
    elif ingest and args.group is None and deployment.grouped:
        config = deployment.source_ingest(None)
    elif ingest:
        config = deployment.ingest_of(deployment.group(args.group))
    else:
        config = deployment.group(args.group)
    if getattr(args, "lakehouse", None):
        args.lakehouse = root(args.lakehouse, config)
    return config


def parsed(parser: argparse.ArgumentParser, argv: list[str] | None, *,
           ingest: bool = False) -> tuple[argparse.Namespace, PipelineConfig]:
    """The command line's arguments and the configuration they name; a bad one exits in one line
    (``argparse``'s usage error, exit 2)."""
    args = parser.parse_args(argv)
    try:
        return args, load_configuration(args, ingest=ingest)
    except ValueError as err:
        parser.error(f"bad configuration: {err}")


InputSize = Callable[[argparse.Namespace, PipelineConfig, date, date], dict[str, int]]


def events_of_the_days(args: argparse.Namespace, config: PipelineConfig, first: date, last: date) -> dict[str, int]:
    """A run's input as the jobs after ingest weigh it: the events of its arrival days (of a part
    of a day, its share)."""
    return compilers.events_of_the_days(args.lakehouse, config, first, last, args.interval)


def run_job(doc: str | None, job: Callable[..., str], argv: list[str] | None = None, *, landing: bool = False,
            below_a_day: str | None = None, input_size: InputSize = events_of_the_days) -> int:
    """Parse the shared flags, load the configuration, run ``job(spark, config, args, first, last)``
    and print its one-line summary, or a one-line error. Its progress goes to stderr
    (``jobs.runtime.progress``). A job that runs part of a day passes ``below_a_day``, its stage
    (``windowing_core.run_interval.STAGES``, whose rules refuse an interval in one line):
    ``--from/--until`` then sets ``args.interval`` (a ``RunInterval``; else None), and its day is
    ``first`` and ``last``. ``input_size`` weighs the run's input for the JVM's compilers
    (``jobs.runtime.compilers``) where the job starts its own."""
    from jobs.runtime import progress  # Spark and Delta load only once a job runs, not for --help

    parser = job_arguments(doc, landing=landing, below_a_day=below_a_day is not None)
    args, config = parsed(parser, argv, ingest=landing)
    args.interval = _interval(parser, args)
    try:
        if args.interval is not None:
            refuse_below_a_day(config, below_a_day, args.interval)
    except ValueError as err:
        parser.error(str(err))
    last = args.until or args.date
    if last < args.date:
        parser.error(f"--until {args.until} is before --date {args.date}")
    if landing and args.landing is None and config.source is None:
        parser.error("--landing is required (or a source: in the configuration)")
    try:
        every = progress.every_seconds()
        compilers.choice()
    except ValueError as err:
        parser.error(str(err))
    with pipes.session():  # where Dagster launched the job through Pipes; else nothing
        return _run(parser, job, args, config, last, every, input_size)


def _interval(parser: argparse.ArgumentParser, args: argparse.Namespace) -> RunInterval | None:
    """``--from/--until`` as a ``RunInterval``, its day made ``--date`` (and ``--until``); a bad
    pair exits in one line."""
    start = getattr(args, "start", None)
    if start is None:
        if isinstance(args.until, datetime):
            parser.error(f"--until {args.until:%Y-%m-%dT%H:%M} is a time: with --date it is a day (YYYY-MM-DD)")
        return None
    if not isinstance(args.until, datetime):
        parser.error("--from needs --until, a time (YYYY-MM-DDTHH:MM)")
    try:
        interval = RunInterval(start, args.until)
        _partitioned(interval.day)
    except (ValueError, argparse.ArgumentTypeError) as err:
        parser.error(str(err))
    args.date = args.until = interval.day
    return interval


LOG_DIR_ENV = "PANES_LOG_DIR"

# The JVM's log of a job run from the command line goes to a file of its own, every level from
# WARN: a failed task's stack traces (hundreds of lines) would bury the job's one-line error.
_LOG4J2 = """\
rootLogger.level = warn
rootLogger.appenderRef.file.ref = file
appender.file.type = File
appender.file.name = file
appender.file.fileName = ${sys:panes.log.file}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
"""


def spark_log_file(job: str) -> str:
    """Where this run's JVM log goes: ``PANES_LOG_DIR`` (default: the temporary folder's
    ``panes-logs``), one file per run."""
    folder = os.environ.get(LOG_DIR_ENV) or os.path.join(tempfile.gettempdir(), "panes-logs")
    os.makedirs(folder, exist_ok=True)
    return os.path.join(folder, f"{job.rsplit('.', 1)[-1]}-{datetime.now():%Y%m%dT%H%M%S}-{os.getpid()}.log")


def log4j_options(log: str) -> str:
    """The JVM options that send Spark's log to ``log`` and nothing of it to the terminal (Spark
    reads a log4j2 file given this way before it starts)."""
    properties = os.path.join(os.path.dirname(log), "log4j2-panes.properties")
    if not os.path.exists(properties) or Path(properties).read_text() != _LOG4J2:
        Path(properties).write_text(_LOG4J2)
    return f"-Dlog4j2.configurationFile=file:{properties} -Dpanes.log.file={log}"


def _run(parser: argparse.ArgumentParser, job: Callable[..., str], args: argparse.Namespace,
         config: PipelineConfig, last: date, every: float, input_size: InputSize) -> int:
    from jobs.errors import (
        ConcurrentWriteError,
        DamagedTableError,
        IncompleteWriteError,
        MissingInputError,
        MissingTableError,
        SourceError,
        StampMismatchError,
        table_files_checked,
    )
    from jobs.runtime import progress
    from jobs.runtime.spark_session import SPARK_DEFAULTS, get_spark, starts_a_jvm

    overrides = {}
    if starts_a_jvm():  # else the JVM's logging is whoever started it's
        log = spark_log_file(_name(job))
        print(f"{parser.prog}: Spark's own log: {log}", file=sys.stderr)
        size = input_size(args, config, args.date, last)
        quick, interpreted = compilers.quick(**size), compilers.interpreted(**size)
        why = "a small input" if compilers.choice() == "auto" else f"{compilers.JIT_ENV}=quick"
        if quick:
            print(f"{parser.prog}: {why}: the JVM compiles with C1 alone"
                  f"{' and Spark evaluates expressions interpreted' if interpreted else ''} "
                  f"({compilers.JIT_ENV}=full for C2 and generated code)", file=sys.stderr)
        options = (SPARK_DEFAULTS["spark.driver.extraJavaOptions"], log4j_options(log), compilers.java_options(quick))
        overrides = {"spark.driver.extraJavaOptions": " ".join(o for o in options if o),
                     **compilers.spark_settings(interpreted)}
    spark = get_spark(overrides, roots=[args.lakehouse, getattr(args, "landing", None) or ""])
    try:
        label = f"{_name(job)} {args.interval or f'{args.date} .. {last}'}"
        with table_files_checked(), progress.reported(spark, label, _to_stderr, every):
            summary = job(spark, config, args, args.date, last)
    except (MissingInputError, MissingTableError, DamagedTableError, IncompleteWriteError) as err:
        print(f"{parser.prog}: error: {err}", file=sys.stderr)
        return EXIT_MISSING_INPUT
    except StampMismatchError as err:  # the tables were made under another configuration
        print(f"{parser.prog}: error: bad configuration for these tables: {err}", file=sys.stderr)
        return EXIT_BAD_ARGUMENTS
    except SourceError as err:  # the source table lacks what the configuration names
        print(f"{parser.prog}: error: bad configuration: {err}", file=sys.stderr)
        return EXIT_BAD_ARGUMENTS
    except ConcurrentWriteError as err:  # names the table; nothing of this run was committed
        print(f"{parser.prog}: error: {_one_line(err)}", file=sys.stderr)
        return EXIT_CONCURRENT_WRITE
    print(summary)
    pipes.log(summary)
    return 0


def _name(job: Callable) -> str:
    """``jobs.minute_partials``, also where spark-submit ran the file as ``__main__``."""
    if job.__module__ != "__main__":
        return job.__module__
    return f"jobs.{os.path.splitext(os.path.basename(sys.argv[0]))[0]}"


def _one_line(err: Exception) -> str:
    return " ".join(str(err).split())


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
    pipes.log(line)
