"""Change-point rules: emit a key's window value only when it differs from the one before.

A key's value at any time ``t`` is the value of its latest change point at or before ``t``;
before its first change point it is the empty value (``finish`` of the empty partial). So the
step back down to empty, when a key's last frame leaves its window, is itself a change point.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator
from typing import TypeVar

V = TypeVar("V", bound=Hashable)


def change_points(values: Iterable[tuple[int, V]], previous: V) -> Iterator[tuple[int, V]]:
    """Keep the ``(window_end, value)`` pairs whose value differs from the one before.

    ``values`` must be in window-end order; ``previous`` is the value just before the first.
    """
    for window_end, value in values:
        if value != previous:
            yield window_end, value
            previous = value
