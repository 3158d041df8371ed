"""The shape's distributions drawn with Python's ``random``, from seeded generators only, so the
same seed gives the same set on every machine: the demo's sampler, and any small set a tool lands."""

from __future__ import annotations

import random
from collections.abc import Iterable

from orchestration.event_set.shape import EventShape


def _cumulative(weights: Iterable[float]) -> tuple[float, ...]:
    total, out = 0.0, []
    for weight in weights:
        total += weight
        out.append(total)
    return tuple(out)


class PythonDraws:
    """A set's keys (shuffled over their popularity ranks once, from the seed) and cumulative
    weights of key popularity and minute-of-day traffic, shared by every day it draws."""

    def __init__(self, shape: EventShape, seed: int = 7) -> None:
        self.shape = shape
        key_ids = [shape.key_format % number for number in range(1, shape.keys + 1)]
        random.Random(f"panes-demo:{seed}:keys").shuffle(key_ids)  # popularity is not tied to the number
        self.key_ids = tuple(key_ids)  # by popularity rank, most popular first
        self._key_weights = _cumulative(shape.key_weight(rank) for rank in range(1, shape.keys + 1))
        self._minute_weights = _cumulative(shape.traffic(minute / 60) for minute in range(1440))

    def keys(self, rng: random.Random, n: int) -> list[str]:
        return rng.choices(self.key_ids, cum_weights=self._key_weights, k=n)

    def seconds(self, rng: random.Random, n: int) -> list[int]:
        """Whole seconds of the day, following the daily cycle, in event-time order."""
        minutes = rng.choices(range(1440), cum_weights=self._minute_weights, k=n)
        return sorted(minute * 60 + rng.randrange(60) for minute in minutes)

    def value(self, rng: random.Random) -> int | None:
        """None where the value is omitted (ingest's default, 1)."""
        shape, draw = self.shape, rng.random()
        if draw < shape.value_omitted_share:
            return None
        if draw < shape.value_omitted_share + shape.value_one_share:
            return 1
        return rng.randint(*shape.value_range)

    def delay_days(self, rng: random.Random) -> int:
        shape, draw = self.shape, rng.random()
        if draw < shape.beyond_share:
            return rng.choice(shape.beyond_delay_days)
        if draw < shape.beyond_share + shape.late_2d_share:
            return 2
        if draw < shape.beyond_share + shape.late_share:
            return 1
        return 0


def new_event_id(rng: random.Random) -> str:
    """A version-4 UUID string drawn from ``rng`` (so it is reproducible)."""
    bits = rng.getrandbits(128)
    bits = (bits & ~(0xF << 76)) | (0x4 << 76)  # version 4
    bits = (bits & ~(0x3 << 62)) | (0x2 << 62)  # RFC 4122 variant
    text = f"{bits:032x}"
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"
