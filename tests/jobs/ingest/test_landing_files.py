"""What a landing folder's walk says before Spark reads it, and the compressed files checked on the
driver (no Spark session: both are the driver's own work)."""

import bz2
import gzip
import os
import zlib
from datetime import UTC, datetime

from jobs.ingest import landing_files


def test_the_walk_names_the_files_spark_would_decompress_and_no_others(tmp_path):
    """A codec's extension as Spark's listing matches it (``codec_problems``' glob: case as it
    is); hidden files are refused, not checked."""
    folder = tmp_path / "2025-01-30"
    (folder / "deep" / "er").mkdir(parents=True)
    (folder / "a.json").write_text('{"user_id": "u1"}\n')
    for name in ("deep/er/c.json.gz", "d.bz2", "e.lz4", "f.deflate", "g.GZ", ".hidden.gz"):
        (folder / name).write_bytes(b"not compressed")
    os.utime(folder / ".hidden.gz", ns=(1_738_000_000_123_456_789,) * 2)
    listing = landing_files.list_folder(None, str(folder))
    assert [p for p, _ in listing.compressed] == sorted(
        str(folder / n) for n in ("d.bz2", "deep/er/c.json.gz", "e.lz4", "f.deflate"))
    assert all(info.st_size == len(b"not compressed") for _, info in listing.compressed)
    assert [r[3] for r in listing.refused] == [landing_files.HIDDEN_FILE]
    # a refused file's time in whole milliseconds, as Spark gives a read file's
    assert listing.refused[0][2] == datetime(2025, 1, 27, 17, 46, 40, 123000, tzinfo=UTC)
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "a.json").write_text('{"user_id": "u1"}\n')
    assert landing_files.list_folder(None, str(plain)).compressed == []


def test_compressed_files_checked_on_the_driver_are_refused_as_spark_spells_them(tmp_path):
    whole = b'{"user_id": "u1"}\n' * 100
    files = {"good.json.gz": gzip.compress(whole) + gzip.compress(whole),  # two members are one input
             "cut.json.gz": gzip.compress(whole)[:-12], "plain.json.gz": b"plain text",
             "good.bz2": bz2.compress(whole), "cut.bz2": bz2.compress(whole)[:-20],
             "good.deflate": zlib.compress(whole), "odd name.deflate": b"random bytes"}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    os.utime(tmp_path / "cut.json.gz", ns=(1_738_000_000_123_456_789,) * 2)
    walked = [(str(tmp_path / n), os.stat(tmp_path / n)) for n in files]
    found = {os.path.basename(r["path"]): r for r in landing_files.checked_here(None, walked)}
    assert {n: r["read_problem"] for n, r in found.items()} == {
        "cut.json.gz": landing_files.TRUNCATED_GZIP, "plain.json.gz": landing_files.UNREADABLE_FILE,
        "cut.bz2": landing_files.UNREADABLE_FILE, "odd name.deflate": landing_files.UNREADABLE_FILE}
    assert found["odd name.deflate"]["source_file"] == f"file:{tmp_path}/odd%20name.deflate"
    assert found["cut.json.gz"]["file_time"] == datetime(2025, 1, 27, 17, 46, 40, 123000, tzinfo=UTC)
