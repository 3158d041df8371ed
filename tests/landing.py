"""Random landing folders for property tests, with the oracle's view of the same records."""

from __future__ import annotations

import gzip
import hashlib
import json
import random
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

from windowing_core.reference import Event


@dataclass
class Landing:
    root: Path
    events: list[Event] = field(default_factory=list)  # every valid record, as the oracle sees it
    lines: int = 0
    malformed: int = 0


def random_landing(root: Path, seed: int, first: date, event_days: int, *, keys: int = 4,
                   events_per_day: int = 40, max_delay_days: int = 3,
                   key_names: tuple[str, ...] | None = None) -> Landing:
    """Events over ``event_days`` days, arriving up to ``max_delay_days`` late, with duplicates
    (same and different payloads, on the same and later arrival days), events without an
    event_id, and a few malformed lines. Keys are ``k0 .. k<keys - 1>``, or ``key_names``."""
    names = key_names or tuple(f"k{i}" for i in range(keys))
    rng = random.Random(seed)
    landing = Landing(root)
    files: dict[tuple[date, int], list[str]] = {}
    serial = 0
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
            record = {"user_id": names[rng.randrange(len(names))], "timestamp": moment.strftime("%Y-%m-%dT%H:%M:%SZ")}
            if rng.random() < 0.7:
                record["value"] = rng.randrange(-3, 10)
            if rng.random() < 0.8:
                record["event_id"] = f"e{serial}"
            arrival_day = day + timedelta(days=delay)
            day_end = datetime(arrival_day.year, arrival_day.month, arrival_day.day, tzinfo=timezone.utc) + timedelta(days=1)
            arrived = (moment + timedelta(seconds=rng.randrange(900)) if delay == 0
                       else day_end - timedelta(seconds=1 + rng.randrange(86400)))
            record["arrival_time"] = min(arrived, day_end - timedelta(seconds=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
            copies = [(arrival_day, record)]
            roll = rng.random()
            if roll < 0.1:  # same payload again, same or a later day
                copies.append((day + timedelta(days=delay + rng.randrange(2)), record))
            elif roll < 0.15 and "event_id" in record:  # same id, another value
                copies.append((day + timedelta(days=delay), {**record, "value": 100}))
            elif roll < 0.18 and "event_id" in record:  # re-sent a day later, smaller: the first arrival wins
                copies.append((day + timedelta(days=delay + 1), {**record, "value": -100}))
            for arrival, rec in copies:
                file_no = rng.randrange(2)
                line = json.dumps(rec)
                in_file = files.setdefault((arrival, file_no), [])
                in_file.append(line)
                landing.events.append(Event(
                    key=rec["user_id"], event_time=moment, value=rec.get("value", 1),
                    event_id=rec.get("event_id") or hashlib.sha256(line.strip().encode()).hexdigest()[:32],
                    arrival_date=arrival,
                    source_file=_file_name(arrival, file_no), raw=line, line=len(in_file),
                    arrival_time=datetime.strptime(rec["arrival_time"], "%Y-%m-%dT%H:%M:%SZ").replace(
                        tzinfo=timezone.utc)))
        for bad in ('{"user_id": "k1", "timestamp": "soon"}', "not json", '{"timestamp": "2025-01-01T00:00:00Z"}'):
            if rng.random() < 0.5:
                files.setdefault((day, 0), []).append(bad)
                landing.malformed += 1
    for (arrival, file_no), lines in sorted(files.items()):
        folder = root / arrival.isoformat()
        folder.mkdir(parents=True, exist_ok=True)
        data = ("\n".join(lines) + "\n").encode()
        path = folder / _file_name(arrival, file_no)
        path.write_bytes(gzip.compress(data, mtime=0) if path.suffix == ".gz" else data)
        landing.lines += len(lines)
    return landing


def _file_name(arrival: date, file_no: int) -> str:
    return f"part-{file_no}.json.gz" if file_no else f"part-{file_no}.json"


def ensure_days(root: Path, first: date, last: date) -> None:
    """Create empty landing folders so every arrival day in range exists."""
    day = first
    while day <= last:
        (root / day.isoformat()).mkdir(parents=True, exist_ok=True)
        day += timedelta(days=1)
