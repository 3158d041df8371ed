"""A class-data-sharing archive of the classes a panes driver loads, so that its JVM starts faster.

A job run alone spends seconds before its first query loading and verifying the classes of
Spark, Delta and their dependencies. Java's dynamic archives (JEP 350, ``-XX:ArchiveClassesAtExit``
and ``-XX:SharedArchiveFile``) map them from one file instead: a session's start took 6.2-6.8 s
without and 3.5-3.9 s with one (``python -m bench small`` measures a job run alone).

``bash run.sh setup`` builds the archive once per class path (``python -m jobs.runtime.spark_session
--archive-classes``: ``spark_session.archive_classes``), into
``$PANES_CACHE`` (default ``~/.cache/panes``), named after everything that must not change under it:
the ``java`` that runs and every jar of the class path (Spark's and the extra class path), each
with its size and modification time, as Java checks them. ``get_spark`` then starts its JVM with it
(``java_options``). A JVM whose class path or JDK differs from the archive's ignores it and loads
its classes as before (Java checks, silently), so a stale or missing archive only costs the seconds:
a virtualenv reinstalled at the same path gets an archive of its own, and the setup removes the
archives whose files changed or are gone (``prune``).
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pyspark

CACHE_ENV = "PANES_CACHE"


def cache() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "panes").expanduser()


def _java() -> Path | None:
    """The ``java`` spark-submit runs: ``$JAVA_HOME/bin/java``, else the first on the PATH."""
    home, on_path = os.environ.get("JAVA_HOME"), shutil.which("java")
    found = Path(home, "bin", "java") if home else Path(on_path) if on_path else None
    return found.resolve() if found and found.exists() else None


def _sources(extra_class_path: str) -> list[str] | None:
    """What an archive is valid for, one line per file: the ``java`` spark-submit runs, and every
    jar of the driver's class path (Spark's, then the extra class path), with its size and
    modification time; None without a ``java``."""
    java = _java()
    if java is None:
        return None
    jars = sorted((Path(pyspark.__file__).parent / "jars").glob("*.jar"))
    return [_stat_line(p) for p in (java, *jars, *(Path(e) for e in extra_class_path.split(os.pathsep) if e))]


def _stat_line(path: Path) -> str:
    try:
        stat = path.stat()
    except OSError:
        return f"{path}\tmissing"
    return f"{path}\t{stat.st_size}\t{stat.st_mtime_ns}"


def archive_path(extra_class_path: str) -> Path | None:
    """Where the archive of a driver with this extra class path lives (None without a ``java``)."""
    sources = _sources(extra_class_path)
    if sources is None:
        return None
    key = "\n".join([pyspark.__version__, *sources])
    return cache() / "jvm" / f"driver-{hashlib.sha256(key.encode()).hexdigest()[:16]}.jsa"


def record(path: Path, extra_class_path: str) -> None:
    """Write beside an archive the files it was built from, for ``prune``."""
    sources = _sources(extra_class_path)
    if sources is not None:
        path.with_suffix(".from").write_text("\n".join(sources) + "\n")


def prune() -> list[Path]:
    """Remove the archives whose files changed or are gone (a reinstalled virtualenv, an
    uninstalled JDK, a deleted checkout), and those recorded without sizes and times (named by
    an earlier key, so never used again): no JVM starts from them, and each is about 190 MB."""
    removed = []
    for sources in (cache() / "jvm").glob("driver-*.from"):
        lines = [line for line in sources.read_text().splitlines() if line]
        if not all("\t" in line and _stat_line(Path(line.split("\t")[0])) == line for line in lines):
            for stale in (sources.with_suffix(".jsa"), sources):
                stale.unlink(missing_ok=True)
            removed.append(sources.with_suffix(".jsa"))
    return removed


def java_options(extra_class_path: str) -> str:
    """``-XX:SharedArchiveFile=...`` where an archive of this class path exists, else nothing."""
    path = archive_path(extra_class_path)
    return f"-XX:SharedArchiveFile={path}" if path is not None and path.is_file() else ""


def dump_options(path: Path) -> str:
    """The JVM options that dump the classes a JVM loaded into ``path`` as it exits (quietly:
    Java warns about every class it cannot archive)."""
    return f"-Xlog:disable -XX:ArchiveClassesAtExit={path}"
