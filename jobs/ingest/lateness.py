"""Which accepted records arrived beyond the allowed lateness, as ``windowing_core.reference``
defines it (step 2): one column, for ingest and for the bench's generated events alike."""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

from windowing_core.config import PipelineConfig


def beyond_lateness(config: PipelineConfig) -> Column:
    """True where a row (``event_time``, ``arrival_date``, and ``arrival_part`` below whole days)
    arrived too late to change its windows: in whole days its arrival day is more than that many
    days after its event day; otherwise its arrival part starts more than the lateness after its
    event time (a part folder's time says when a record landed; the day's end is the latest a file
    outside them may have), or for a table source's row its own ``arrival_time``."""
    if config.lateness_by_date:
        return F.col("arrival_date") > F.date_add(F.to_date("event_time"), config.allowed_lateness_days)
    arrived = "arrival_time" if config.source is not None and config.source.is_table else "arrival_part"
    return F.unix_micros(arrived) > F.unix_micros("event_time") + F.lit(config.allowed_lateness * 10**6)
