"""A step interrupted in the middle of a Spark call, in a process of its own (``test_progress``).

Dagster terminates a run by raising ``DagsterExecutionInterruptedError`` in the step's thread
from its SIGINT handler, while the thread waits in a py4j call for its Spark job. py4j closes
the connection of a call broken off by a ``KeyboardInterrupt`` but keeps it after any other
interrupt, a reply behind, so this thread's next call would read the last one's reply: a test
session could not go on after it. Prints what the step saw as one JSON line.
"""

import json
import os
import signal
import sys
import threading
import time

from pyspark.sql import functions as F

from jobs.runtime import progress
from jobs.runtime.spark_session import get_spark


class Terminated(BaseException):
    """As Dagster's ``DagsterExecutionInterruptedError``: a BaseException, not a KeyboardInterrupt."""


def terminate(signum, frame):
    raise Terminated()


def main() -> None:
    spark = get_spark({"spark.master": "local[2]", "spark.ui.enabled": "false", "spark.driver.memory": "1g"})
    sc, lines, groups = spark.sparkContext, [], []
    tracker, main = sc.statusTracker(), threading.main_thread().ident

    def interrupt_once_the_job_runs():
        while not (groups and tracker.getJobIdsForGroup(groups[0])):
            time.sleep(0.05)
        signal.pthread_kill(main, signal.SIGINT)  # as from another process: to the main thread

    signal.signal(signal.SIGINT, terminate)
    raised = None
    try:
        with progress.reported(spark, "terminated work", lines.append, every=60):
            groups.append(sc.getLocalProperty("spark.jobGroup.id"))
            threading.Thread(target=interrupt_once_the_job_runs, daemon=True).start()
            # A write, as the jobs' long calls are: an action such as count() would not even
            # surface the interrupt before its job ended (PySpark's call-site hook on the way out
            # speaks to the JVM on the same connection, and waits for the interrupted reply).
            slow = F.udf(lambda x: time.sleep(120) or x, "long")
            spark.range(0, 2, 1, 2).select(slow("id")).write.format("noop").mode("overwrite").save()
    except BaseException as err:
        raised = type(err).__name__
    deadline = time.monotonic() + 20

    def statuses():
        return [tracker.getJobInfo(j).status for j in tracker.getJobIdsForGroup(groups[0])]

    while progress._off_thread(statuses) == ["RUNNING"] and time.monotonic() < deadline:
        time.sleep(0.1)
    print(json.dumps({"raised": raised, "lines": lines, "statuses": progress._off_thread(statuses)}), flush=True)
    sys.stdout.flush()
    os._exit(0)  # no exit handlers: they would speak to the JVM from this thread


if __name__ == "__main__":
    main()
