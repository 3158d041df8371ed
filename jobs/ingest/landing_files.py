"""What an arrival day's landing folder holds: the files Spark reads, and the files that are one
quarantined record each (null ``raw``) because Spark cannot or will not read them.

Left to itself, Spark's listing skips hidden names, dangling links, FIFOs and sockets without a
word, follows a link back into its own folder forever, and fails the whole day on one corrupt
compressed file or one name Hadoop cannot turn into a path (a ``:``). Each case is found here
first, so every file is either read or counted, and the reconciliation still holds.
"""

from __future__ import annotations

import bz2
import gzip
import io
import os
import pathlib
import re
import stat
import zlib
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import unquote

from pyarrow import fs as pafs
from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from jobs.errors import MissingInputError
from jobs.storage import locations

HIDDEN_FILE, UNREADABLE_FILE, TRUNCATED_GZIP = "hidden_file", "unreadable_file", "truncated_gzip"

# Hadoop's codecs by extension (``CompressionCodecFactory``). gzip, bzip2 and zlib are
# decompressed to their end in Python, in Spark tasks. The others need Hadoop's own decoder (zstd
# its native library too), so each such file is read alone once: it is readable if Spark reads it
# without an error and finds lines in it, because Hadoop reads random bytes named .lz4 as no
# lines at all, without a word.
CHECKED = {".gz", ".bz2", ".deflate"}
PROBED = {".lz4", ".snappy", ".zst"}
CODEC_EXTENSIONS = tuple(sorted(CHECKED | PROBED))
"""What a compressed file's name ends with, case as it is, as Spark's listing glob matches it."""
PROBED_EXTENSIONS = tuple(sorted(PROBED))

_UNREADABLE = "raw string, source_file string, file_time timestamp, read_problem string"


@dataclass(frozen=True)
class Listing:
    """``sources``: what Spark reads, the folder itself where its own listing is exact, else the
    files one by one (``named``); ``refused``: one quarantine record per file it must not read;
    ``compressed``: the walk's files of a codec's extension, each with its ``os.stat`` (None where
    Spark listed the folder)."""

    sources: list[str]
    refused: list[tuple]
    named: bool = False
    compressed: list[tuple[str, os.stat_result]] | None = None


def read_folder(spark: SparkSession, folder: str) -> tuple[DataFrame | None, DataFrame]:
    """The folder's readable files as Spark's text reader reads them (None if there are none),
    and one record per file refused, spelled as Spark spells the files it reads."""
    return read_folders(spark, [folder])[0]


def read_folders(spark: SparkSession, folders: list[str]) -> list[tuple[DataFrame | None, DataFrame]]:
    """``read_folder`` of each folder, with one check of the compressed files of all of them: one
    Spark job for a run's arrival days, not one per day (13 jobs, 3.2 s of the demo's ingest)."""
    listings = [list_folder(spark, folder) for folder in folders]
    walked = [f for listing in listings for f in listing.compressed or ()]
    if sum(info.st_size for _, info in walked) <= DRIVER_CHECKED_BYTES:  # small (plain files: none at all)
        listed = [s for listing in listings if listing.compressed is None for s in listing.sources]
        found = checked_here(spark, walked) + codec_problems(spark, listed)
    else:
        found = codec_problems(spark, [s for listing in listings if listing.compressed != [] for s in listing.sources])
    problems = {_os_path(r["path"]): r for r in found}
    return [_read_listed(spark, folder, listing, {p: r for p, r in problems.items() if _inside(p, folder, listing)})
            for folder, listing in zip(folders, listings)]


def _inside(path: str, folder: str, listing: Listing) -> bool:
    """Whether a listed file (``_os_path`` spelling) is one of ``folder``'s."""
    if listing.named:
        return path in {_os_path(s) for s in listing.sources}
    root = _os_path(folder)
    root = root if "://" in root else os.path.abspath(root)
    return path.startswith(root.rstrip("/") + "/")


def _read_listed(spark: SparkSession, folder: str, listing: Listing,
                 problems: dict[str, dict]) -> tuple[DataFrame | None, DataFrame]:
    refused = listing.refused + [(None, r["source_file"], r["file_time"], r["read_problem"])
                                 for r in problems.values()]
    unreadable = spark.createDataFrame(refused, _UNREADABLE)
    if not listing.named and not problems:  # the usual case: Spark reads the folder
        return spark.read.option("recursiveFileLookup", "true").text(folder), unreadable
    files = (listing.sources if listing.named
             else [r["path"] for r in _files(spark, listing.sources).select("path").collect()])
    readable = [_glob_escaped(p) for p in files if _os_path(p) not in problems]
    return (spark.read.text(readable) if readable else None), unreadable


def list_folder(spark: SparkSession, folder: str) -> Listing:
    """A local folder is walked here (links followed, cycles and special files refused); any
    other file system is listed by Spark, with its hidden files from ``hidden_files``."""
    local = _local(folder) if client_sees_disk(spark) else None
    if local is None:
        try:
            _ = _files(spark, [folder]).columns  # Spark's own listing: any file system Spark reads
        except AnalysisException as err:
            if err.getCondition() != "PATH_NOT_FOUND":
                raise
            raise MissingInputError(f"no landing folder {err.getMessageParameters().get('path')} "
                                    "(expected <landing>/YYYY-MM-DD/)") from None
        return Listing([folder], hidden_files(folder))
    if not os.path.isdir(local):
        raise MissingInputError(f"no landing folder {_spelled(local)} (expected <landing>/YYYY-MM-DD/)")
    return _walk(folder, local)


def client_sees_disk(spark: SparkSession) -> bool:
    """A Spark Connect client cannot walk the server's disk: there, Spark lists."""
    return not type(spark).__module__.startswith("pyspark.sql.connect")


def _walk(folder: str, root: str) -> Listing:
    """Every file under ``root``, following links to folders as Spark does, except a link back to
    a folder that holds it (Spark would list it forever); Spark's listing stays in use unless
    something in the folder needs the files named one by one."""
    readable, refused, odd = [], [], False
    stack = [(root, (), (os.path.realpath(root),))]
    while stack:
        path, inside, ancestors = stack.pop()
        with os.scandir(path) as entries:
            for entry in sorted(entries, key=lambda e: e.name):
                parts = (*inside, entry.name)
                hidden = any(_hidden(p) for p in parts)
                try:
                    info = os.stat(entry.path)  # through links
                except OSError:  # a dangling link, or a link Spark cannot follow either
                    odd = True
                    refused.append(_record(entry.path, os.lstat(entry.path), UNREADABLE_FILE))
                    continue
                if stat.S_ISDIR(info.st_mode):
                    real = os.path.realpath(entry.path)
                    if real in ancestors:  # a link back to a folder holding it: a cycle
                        odd = True
                        refused.append(_record(entry.path, os.lstat(entry.path), UNREADABLE_FILE))
                    else:
                        stack.append((entry.path, parts, (*ancestors, real)))
                elif not stat.S_ISREG(info.st_mode):  # a FIFO, a socket, a device
                    odd = True
                    refused.append(_record(entry.path, info, UNREADABLE_FILE))
                elif hidden:
                    if info.st_size:  # an empty file (``_SUCCESS``) holds no record
                        refused.append(_record(entry.path, info, HIDDEN_FILE))
                elif any(":" in p for p in parts):  # Hadoop's paths cannot hold a ':' in a name
                    odd = True
                    if info.st_size:
                        refused.append(_record(entry.path, info, UNREADABLE_FILE))
                else:
                    readable.append((entry.path, info))
    readable.sort()
    # Named one by one as Hadoop paths: "file:" and the path as it is (a URI's %20 is no space to Hadoop).
    return Listing([f"file:{p}" for p, _ in readable] if odd else [folder],
                   sorted(refused, key=lambda r: r[1]), named=odd,
                   compressed=[(p, info) for p, info in readable if p.endswith(CODEC_EXTENSIONS)])


def _record(path: str, info: os.stat_result, reason: str) -> tuple:
    return None, _spelled(path), _file_time(info), reason


def _file_time(info: os.stat_result) -> datetime:
    """A file's modification time in whole milliseconds, as Hadoop's file status (and so Spark's
    ``_metadata`` and listing) gives it: a refused file's time is spelled as a read file's."""
    millis = info.st_mtime_ns // 1_000_000
    return datetime.fromtimestamp(millis // 1000, tz=UTC).replace(microsecond=millis % 1000 * 1000)


def _local(folder: str) -> str | None:
    """The operating system's path of a local folder, or None for another file system."""
    if folder.startswith("file:"):
        return "/" + re.sub(r"^file:/*", "", folder)
    return None if "://" in folder else os.path.abspath(folder)


def _spelled(path: str) -> str:
    """A local file as Spark spells the files it reads: ``file:/a%20b/c.json``, one slash."""
    return "file:" + pathlib.Path(path).as_uri().removeprefix("file://")


def _os_path(spelled: str) -> str:
    """The one spelling of a local file to compare listings by: the walk names files as they
    are, Spark's listing as URIs (``%20`` for a space)."""
    if not spelled.startswith("file:"):
        return spelled
    path = re.sub(r"^file:/*", "/", spelled)
    return path if os.path.exists(path) else unquote(path)


def _hidden(name: str) -> bool:
    """Spark's rule for paths its file listing skips (``HadoopFSUtils.shouldFilterOutPathName``)."""
    return ((name.startswith("_") and "=" not in name) or name.startswith(".")
            or name.endswith("._COPYING_"))


def hidden_files(folder: str) -> list[tuple]:
    """One quarantine record (``hidden_file``, null ``raw``) per non-empty file Spark will not read,
    on a file system other than the local one (``_walk`` finds them there).

    Spark's listing skips names starting with ``_`` or ``.`` (in-flight uploads, ``_SUCCESS``
    markers, editors' swap files), and no option turns that off, even for a file named
    explicitly. Their lines would be counted nowhere, and the reconciliation would pass without
    them, so each such file is one record, as an unreadable file is: rename it to have its lines
    read. Empty files (``_SUCCESS``) hold no record. Listed with pyarrow's file systems
    (``locations.file_system``: ``s3a://``, ``gs://``, ``hdfs://``); a scheme pyarrow does not know is
    not listed. Each file is spelled as Spark spells the files it reads.
    """
    located = locations.file_system(folder)
    if located is None:
        return []
    filesystem, root = located
    scheme = folder.split("://", 1)[0]
    records = []
    for info in filesystem.get_file_info(pafs.FileSelector(root, recursive=True, allow_not_found=True)):
        inside = info.path[len(root.rstrip("/")) + 1:].split("/")
        if info.type == pafs.FileType.File and info.size and any(_hidden(part) for part in inside):
            records.append((None, f"{scheme}://{info.path}", info.mtime, HIDDEN_FILE))  # pyarrow: bucket/key
    return sorted(records, key=lambda r: r[1])


def _files(spark: SparkSession, sources: list[str], glob: str | None = None) -> DataFrame:
    """The files Spark's text reader would read (the same listing rules).

    ``binaryFile`` reads a file's bytes only when ``content`` is selected: a listing is cheap.
    """
    reader = spark.read.format("binaryFile").option("recursiveFileLookup", "true")
    if glob:
        reader = reader.option("pathGlobFilter", glob)
    return reader.load([_glob_escaped(s) if s.startswith("file:") else s for s in sources])


def _glob_escaped(path: str) -> str:
    """A file path Spark will not expand as a glob (``[``, ``*`` ... are legal in file names)."""
    return re.sub(r"([{}\[\]*?\\])", r"\\\1", path)


def codec_problem(name: str, content: bytes | None) -> str | None:
    """Why these bytes are not a complete input of the codec the name's extension says, or None
    when they are (or are empty).

    Decompresses in bounded chunks and throws the output away, so memory stays small whatever
    the ratio; several concatenated members or streams are one input, as Hadoop's codecs read them.
    """
    if not content:
        return None
    extension = os.path.splitext(name)[1].lower()
    try:
        if extension == ".gz":
            with gzip.GzipFile(fileobj=io.BytesIO(content)) as stream:
                while stream.read(_CHUNK):
                    pass
            return None
        rest = content
        while rest:  # one stream after another
            rest = _bzip2_rest(rest) if extension == ".bz2" else _zlib_rest(rest)
            if rest is None:
                return UNREADABLE_FILE  # ends before its end-of-stream marker
        return None
    except EOFError:
        return TRUNCATED_GZIP
    except (OSError, ValueError, zlib.error):  # gzip.BadGzipFile is an OSError
        return UNREADABLE_FILE


_CHUNK = 1 << 20


def _bzip2_rest(data: bytes) -> bytes | None:
    """The bytes after one complete bzip2 stream at the start of ``data``, or None if it ends early."""
    decoder = bz2.BZ2Decompressor()
    while not decoder.eof:
        chunk = b""
        if decoder.needs_input:
            if not data:
                return None
            chunk, data = data[:_CHUNK], data[_CHUNK:]
        decoder.decompress(chunk, _CHUNK)
    return decoder.unused_data + data


def _zlib_rest(data: bytes) -> bytes | None:
    """The bytes after one complete zlib stream (Hadoop's ``.deflate``), or None if it ends early."""
    decoder, pending = zlib.decompressobj(), b""
    while not decoder.eof:
        if not pending:
            if not data:
                return None
            pending, data = data[:_CHUNK], data[_CHUNK:]
        decoder.decompress(pending, _CHUNK)
        pending = decoder.unconsumed_tail
    return decoder.unused_data + data


DRIVER_CHECKED_BYTES = 8 << 20
"""Compressed files of a run's walked folders up to this size in all are checked on the driver,
not in Spark tasks. In Spark, the check is a Python UDF: a Spark job and, on a session's first
use, Python workers started (three days of a test landing: 4.1 s first, then 0.37 s; on the
driver 0.11 s). The driver decompresses 14 MB of gzip (62 MB of lines) in 0.17 s, but bzip2 at
about 5 MB a second, so larger inputs go to the tasks, which decompress in parallel."""


def checked_here(spark: SparkSession, files: list[tuple[str, os.stat_result]]) -> list[dict]:
    """``codec_problems`` of local files the walk found (``Listing.compressed``), on the driver:
    each row spelled as Spark's listing spells it (``_spelled``, ``_file_time``)."""
    found = []
    for path, info in files:
        if path.lower().endswith(PROBED_EXTENSIONS):
            problem = None if _readable(spark, f"file:{path}", info.st_size) else UNREADABLE_FILE
        else:
            with open(path, "rb") as handle:
                problem = codec_problem(path, handle.read())
        if problem:
            found.append({"path": path, "source_file": _spelled(path), "read_problem": problem,
                          "file_time": _file_time(info)})
    return found


def codec_problems(spark: SparkSession, sources: list[str]) -> list:
    """One row (``path``, ``source_file``, ``file_time``, ``read_problem``) per compressed file
    that cannot be decompressed to its end: checked in Spark tasks (Spark's text reader would
    fail the whole job on it), or, for the codecs only Hadoop decodes, by reading it alone. One
    listing for both: it runs for every arrival day."""
    if not sources:
        return []
    problem = F.udf(codec_problem, "string", useArrow=False)  # a plain UDF; its hints are for readers
    probed = F.lower("path").rlike("(" + "|".join(re.escape(e) for e in PROBED_EXTENSIONS) + ")$")
    compressed = (
        _files(spark, sources, "*.{" + ",".join(e[1:] for e in CODEC_EXTENSIONS) + "}")
        .select("path", "length", F.col("_metadata.file_path").alias("source_file"),  # as the text reader spells it
                F.col("modificationTime").alias("file_time"), probed.alias("probed"),
                F.when(~probed, problem("path", "content")).alias("read_problem"))
        .where(F.col("read_problem").isNotNull() | F.col("probed"))
        .collect())
    return [r.asDict() | ({} if r["read_problem"] else {"read_problem": UNREADABLE_FILE}) for r in compressed
            if r["read_problem"] or not _readable(spark, r["path"], r["length"])]


def _readable(spark: SparkSession, path: str, length: int) -> bool:
    try:
        return length == 0 or spark.read.text(_glob_escaped(path)).where("value != ''").limit(1).count() > 0
    except Exception:  # noqa: BLE001 -- any failure to read it alone makes the file unreadable here
        return False
