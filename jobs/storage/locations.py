"""Where a table lives, as each reader names it: Spark's Hadoop file systems say ``s3a://``,
delta-rs and pyarrow ``s3://``; a local path is made absolute. Configured by the same ``AWS_*``
variables as every S3 client."""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import unquote, urlparse

import pyarrow as pa
import pyarrow.fs as pafs


def s3_endpoint() -> str | None:
    """The S3-compatible server every client here talks to, as the AWS CLI reads it: the
    S3-specific ``AWS_ENDPOINT_URL_S3`` first, then ``AWS_ENDPOINT_URL``; None for AWS itself."""
    return os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or None


def aws_region() -> str | None:
    return os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or None


def is_local(path: str) -> bool:
    return "://" not in str(path) or str(path).startswith("file:")


def spark_path(path: str) -> str:
    """The table's location as Spark's Hadoop file systems name it (``s3a://`` for S3)."""
    path = str(path)
    if path.startswith("file:"):
        return unquote(urlparse(path).path).rstrip("/") or "/"
    return path.rstrip("/") if "://" in path else os.path.abspath(path)


def delta_rs_uri(path: str) -> str:
    """The location as delta-rs and pyarrow name it: ``s3://`` where Hadoop says ``s3a://``."""
    located = spark_path(path)
    return "s3://" + located[len("s3a://"):] if located.startswith("s3a://") else located


def file_system(path: str) -> tuple[pafs.FileSystem, str] | None:
    """pyarrow's file system holding ``path``, and the path inside it, for the listings Spark
    does not make (files it hides, vacuum's sizes): local folders, S3 (``s3a://`` as ``s3://``,
    configured by the same ``AWS_*`` variables as delta-rs, endpoint included) and whatever else
    pyarrow knows (``gs://``, ``hdfs://``); None for a scheme it does not."""
    uri = delta_rs_uri(path)
    if uri.startswith("s3://"):
        options: dict[str, Any] = {}
        endpoint = s3_endpoint()
        if endpoint:
            parsed = urlparse(endpoint)
            options.update(endpoint_override=parsed.netloc or endpoint, scheme=parsed.scheme or "https")
        region = aws_region()
        if region:
            options["region"] = region
        return pafs.S3FileSystem(**options), uri[len("s3://"):].rstrip("/")
    try:
        return pafs.FileSystem.from_uri(uri)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError):
        return None


def storage_options(path: str) -> dict[str, str] | None:
    """delta-rs reads AWS_* from the environment itself; an http endpoint must also be allowed."""
    if not delta_rs_uri(path).startswith("s3://"):
        return None
    endpoint = s3_endpoint() or ""
    options = {"AWS_ENDPOINT_URL": endpoint} if endpoint else {}
    if endpoint.startswith("http://"):
        options["AWS_ALLOW_HTTP"] = "true"
    return options
