"""Write a realistic, reproducible demo event set into a landing folder.

The set's shape (keys, daily cycle, values, delays, re-sends) is ``orchestration.event_set.shape``'s,
which ``bench.generate`` draws in Spark; this module draws it in Python, line by line. Why: the
pipeline (ingest -> minute partials -> sliding windows) has to be shown, tested and benchmarked on data that behaves like production traffic - a few heavy users and a long tail,
a daily rhythm, records that land a day or two late (and a few beyond the allowed lateness),
re-sent duplicates and a handful of broken lines - yet real logs cannot ship with the project,
and data that changes between runs makes results impossible to compare. So the set is built
from a seed: the same arguments always give byte-identical files, with no dependence on the
wall clock, the hash seed or the platform.

Layout: newline-delimited JSON under ``<landing>/<arrival date YYYY-MM-DD>/``, one file per
six-hour arrival batch (``events-<date>-<hh>.json`` or ``.json.gz``, plain and gzipped mixed),
lines in arrival order, each file's modification time set to the last second of its batch (so a
job that takes arrival time from the file sees a stable, realistic one). A record looks like::

    {"user_id": "u00042", "timestamp": "2025-01-30T12:45:10Z", "value": 3, "event_id": "..."}

``value`` is often omitted (a page view, value 1) and ``event_id`` is missing on a few records
(ingest then derives one by hashing the record). The key field's name is a parameter.

What the set contains, per event day:

- ``events_per_day`` events with whole-second UTC timestamps following a daily cycle (busy in
  the afternoon and evening (peak 17:00 UTC), quiet around 03:00-07:00) and Zipf-distributed keys.
- Arrival: most events land in their own event date's folder; ``late_share`` land one or two days
  later (``late_2d_share`` of all events two days later), within the pipeline's default allowed
  lateness of 2 days; ``beyond_share`` land 4 or 5 days later, beyond it. No event ever lands in
  a folder dated before its event date.
- Duplicates: about ``duplicate_share`` of the records carrying an event_id are re-sent as an
  identical line, later in the same folder or in the next day's folder.
- ``malformed_per_day`` broken lines cycling through :data:`MALFORMED_KINDS`.

Run alone: ``python -m orchestration.demo_events --landing DIR [--start YYYY-MM-DD] [--days N] ...``.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta, timezone
from pathlib import Path

from orchestration.event_set.landing_lines import (
    MALFORMED_KINDS,
    event_record,
    malformed_line,
    record_line,
    write_file,
)
from orchestration.event_set.python_draws import PythonDraws, new_event_id
from orchestration.event_set.shape import EventShape

__all__ = ["MALFORMED_KINDS", "DemoEventsSummary", "generate_demo_events", "generate_demo_purchases",
           "generate_demo_spine", "main"]

DEFAULT_START = date(2025, 1, 27)
SECONDS_PER_DAY = 86_400
BATCH_HOURS = (0, 6, 12, 18)  # one file per six-hour arrival batch

# A record waiting to be written: (absolute arrival second since start, day index, seq, line).
_Pending = tuple[int, int, int, str]


@dataclass(frozen=True)
class DemoEventsSummary:
    """What :func:`generate_demo_events` wrote.

    ``records_written == valid + duplicate + malformed``. ``late_1d``, ``late_2d`` and
    ``beyond_lateness`` break down ``valid`` (first copies only) by how many days after their
    event date they land; ``without_event_id`` counts valid records that carry no event_id.
    """

    records_written: int
    valid: int
    duplicate: int
    malformed: int
    late_1d: int
    late_2d: int
    beyond_lateness: int
    without_event_id: int
    malformed_by_kind: dict[str, int]
    folders_written: int
    files_written: int
    first_event_date: date
    last_event_date: date
    first_arrival_date: date | None
    last_arrival_date: date | None
    files: tuple[Path, ...] = field(repr=False)


@dataclass
class _Counts:
    valid: int = 0
    duplicate: int = 0
    late_1d: int = 0
    late_2d: int = 0
    beyond_lateness: int = 0
    without_event_id: int = 0
    malformed_by_kind: dict[str, int] = field(
        default_factory=lambda: {kind: 0 for kind in MALFORMED_KINDS}
    )


def generate_demo_events(
    landing: str | os.PathLike[str],
    *,
    start: date = DEFAULT_START,
    days: int = 8,
    events_per_day: int = 20_000,
    keys: int = 2_000,
    seed: int = 7,
    late_share: float = 0.03,
    late_2d_share: float = 0.005,
    beyond_share: float = 0.001,
    duplicate_share: float = 0.01,
    malformed_per_day: int = 6,
    key_field: str = "user_id",
) -> DemoEventsSummary:
    """Write the demo event set under ``landing`` and return what was written.

    Arrival folders span ``start`` .. last event day + 6 days; their existing ``*.json`` and
    ``*.json.gz`` files are replaced, so a rerun leaves the same folder contents.
    """
    start = _as_utc_date(start)
    _validate(days, events_per_day, keys, malformed_per_day, key_field)
    shape = EventShape(keys=keys, late_share=late_share, late_2d_share=late_2d_share, beyond_share=beyond_share,
                       duplicate_share=duplicate_share)
    draws = PythonDraws(shape, seed)
    counts = _Counts()
    pending: list[_Pending] = []
    for day_index in range(days):
        rng = random.Random(f"panes-demo:{seed}:day:{day_index}")
        pending.extend(_day_records(rng, draws, counts, start, day_index, events_per_day, key_field,
                                    malformed_per_day))
    files = _write_folders(Path(landing), start, days + shape.arrival_span_days, pending)
    return _summarise(counts, start, days, files)


def generate_demo_spine(
    path: str | os.PathLike[str],
    *,
    start: date = DEFAULT_START,
    days: int = 8,
    rows_per_day: int = 200,
    keys: int = 2_000,
    seed: int = 7,
    key_field: str = "user_id",
) -> int:
    """Write a small spine for the point-in-time join: labelled moments ``(key, country, ts,
    label)``, as Parquet files under ``path`` (replaced), and return its rows.

    The keys are the demo's, drawn with its popularity, each with its home country (that of
    its purchases, ``generate_demo_purchases``); the moments fall at random milliseconds of the
    demo's days, and one in four exactly on a minute (where every minute-sliding window ends),
    so the demo's join meets both bounds. Pure Python and pyarrow: no Spark.
    """
    import pyarrow as pa

    start = _as_utc_date(start)
    if rows_per_day <= 0 or days <= 0:
        raise ValueError("days and rows_per_day must be positive")
    draws = PythonDraws(EventShape(keys=keys), seed)
    rng = random.Random(f"panes-demo:{seed}:spine")
    midnight = datetime(start.year, start.month, start.day, tzinfo=timezone.utc)
    moments = []
    for day_index in range(days):
        for _ in range(rows_per_day):
            millisecond = rng.randrange(86_400_000)
            if rng.random() < 0.25:
                millisecond -= millisecond % 60_000
            moments.append(midnight + timedelta(days=day_index, milliseconds=millisecond))
    keys = draws.keys(rng, len(moments))
    table = pa.table({
        key_field: pa.array(keys, pa.string()),
        "country": pa.array([home_country(k, seed) for k in keys], pa.string()),
        "ts": pa.array(sorted(moments), pa.timestamp("us", tz="UTC")),
        "label": pa.array([rng.random() < 0.1 for _ in moments], pa.bool_()),
    })
    return _write_parquet(table, path)


COUNTRIES = ("CH", "DE", "FR", "IT", "AT", "NL")
CANCELLED_SHARE = 0.05  # purchases with quantity 0: the demo's filter leaves them out
ABROAD_SHARE = 0.1  # purchases made outside the buyer's home country


def home_country(key: str, seed: int = 7) -> str:
    """The country a demo key lives in: the same in every generator, for a seed."""
    return random.Random(f"panes-demo:{seed}:country:{key}").choice(COUNTRIES)


def generate_demo_purchases(
    path: str | os.PathLike[str],
    *,
    start: date = DEFAULT_START,
    days: int = 8,
    purchases_per_day: int = 2_000,
    keys: int = 2_000,
    seed: int = 7,
) -> int:
    """Write a table of purchases, the demo's second source (Parquet under ``path``, replaced),
    and return its rows: ``purchase_id``, ``user_id`` (the demo's keys and popularity),
    ``country`` (mostly the buyer's home country), ``ts``, ``price`` (decimal(10,2)),
    ``quantity`` (0 for a cancelled one) and ``loaded_at`` (when the row was loaded: minutes
    later, or for one in ten the next day). Pure Python and pyarrow: no Spark."""
    import decimal

    import pyarrow as pa

    start = _as_utc_date(start)
    if purchases_per_day <= 0 or days <= 0:
        raise ValueError("days and purchases_per_day must be positive")
    draws = PythonDraws(EventShape(keys=keys), seed)
    rng = random.Random(f"panes-demo:{seed}:purchases")
    midnight = datetime(start.year, start.month, start.day, tzinfo=timezone.utc)
    columns: dict[str, list] = {name: [] for name in
                                ("purchase_id", "user_id", "country", "ts", "price", "quantity", "loaded_at")}
    for day_index in range(days):
        buyers = draws.keys(rng, purchases_per_day)
        for buyer, second in zip(buyers, draws.seconds(rng, purchases_per_day)):
            moment = midnight + timedelta(days=day_index, seconds=second)
            delay = timedelta(days=1, hours=rng.randrange(6)) if rng.random() < 0.1 else timedelta(
                minutes=rng.randrange(1, 30))
            columns["purchase_id"].append(new_event_id(rng))
            columns["user_id"].append(buyer)
            columns["country"].append(rng.choice(COUNTRIES) if rng.random() < ABROAD_SHARE
                                      else home_country(buyer, seed))
            columns["ts"].append(moment)
            columns["price"].append(decimal.Decimal(rng.randrange(100, 20_000)).scaleb(-2))
            columns["quantity"].append(0 if rng.random() < CANCELLED_SHARE else rng.randint(1, 3))
            columns["loaded_at"].append(moment + delay)
    types = {"purchase_id": pa.string(), "user_id": pa.string(), "country": pa.string(),
             "ts": pa.timestamp("us", tz="UTC"), "price": pa.decimal128(10, 2), "quantity": pa.int64(),
             "loaded_at": pa.timestamp("us", tz="UTC")}
    return _write_parquet(pa.table({name: pa.array(values, types[name]) for name, values in columns.items()}), path)


def _write_parquet(table, path: str | os.PathLike[str]) -> int:
    """``table`` as the one Parquet file of the folder ``path`` (older ones removed); its rows."""
    import pyarrow.parquet as pq

    folder = Path(path)
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.parquet"):
        old.unlink()
    pq.write_table(table, folder / "part-0.parquet")
    return table.num_rows


def _timestamp(day_text: str, second: int) -> str:
    hours, rest = divmod(second, 3600)
    return f"{day_text}T{hours:02d}:{rest // 60:02d}:{rest % 60:02d}Z"


# --- one event day -----------------------------------------------------------------------------


def _day_records(
    rng: random.Random, draws: PythonDraws, counts: _Counts, start: date, day_index: int,
    n: int, key_field: str, malformed_per_day: int,
) -> list[_Pending]:
    """All lines whose event date is ``start + day_index``: originals, re-sends, broken lines."""
    day_text = (start + timedelta(days=day_index)).isoformat()
    day_start = day_index * SECONDS_PER_DAY
    shape = draws.shape
    originals: list[_Pending] = []
    with_ids: list[int] = []
    for second, key in zip(draws.seconds(rng, n), draws.keys(rng, n)):
        event_id = None if rng.random() < shape.missing_event_id_share else new_event_id(rng)
        line = record_line(event_record(key_field, key, _timestamp(day_text, second), draws.value(rng), event_id))
        delay = draws.delay_days(rng)
        arrival = _arrival(rng, day_start + second, delay, shape)
        _count_original(counts, delay, event_id is None)
        if event_id is not None:
            with_ids.append(len(originals))
        originals.append((arrival, day_index, len(originals), line))
    resends = _resends(rng, originals, with_ids, shape)
    counts.duplicate += len(resends)
    broken = _malformed(rng, draws, counts, day_text, day_index, key_field,
                        malformed_per_day, first_seq=len(originals) + len(resends))
    return originals + resends + broken


def _arrival(rng: random.Random, event_second: int, delay_days: int, shape: EventShape) -> int:
    """Absolute arrival second: shortly after the event, or at a random time days later."""
    if delay_days == 0:
        day_end = event_second - event_second % SECONDS_PER_DAY + SECONDS_PER_DAY - 1
        return min(event_second + int(rng.expovariate(1 / shape.on_time_delay_s)), day_end)
    folder_start = (event_second // SECONDS_PER_DAY + delay_days) * SECONDS_PER_DAY
    return folder_start + rng.randrange(SECONDS_PER_DAY)


def _count_original(counts: _Counts, delay_days: int, without_event_id: bool) -> None:
    counts.valid += 1
    counts.without_event_id += without_event_id
    if delay_days == 1:
        counts.late_1d += 1
    elif delay_days == 2:
        counts.late_2d += 1
    elif delay_days > 2:
        counts.beyond_lateness += 1


def _resends(rng: random.Random, originals: list[_Pending], with_ids: list[int],
             shape: EventShape) -> list[_Pending]:
    """Identical copies of some records, landing after their original."""
    resends: list[_Pending] = []
    for index in with_ids:
        if rng.random() >= shape.duplicate_share:
            continue
        arrival, day_index, _, line = originals[index]
        folder_start = arrival - arrival % SECONDS_PER_DAY
        if rng.random() < shape.duplicate_same_folder_share:
            again = min(arrival + 1 + int(rng.expovariate(1 / shape.resend_delay_s)),
                        folder_start + SECONDS_PER_DAY - 1)
        else:
            again = folder_start + SECONDS_PER_DAY + rng.randrange(SECONDS_PER_DAY)
        resends.append((again, day_index, len(originals) + len(resends), line))
    return resends


def _malformed(
    rng: random.Random, draws: PythonDraws, counts: _Counts, day_text: str, day_index: int,
    key_field: str, how_many: int, first_seq: int,
) -> list[_Pending]:
    """Broken lines, cycling through MALFORMED_KINDS, landing on their event day."""
    broken: list[_Pending] = []
    for offset in range(how_many):
        kind = MALFORMED_KINDS[(day_index * how_many + offset) % len(MALFORMED_KINDS)]
        second = draws.seconds(rng, 1)[0]
        key = draws.keys(rng, 1)[0]
        line = malformed_line(rng, kind, key_field, key, _timestamp(day_text, second), new_event_id(rng))
        arrival = day_index * SECONDS_PER_DAY + rng.randrange(SECONDS_PER_DAY)
        broken.append((arrival, day_index, first_seq + offset, line))
        counts.malformed_by_kind[kind] += 1
    return broken


# --- writing -----------------------------------------------------------------------------------


def _write_folders(landing: Path, start: date, folder_count: int,
                   pending: list[_Pending]) -> list[Path]:
    """Replace the files of every arrival folder in range; one file per non-empty batch."""
    by_folder: list[list[_Pending]] = [[] for _ in range(folder_count)]
    for record in pending:
        by_folder[record[0] // SECONDS_PER_DAY].append(record)
    written: list[Path] = []
    for folder_index, records in enumerate(by_folder):
        folder_date = start + timedelta(days=folder_index)
        folder = landing / folder_date.isoformat()
        _clear_landing_files(folder)
        records.sort()
        for batch_index, lines in enumerate(_batches(records)):
            if lines:
                gzipped = (folder_index + batch_index) % 2 == 1
                written.append(_write_batch(folder, folder_date, batch_index, lines, gzipped))
    return written


def _batches(records: list[_Pending]) -> list[list[str]]:
    batches: list[list[str]] = [[] for _ in BATCH_HOURS]
    for arrival, _, _, line in records:
        hour = arrival % SECONDS_PER_DAY // 3600
        index = max(i for i, first_hour in enumerate(BATCH_HOURS) if hour >= first_hour)
        batches[index].append(line)
    return batches


def _clear_landing_files(folder: Path) -> None:
    if not folder.is_dir():
        return
    for path in sorted(folder.iterdir()):
        if path.is_file() and (path.name.endswith((".json", ".json.gz", ".tmp"))):
            path.unlink()


def _write_batch(folder: Path, folder_date: date, batch_index: int, lines: list[str],
                 gzipped: bool) -> Path:
    name = f"events-{folder_date.isoformat()}-{BATCH_HOURS[batch_index]:02d}.json" + (".gz" if gzipped else "")
    batch_closed = datetime.combine(folder_date, time(BATCH_HOURS[batch_index]), timezone.utc) + (
        timedelta(hours=24 // len(BATCH_HOURS), seconds=-1))
    return write_file(folder / name, lines, gzipped=gzipped, modified=batch_closed.timestamp())


# --- summary and validation --------------------------------------------------------------------


def _summarise(counts: _Counts, start: date, days: int, files: list[Path]) -> DemoEventsSummary:
    malformed = sum(counts.malformed_by_kind.values())
    folders = sorted({path.parent for path in files})
    arrival_dates = [date.fromisoformat(folder.name) for folder in folders]
    return DemoEventsSummary(
        records_written=counts.valid + counts.duplicate + malformed,
        valid=counts.valid,
        duplicate=counts.duplicate,
        malformed=malformed,
        late_1d=counts.late_1d,
        late_2d=counts.late_2d,
        beyond_lateness=counts.beyond_lateness,
        without_event_id=counts.without_event_id,
        malformed_by_kind=dict(counts.malformed_by_kind),
        folders_written=len(folders),
        files_written=len(files),
        first_event_date=start,
        last_event_date=start + timedelta(days=days - 1),
        first_arrival_date=arrival_dates[0] if arrival_dates else None,
        last_arrival_date=arrival_dates[-1] if arrival_dates else None,
        files=tuple(files),
    )


def _as_utc_date(value: date) -> date:
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError("start must be a date or a timezone-aware datetime")
        return value.astimezone(timezone.utc).date()
    if not isinstance(value, date):
        raise ValueError(f"start must be a date, got {value!r}")
    return value


def _validate(days: int, events_per_day: int, keys: int, malformed_per_day: int, key_field: str) -> None:
    """The arguments the shape does not hold (``EventShape`` checks its own)."""
    if days < 1:
        raise ValueError(f"days must be >= 1, got {days}")
    if events_per_day < 0:
        raise ValueError(f"events_per_day must be >= 0, got {events_per_day}")
    if keys < 1:
        raise ValueError(f"keys must be >= 1, got {keys}")
    if malformed_per_day < 0:
        raise ValueError(f"malformed_per_day must be >= 0, got {malformed_per_day}")
    if not key_field or key_field in ("timestamp", "value", "event_id"):
        raise ValueError(f"key_field must be a non-empty name other than timestamp/value/event_id, "
                         f"got {key_field!r}")


# --- command line ------------------------------------------------------------------------------


def _date_arg(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a date (YYYY-MM-DD): {text!r}") from None


def _int_arg(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            number = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if number < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {number}")
        return number

    return parse


def _share_arg(text: str) -> float:
    try:
        share = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 <= share <= 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {share}")
    return share


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m orchestration.demo_events",
        description="Write a seeded, realistic demo event set (newline-delimited JSON, plain and "
                    "gzipped) under LANDING/<arrival date>/. Same arguments, same bytes.",
    )
    parser.add_argument("--landing", required=True, type=Path, help="landing folder to write into")
    parser.add_argument("--start", type=_date_arg, default=DEFAULT_START,
                        help="first event date, YYYY-MM-DD (default %(default)s)")
    parser.add_argument("--days", type=_int_arg(1), default=8,
                        help="number of event days (default %(default)s)")
    parser.add_argument("--events-per-day", type=_int_arg(0), default=20_000,
                        help="events per event day (default %(default)s)")
    parser.add_argument("--keys", type=_int_arg(1), default=2_000,
                        help="number of distinct keys, Zipf-distributed (default %(default)s)")
    parser.add_argument("--seed", type=_int_arg(-(2**63)), default=7,
                        help="random seed (default %(default)s)")
    parser.add_argument("--late-share", type=_share_arg, default=0.03,
                        help="share of events landing 1-2 days late (default %(default)s)")
    parser.add_argument("--duplicate-share", type=_share_arg, default=0.01,
                        help="share of records re-sent with the same event_id "
                             "(default %(default)s)")
    parser.add_argument("--key-field", default="user_id",
                        help="name of the key field (default %(default)s)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        summary = generate_demo_events(
            args.landing, start=args.start, days=args.days, events_per_day=args.events_per_day,
            keys=args.keys, seed=args.seed, late_share=args.late_share,
            late_2d_share=min(0.005, args.late_share), duplicate_share=args.duplicate_share,
            key_field=args.key_field,
        )
    except ValueError as exc:
        parser.error(str(exc))
    except OSError as exc:
        print(f"{parser.prog}: error: cannot write {args.landing}: {exc.strerror or exc}",
              file=sys.stderr)
        return 1
    print(
        f"wrote {summary.records_written} records ({summary.valid} valid, {summary.duplicate} "
        f"duplicate, {summary.malformed} malformed; late {summary.late_1d} +1d, {summary.late_2d} "
        f"+2d, {summary.beyond_lateness} beyond lateness) in {summary.files_written} files, "
        f"{summary.folders_written} folders "
        f"{summary.first_arrival_date}..{summary.last_arrival_date} under {args.landing}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
