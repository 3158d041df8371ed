"""Independent Spark actions of one step in threads of their own, on one session.

A small table's write or check is mostly fixed latency (planning, scheduling, Delta's log, a
commit) during which the cores idle: two such actions side by side overlap it. The threads
inherit the caller's job group and tags (classic or Connect), so progress and cancellation
cover them, and each call's Spark jobs carry its label in Spark's UI.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pyspark.util import inheritable_thread_target

from jobs.runtime.progress import described


def side_by_side(spark: Any, calls: dict[str, Callable[[], Any]]) -> list[Any]:
    """Each call in a thread of its own, its Spark jobs described by its label
    (``progress.described``), their results in order; the first failure raised once all have ended."""

    def labelled(label: str, call: Callable[[], Any]) -> Callable[[], Any]:
        def run() -> Any:
            with described(spark, label):
                return call()
        return run

    runs = [labelled(label, call) for label, call in calls.items()]
    if len(runs) == 1:
        return [runs[0]()]
    # One wrapper per call: a wrapper copies the caller's properties once, and threads wrapped by
    # the same one would share that copy, each label overwriting the others'.
    with ThreadPoolExecutor(max_workers=len(runs), thread_name_prefix="panes-side-by-side") as pool:
        futures = [pool.submit(inheritable_thread_target(spark)(run)) for run in runs]
    return [future.result() for future in futures]
