"""One Spark driver of ``test_concurrent_writers``: replaces its own partitions of a shared table.

Run as ``python -m tests.jobs.storage.concurrent_writer TABLE WRITER COMMITS``: the writer's COMMITS
partitions ``part = "<WRITER>-<i>"``, each one replace (one commit), as fast as it can, while the
other drivers do the same to theirs. With ``--unlocked`` it skips panes' table lock, to show
what the lock prevents. Prints one JSON line: the table versions its commits got.
"""

import argparse
import contextlib
import json

from jobs.runtime.spark_session import get_spark
from jobs.storage import delta_write


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("table")
    parser.add_argument("writer")
    parser.add_argument("commits", type=int)
    parser.add_argument("--unlocked", action="store_true")
    args = parser.parse_args()
    if args.unlocked:
        delta_write._locked = lambda paths: contextlib.nullcontext()
    spark = get_spark({"spark.master": "local[1]", "spark.sql.shuffle.partitions": "1", "spark.ui.enabled": "false",
                       "spark.driver.memory": "512m"})
    versions = []
    for i in range(args.commits):
        part = f"{args.writer}-{i}"
        rows = spark.createDataFrame([(args.writer, i, part)], "writer string, i long, part string")
        result = delta_write.replace_partitions(rows, args.table, partition_by=["part"],
                                             partition_filters=[("part", "=", part)])
        versions.append(result["table_version"])
    print(json.dumps({"writer": args.writer, "versions": versions}))


if __name__ == "__main__":
    main()
