"""Random landing folders for property tests, with the oracle's view of the same records.

Its draws are hostile on purpose, unlike the generated set's realistic shape
(``orchestration.event_set``): four keys so every window sees collisions, events clustered at
midnight, ties, typed values on a grid and altered re-sends. Its lines and files are the set's."""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass, field, replace
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

from pyspark.sql import functions as F

from orchestration.event_set.landing_lines import record_line, write_file
from windowing_core.reference import Event

INSTANT = "%Y-%m-%dT%H:%M:%SZ"
"""How a landed record spells its instants (UTC, whole seconds)."""


def _instant(text: str) -> datetime:
    return datetime.strptime(text, INSTANT).replace(tzinfo=timezone.utc)


@dataclass
class Landing:
    root: Path
    events: list[Event] = field(default_factory=list)  # every valid record, as the oracle sees it
    lines: int = 0
    malformed: int = 0


def random_value(ddl: str, rng: random.Random) -> Any:
    """A random value of a declared field's Spark type, as ingest reads it from its JSON text:
    negatives, repeats, longs whose sums pass 2**63, decimals at their scale, doubles on a grid
    of quarters (whose sums no order of addition rounds, so windows compare exactly)."""
    if ddl == "bigint":
        return rng.choice([rng.randrange(-3, 10), rng.randrange(-3, 10), 2**62 + rng.randrange(5)])
    if ddl.startswith("decimal"):
        scale = int(ddl.rstrip(")").split(",")[1])
        return Decimal(rng.randrange(-10**4, 10**5)).scaleb(-scale)
    if ddl == "double":
        return rng.randrange(-400, 400) / 4
    if ddl == "string":
        return rng.choice(["home", "cart", "", "Zürich", "a b", "home"])
    return rng.random() < 0.5


BAD_TYPED_VALUES = {"bigint": 1.5, "double": "fast", "string": 7, "boolean": "yes"}
"""A value each type's field quarantines (decimals: one digit beyond their scale)."""


def random_landing(root: Path, seed: int, first: date, event_days: int, *, keys: int = 4,
                   events_per_day: int = 40, max_delay_days: int = 3,
                   key_names: tuple[str, ...] | None = None,
                   fields: dict[str, str] | None = None, key_fields: tuple[str, ...] = (),
                   ties: float = 0.0, part_hours: tuple[int, ...] = ()) -> Landing:
    """Events over ``event_days`` days, arriving up to ``max_delay_days`` late, with duplicates
    (same and different payloads, on the same and later arrival days), events without an
    event_id, and a few malformed lines. Keys are ``k0 .. k<keys - 1>``, or ``key_names``.

    With ``fields`` (declared name to Spark type), each record carries those fields instead of
    ``value``: each one missing, null or a ``random_value``, and some days hold a record with
    a value its field quarantines.

    With ``key_fields`` (a composite key: ``user_id`` and more), each record carries the others
    too, drawn from ``KEY_PARTS``, and some days hold a record missing one (``missing_key``).

    ``ties``: the share of events at the same instant and key as the event before them.

    ``part_hours``: the day arrives in parts, each file in a ``<HH>/`` folder of one of these hours
    or in the day's folder itself (drawn from a generator of its own: the records stay as they are),
    and some events with an id are re-sent a day later at another instant of their day (from a
    third generator), so that a part's copy of an id can lose to one another part holds."""
    names = key_names or tuple(f"k{i}" for i in range(keys))
    rng = random.Random(seed)
    landing = Landing(root)
    files: dict[tuple[date, int | None, int], list[str]] = {}
    placing = random.Random(seed + 1)
    moving = random.Random(seed + 2)
    serial = 0
    previous = None  # the last event's (moment, key): ``ties`` repeat it
    for day_index in range(event_days):
        day = first + timedelta(days=day_index)
        for _ in range(events_per_day):
            serial += 1
            moment = datetime(day.year, day.month, day.day, tzinfo=timezone.utc) + timedelta(
                seconds=rng.randrange(86400))
            # cluster some events near midnight so windows cross day boundaries
            if rng.random() < 0.2:
                moment = moment.replace(hour=rng.choice([0, 23]))
            delay = rng.choices(range(max_delay_days + 1), weights=[80, 12, 5, 3][: max_delay_days + 1])[0]
            user = names[rng.randrange(len(names))]
            if ties and previous and rng.random() < ties:
                moment, user = previous
            previous = moment, user
            record = {"user_id": user, "timestamp": moment.strftime(INSTANT),
                      **{name: rng.choice(KEY_PARTS) for name in key_fields[1:]}}
            if fields:
                for name, ddl in fields.items():
                    roll = rng.random()
                    if roll < 0.85:
                        record[name] = random_value(ddl, rng)
                    elif roll < 0.92:
                        record[name] = None
            elif rng.random() < 0.7:
                record["value"] = rng.randrange(-3, 10)
            if rng.random() < 0.8:
                record["event_id"] = f"e{serial}"
            arrival_day = day + timedelta(days=delay)
            day_end = datetime(arrival_day.year, arrival_day.month, arrival_day.day, tzinfo=timezone.utc) + timedelta(days=1)
            arrived = (moment + timedelta(seconds=rng.randrange(900)) if delay == 0
                       else day_end - timedelta(seconds=1 + rng.randrange(86400)))
            record["arrival_time"] = min(arrived, day_end - timedelta(seconds=1)).strftime(INSTANT)
            copies = [(arrival_day, record)]
            roll = rng.random()
            if roll < 0.1:  # same payload again, same or a later day
                copies.append((day + timedelta(days=delay + rng.randrange(2)), record))
            elif roll < 0.15 and "event_id" in record:  # same id, another value
                copies.append((day + timedelta(days=delay), _altered(record, 100, fields, rng)))
            elif roll < 0.18 and "event_id" in record:  # re-sent a day later, smaller: the first arrival wins
                copies.append((day + timedelta(days=delay + 1), _altered(record, -100, fields, rng)))
            if part_hours and "event_id" in record and moving.random() < 0.15:  # moved, re-sent: the first wins
                moved = datetime(day.year, day.month, day.day, tzinfo=timezone.utc) + timedelta(
                    seconds=moving.randrange(86400))
                copies.append((day + timedelta(days=delay + 1),
                               {**record, "timestamp": moved.strftime(INSTANT)}))
            for arrival, rec in copies:
                file_no = rng.randrange(2)
                hour = placing.choice([None, *part_hours]) if part_hours else None
                line = record_line(rec)
                in_file = files.setdefault((arrival, hour, file_no), [])
                in_file.append(line)
                landing.events.append(Event(
                    key=composite_key(rec, key_fields) if key_fields else rec["user_id"],
                    event_time=_instant(rec["timestamp"]),
                    value=None if fields else rec.get("value", 1),
                    fields=tuple((name, rec.get(name)) for name in fields or ()),
                    event_id=rec.get("event_id") or hashlib.sha256(line.strip().encode()).hexdigest()[:32],
                    arrival_date=arrival,
                    source_file=_file_name(hour, file_no), raw=line, line=len(in_file),
                    arrival_time=_instant(rec["arrival_time"]),
                    arrival_part=None if hour is None else datetime(
                        arrival.year, arrival.month, arrival.day, hour, tzinfo=timezone.utc)))
        bad_lines = ['{"user_id": "k1", "timestamp": "soon"}', "not json", '{"timestamp": "2025-01-01T00:00:00Z"}',
                     *(record_line({"user_id": "k1", "timestamp": f"{day.isoformat()}T12:00:00Z", name: bad})
                       for name in key_fields[1:] for bad in (" ", 7))]
        for name, ddl in (fields or {}).items():
            bad = (Decimal(1).scaleb(-int(ddl.rstrip(")").split(",")[1]) - 1) if ddl.startswith("decimal")
                   else BAD_TYPED_VALUES[ddl])
            bad_lines.append(record_line({"user_id": "k1", "timestamp": f"{day.isoformat()}T12:00:00Z", name: bad}))
        for bad in bad_lines:
            if rng.random() < 0.5:
                files.setdefault((day, None, 0), []).append(bad)
                landing.malformed += 1
    for (arrival, hour, file_no), lines in sorted(files.items(), key=lambda item: (item[0][0], str(item[0][1:]))):
        path = root / arrival.isoformat() / _file_name(hour, file_no)
        write_file(path, lines, gzipped=path.suffix == ".gz")
        landing.lines += len(lines)
    return landing


KEY_PARTS = ("CH", "DE", "Zürich", "a b")
"""The values of a composite key's other fields: one not ASCII, one with a blank inside."""


def composite_key(record: dict, key_fields: tuple[str, ...]) -> str:
    """A composite key as ingest makes it: its fields' values as a JSON array of strings."""
    return json.dumps([record[name] for name in key_fields], ensure_ascii=False, separators=(",", ":"))


def _altered(record: dict, value: int, fields: dict[str, str] | None, rng: random.Random) -> dict:
    """The record with other values: ``value`` without declared fields, else each field drawn again."""
    if not fields:
        return {**record, "value": value}
    return {**record, **{name: random_value(ddl, rng) for name, ddl in fields.items()}}


def _file_name(hour: int | None, file_no: int) -> str:
    """A file's path inside its arrival day's folder."""
    name = f"part-{file_no}.json.gz" if file_no else f"part-{file_no}.json"
    return name if hour is None else f"{hour:02d}/{name}"


def ensure_days(root: Path, first: date, last: date) -> None:
    """Create empty landing folders so every arrival day in range exists."""
    day = first
    while day <= last:
        (root / day.isoformat()).mkdir(parents=True, exist_ok=True)
        day += timedelta(days=1)


def with_row_expressions(spark, events, config):
    """The oracle's events with what Spark SQL says of each record (``reference`` step 5): the
    computed fields' values and whether the filter selects it, for every copy before any
    deduplication; what becomes of them afterwards is the oracle's to compute."""
    inputs = [row for a in config.aggregations for row in a.row_expressions]  # custom aggregations' partials
    if not config.columns and config.where is None and not inputs:
        return events
    source, declared = config.source_fields, dict(config.measured_fields)
    doubles = {n for n, t in source if t == "double"}
    rows = [(i, e.key, e.event_time, *(float(v) if n in doubles and v is not None else v
                                       for n, v in ((n, e.field(n)) for n, _ in source)))
            for i, e in enumerate(events)]
    schema = ", ".join(["i int", "key string", "event_time timestamp", *(f"`{n}` {t}" for n, t in source)])
    frame = spark.createDataFrame(rows, schema).withColumns(
        {n: F.expr(sql).cast(declared[n]) for n, sql in config.columns})
    verdict = F.coalesce(F.expr(config.where), F.lit(False)) if config.where is not None else F.lit(True)
    frame = frame.withColumns({f"_input{j}": F.expr(sql).cast(ddl) for j, (_, sql, ddl) in enumerate(inputs)})
    derived = {r["i"]: r for r in frame.withColumn("_selected", verdict).collect()}
    return [replace(e, fields=(*e.fields, *((n, derived[i][n]) for n, _ in config.columns),
                               *((n, derived[i][f"_input{j}"]) for j, (n, _, _) in enumerate(inputs))),
                    selected=derived[i]["_selected"]) for i, e in enumerate(events)]
