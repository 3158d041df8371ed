"""An arrival day in parts: ``<landing>/<YYYY-MM-DD>/<HH>/`` (or ``<HHMM>/``) folders, as Kafka
Connect's and Flink's file sinks write them, so that ingest can run an hour of arrivals.

A record's ``arrival_part`` is the time its part folder's name says (``13`` is 13:00, ``1345``
13:45). A file anywhere else in the day's folder belongs to the day's end (the next midnight):
it is read once, by the run that closes the day. Within an arrival day the first copy of an
event is the first by ``(arrival_part, source_file, raw)``, in daily runs too, so a day run in
parts and the same day run whole keep the same copies (``windowing_core.reference``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta

import pyarrow.fs as pafs
from pyspark.sql import Column
from pyspark.sql import functions as F

from jobs.errors import MissingInputError
from jobs.storage import locations
from windowing_core.run_interval import midnight

PART_NAME = r"([01][0-9]|2[0-3])([0-5][0-9])?"
"""A part folder's name: an hour (``00`` .. ``23``) and, optionally, its minute (``1345``)."""


def day_end(day: date) -> datetime:
    """The part of a file outside the day's part folders: the next midnight."""
    return midnight(day) + timedelta(days=1)


def arrival_day_end() -> Column:
    """``day_end`` of each row's ``arrival_date``, in Spark: the part of a row no part folder holds."""
    return F.date_add("arrival_date", 1).cast("timestamp")


def folder_time(day: date, name: str) -> datetime | None:
    """The time a folder directly under the day's folder stands for, None if it is no part folder."""
    found = re.fullmatch(PART_NAME, name)
    if found is None:
        return None
    return midnight(day) + timedelta(hours=int(found[1]), minutes=int(found[2] or 0))


def part_of(day: date) -> Column:
    """A record's ``arrival_part`` from its ``source_file``: the part folder right under the day's
    folder in its path (a day's name and two or four digits in a path are a part folder and
    nothing else in practice: digits and dashes are never escaped in a URI), else the day's end."""
    found = f"/{day.isoformat()}/{PART_NAME}/"
    hour, minute = (F.regexp_extract("source_file", found, i) for i in (1, 2))
    offset = F.make_dt_interval(F.lit(0), hour.cast("int"), F.when(minute != "", minute).otherwise("0").cast("int"))
    return F.when(hour == "", F.lit(day_end(day))).otherwise(F.lit(midnight(day)) + offset)


@dataclass(frozen=True)
class Parts:
    """The parts of one arrival day a run reads and replaces: ``start <= arrival_part <= through``.

    ``through`` is the run's own end, or further where later parts of the day are already
    written: their copies may now be duplicates of the run's, so the run redoes them, reading
    their files again, and a day stays exact whatever order its parts run in."""

    day: date
    start: datetime
    through: datetime

    def holds(self, time: datetime) -> bool:
        return self.start <= time <= self.through

    @property
    def closes_day(self) -> bool:
        return self.through >= day_end(self.day)

    def column(self) -> Column:
        part = F.col("arrival_part")
        return (part >= F.lit(self.start)) & (part <= F.lit(self.through))

    def __str__(self) -> str:
        """The parts read, both ends included: ``2025-01-30T10:00 .. 10:59``, ``.. the day's end``."""
        end = "the day's end" if self.closes_day else f"{self.through:%H:%M}"
        return f"{self.start:%Y-%m-%dT%H:%M} .. {end}"


def part_folders(day_folder: str, client_sees_disk: bool) -> tuple[dict[str, datetime], bool] | None:
    """The day folder's part folders (each one's path and time) and whether it holds anything
    else (files of the day's end), listed one level deep; None where it cannot be listed from
    here (a Spark Connect client, a file system pyarrow does not know): then the whole day is
    read and its records kept by part. Empty hidden files (``_SUCCESS``) hold no record."""
    if locations.is_local(day_folder) and not client_sees_disk:
        return None
    located = locations.file_system(day_folder)
    if located is None:
        return None
    filesystem, root = located
    if filesystem.get_file_info(root).type == pafs.FileType.NotFound:
        raise MissingInputError(f"no landing folder {day_folder} (expected <landing>/YYYY-MM-DD/)")
    day = date.fromisoformat(day_folder.rstrip("/").rsplit("/", 1)[-1])
    parts, other = {}, False
    for info in filesystem.get_file_info(pafs.FileSelector(root)):
        name = info.base_name
        time = folder_time(day, name) if info.type == pafs.FileType.Directory else None
        if time is not None:
            parts[f"{day_folder.rstrip('/')}/{name}"] = time
        elif not (info.type == pafs.FileType.File and info.size == 0 and name.startswith(("_", "."))):
            other = True
    return parts, other
