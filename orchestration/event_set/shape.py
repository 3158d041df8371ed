"""What a generated event set looks like, defined once for the Python and the Spark sampler:
a few heavy keys and a long tail, a daily rhythm, values mostly 1, records landing a day or two
late (a few beyond the allowed lateness) and re-sent duplicates."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class EventShape:
    """The distributions of a set; every share is of the events of a day.

    Keys: ``keys`` ids ``u00001 ..``, rank r drawn with weight ``1 / r**zipf_exponent``, the
    ranks shuffled over the ids so popularity is not tied to the number. Time of day: traffic
    ``1 + cycle_amplitude * cos(2 pi (hour - peak_hour_utc) / 24)``. Value: omitted (ingest's
    default, 1) or 1, else uniform in ``value_range``. Arrival: on the event's day
    (``on_time_delay_s`` on average after it), or one or two days later, or ``beyond_delay_days``
    later. Re-sends: identical lines, most in the same folder, the rest in the next day's."""

    keys: int = 2_000
    zipf_exponent: float = 1.1
    peak_hour_utc: float = 17.0
    cycle_amplitude: float = 0.75
    value_omitted_share: float = 0.5
    value_one_share: float = 0.3
    value_range: tuple[int, int] = (1, 5)
    missing_event_id_share: float = 0.04
    late_share: float = 0.03  # one or two days late, within the default allowed lateness
    late_2d_share: float = 0.005  # of which two days
    beyond_share: float = 0.001
    beyond_delay_days: tuple[int, ...] = (4, 5)
    on_time_delay_s: float = 45.0
    duplicate_share: float = 0.01
    duplicate_same_folder_share: float = 0.7
    resend_delay_s: float = 600.0  # a re-send in the same folder, on average after its original

    def __post_init__(self) -> None:
        if self.keys < 1:
            raise ValueError(f"keys must be >= 1, got {self.keys}")
        for name in ("late_share", "late_2d_share", "beyond_share", "duplicate_share"):
            share = getattr(self, name)
            if not 0.0 <= share <= 1.0:
                raise ValueError(f"{name} must be between 0 and 1, got {share}")
        if self.late_2d_share > self.late_share:
            raise ValueError(f"late_2d_share ({self.late_2d_share}) must not exceed late_share ({self.late_share})")
        if self.late_share + self.beyond_share > 1.0:
            raise ValueError("late_share + beyond_share must not exceed 1")

    @property
    def arrival_span_days(self) -> int:
        """How many days after its event day a line may land: the latest delay, plus a re-send's day."""
        return max(self.beyond_delay_days) + 1

    @property
    def key_format(self) -> str:
        """The ids' printf format: ``u`` and the number, at least five digits."""
        return f"u%0{max(5, len(str(self.keys)))}d"

    def key_weight(self, rank: int) -> float:
        """The relative popularity of the key of ``rank`` (1 the most popular)."""
        return 1.0 / rank**self.zipf_exponent

    def traffic(self, hour_utc: Any, cos: Callable[[Any], Any] = math.cos) -> Any:
        """Relative traffic at a time of day (hours, UTC). ``cos`` for a Spark column: ``F.cos``."""
        return 1.0 + self.cycle_amplitude * cos(2 * math.pi * (hour_utc - self.peak_hour_utc) / 24)

    def traffic_share_until(self, hour_utc: Any, sin: Callable[[Any], Any] = math.sin) -> Any:
        """The share of a day's traffic before ``hour_utc``: the integral of :meth:`traffic`, which
        the Spark sampler inverts (``sin``: ``F.sin`` there)."""
        wave = 24 * self.cycle_amplitude / (2 * math.pi)
        phase = 2 * math.pi / 24
        return (hour_utc + wave * (sin(phase * (hour_utc - self.peak_hour_utc))
                                   - math.sin(phase * -self.peak_hour_utc))) / 24
