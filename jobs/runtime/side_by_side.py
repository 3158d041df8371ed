"""Independent Spark actions of one step in threads of their own, on one session.

A small table's write or check is mostly fixed latency (planning, scheduling, Delta's log, a
commit) during which the cores idle: two such actions side by side overlap it. The threads
inherit the caller's job group and tags (classic or Connect), so progress and cancellation
cover them.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pyspark.util import inheritable_thread_target


def side_by_side(spark: Any, calls: list[Callable[[], Any]]) -> list[Any]:
    """Each call in a thread of its own, their results in order; the first failure raised once
    all have ended."""
    if len(calls) == 1:
        return [calls[0]()]
    inherit = inheritable_thread_target(spark)
    with ThreadPoolExecutor(max_workers=len(calls), thread_name_prefix="panes-side-by-side") as pool:
        futures = [pool.submit(inherit(call)) for call in calls]
    return [future.result() for future in futures]
