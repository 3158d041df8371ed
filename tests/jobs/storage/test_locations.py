"""jobs.storage.locations: Spark and delta-rs name the same table, each in its own spelling."""

from __future__ import annotations

import os

from jobs.runtime.spark_session import s3a_settings
from jobs.storage.locations import delta_rs_uri, file_system, is_local, spark_path, storage_options


def test_each_reader_gets_its_spelling_of_one_location(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert spark_path("lake/events/") == delta_rs_uri("lake/events") == os.path.join(str(tmp_path), "lake/events")
    assert spark_path("file:///data/my%20lake/events/") == "/data/my lake/events"
    assert spark_path("s3a://bucket/lake/events/") == "s3a://bucket/lake/events"
    assert delta_rs_uri("s3a://bucket/lake/events") == "s3://bucket/lake/events"
    assert [is_local(p) for p in ("lake", "/abs", "file:///x", "s3a://b/x", "hdfs://n/x")] == [
        True, True, True, False, False]


def test_s3_takes_its_endpoint_from_the_aws_variables(monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", "https://elsewhere.example")
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:9000")  # the S3-specific one wins
    assert s3a_settings()["spark.hadoop.fs.s3a.endpoint"] == "http://127.0.0.1:9000"  # Spark reads the same one
    assert storage_options("s3a://bucket/t") == {"AWS_ENDPOINT_URL": "http://127.0.0.1:9000", "AWS_ALLOW_HTTP": "true"}
    assert storage_options("/local/t") is None
    fs, inside = file_system("s3a://bucket/lake/t/")
    assert (fs.type_name, inside) == ("s3", "bucket/lake/t")


def test_a_scheme_pyarrow_does_not_know_has_no_file_system():
    assert file_system("nosuch://bucket/t") is None
