"""Which class archive a driver starts from, and which ones the setup removes."""

from __future__ import annotations

import os

from jobs.runtime import class_archive


def test_an_archive_is_named_after_the_class_path_it_was_built_for(tmp_path, monkeypatch):
    monkeypatch.setenv(class_archive.CACHE_ENV, str(tmp_path))
    delta_only, with_s3 = class_archive.archive_path("delta.jar"), class_archive.archive_path("delta.jar:aws.jar")
    assert delta_only != with_s3 and delta_only.parent == tmp_path / "jvm"
    assert class_archive.java_options("delta.jar") == ""  # none built: the JVM starts as before
    delta_only.parent.mkdir()
    delta_only.write_bytes(b"")
    assert class_archive.java_options("delta.jar") == f"-XX:SharedArchiveFile={delta_only}"
    assert class_archive.java_options("delta.jar:aws.jar") == ""


def test_the_archives_of_a_jdk_or_checkout_that_is_gone_are_removed(tmp_path, monkeypatch):
    monkeypatch.setenv(class_archive.CACHE_ENV, str(tmp_path))
    current = class_archive.archive_path("delta.jar")
    current.parent.mkdir()
    current.write_bytes(b"archive")
    class_archive.record(current, "delta.jar")
    gone, unrecorded = current.with_name("driver-gone.jsa"), current.with_name("driver-unrecorded.jsa")
    for path in (gone, unrecorded):
        path.write_bytes(b"archive")
    gone.with_suffix(".from").write_text(f"{tmp_path / 'deleted-checkout' / 'jars'}\n")

    assert class_archive.prune() == [gone]
    assert sorted(p.name for p in current.parent.iterdir()) == sorted(
        [current.name, current.with_suffix(".from").name, unrecorded.name])


def test_a_class_path_reinstalled_in_place_gets_an_archive_of_its_own_and_the_old_one_goes(tmp_path, monkeypatch):
    """Java refuses an archive once a jar of its class path has another size or time, as after a
    virtualenv is reinstalled at the same path: the archive's name says so, and the old one is
    removed."""
    monkeypatch.setenv(class_archive.CACHE_ENV, str(tmp_path / "cache"))
    jar = tmp_path / "delta.jar"
    jar.write_bytes(b"classes")
    before = class_archive.archive_path(str(jar))
    before.parent.mkdir(parents=True)
    before.write_bytes(b"archive")
    class_archive.record(before, str(jar))
    assert class_archive.prune() == []
    os.utime(jar, ns=(jar.stat().st_atime_ns, jar.stat().st_mtime_ns + 10**9))  # same path and bytes, reinstalled
    after = class_archive.archive_path(str(jar))
    assert after != before and class_archive.java_options(str(jar)) == ""
    assert class_archive.prune() == [before] and not before.exists()
