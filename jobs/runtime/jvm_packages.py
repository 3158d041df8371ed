"""The JVM packages panes' Spark sessions load, pinned, fetched from Maven Central by Maven.

The pyspark wheel holds Spark and Hadoop but not Delta's writer, nor Hadoop's S3 connector.
``bash run.sh setup`` runs ``python -m jobs.runtime.jvm_packages`` once, which asks Maven for exactly the
jars below (``mvn dependency:get``, no transitive dependencies: Spark's own jars already hold
what they depend on) into Maven's local repository, ``~/.m2/repository`` (``PANES_MAVEN_REPO``
moves it). Sessions then put those files on the driver's and executors' class path, so nothing is
downloaded or copied when a session starts, and a job on a machine that skipped the setup fails at
once with one line saying so.

Why Maven and not ``spark.jars.packages``: Spark's Ivy resolves transitive dependencies that
Spark already ships (a second scala-library, Hadoop's client jars), and on a cluster it copies
every jar to every executor at each start, including the 690 MB AWS SDK bundle. A pinned list
of five files, checked by Maven against Maven Central's checksums, is the smaller promise.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Iterable

from jobs.errors import MissingJarsError

# delta-spark 4.4.0 is the newest Delta release built for Spark 4.2 on Maven Central (the pip
# package delta-spark is pinned to the same version); hadoop-aws must match the Hadoop 3.5.0
# of pyspark 4.2.0's jars, and the AWS SDK bundle and S3 analytics accelerator are the ones
# hadoop-aws 3.5.0 was built with (its two compile-scope dependencies).
DELTA = ("io.delta:delta-spark_4.2_2.13:4.4.0", "io.delta:delta-storage:4.4.0")
S3A = ("org.apache.hadoop:hadoop-aws:3.5.0", "software.amazon.awssdk:bundle:2.35.4",
       "software.amazon.s3.analyticsaccelerator:analyticsaccelerator-s3:1.3.1")
PACKAGES = DELTA + S3A

REPO_ENV = "PANES_MAVEN_REPO"


def repository() -> Path:
    return Path(os.environ.get(REPO_ENV) or Path.home() / ".m2" / "repository").expanduser()


def jar_path(coordinate: str) -> Path:
    group, artifact, version = coordinate.split(":")
    return repository().joinpath(*group.split("."), artifact, version, f"{artifact}-{version}.jar")


def on_object_storage(roots: Iterable[str]) -> bool:
    """Whether any of the roots a session reads or writes is on S3 (``s3a://``, ``s3://``)."""
    return any(str(root).startswith(("s3a://", "s3://")) for root in roots)


def jars(s3: bool = True) -> list[str]:
    """The jar files, all present, or MissingJarsError naming the first missing one. Without
    ``s3``, Delta's only: a bare PySpark process took 15.1 s with Delta's jars and 17.9 s with the
    S3 connector's (its AWS SDK bundle is 686 MB) as well, for tables not on S3."""
    packages = PACKAGES if s3 else DELTA
    missing = [c for c in packages if not jar_path(c).is_file()]
    if missing:
        raise MissingJarsError(f"{missing[0]} is not in {repository()} (Spark needs it to write Delta "
                               f"tables): run `bash run.sh setup`, or `python -m jobs.runtime.jvm_packages`")
    return [str(jar_path(c)) for c in packages]


def class_path(s3: bool = True) -> str:
    """The jars as one class path (the driver's and executors' ``extraClassPath``)."""
    return os.pathsep.join(jars(s3))


def fetch() -> None:
    """Ask Maven for every missing jar; a failure is one line naming the package."""
    missing = [c for c in PACKAGES if not jar_path(c).is_file()]
    if not missing:
        return
    mvn = shutil.which("mvn")
    if mvn is None:
        raise MissingJarsError("Maven (mvn) is needed once to fetch Delta's and Hadoop's S3 jars from "
                               "Maven Central: install it (Debian/Ubuntu: apt-get install maven; "
                               "macOS: brew install maven) and run the setup again")
    for coordinate in missing:
        print(f"[panes] fetching {coordinate} from Maven Central into {repository()}", file=sys.stderr)
        done = subprocess.run([mvn, "-q", "-B", "dependency:get", f"-Dartifact={coordinate}",
                               "-Dtransitive=false", f"-Dmaven.repo.local={repository()}"],
                              capture_output=True, text=True)
        if done.returncode != 0 or not jar_path(coordinate).is_file():
            reason = next((line.strip() for line in done.stdout.splitlines() if "[ERROR]" in line),
                          done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "no reason given")
            raise MissingJarsError(f"could not fetch {coordinate} from Maven Central: {reason}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m jobs.runtime.jvm_packages", description=__doc__.splitlines()[0])
    parser.add_argument("--jars", action="store_true",
                        help="print the jars comma-separated (for spark-submit --jars) instead of fetching")
    args = parser.parse_args(argv)
    try:
        if args.jars:
            print(",".join(jars()))
        else:
            fetch()
    except MissingJarsError as err:
        print(f"[panes] {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
