"""What the assets need from outside: the roots of the landing folder and the lakehouse."""

from __future__ import annotations

import dagster as dg


class LakehouseResource(dg.ConfigurableResource):
    """Where raw files land and where the Delta tables live (local folders or object-store URIs).

    The pipeline configuration (windows, aggregations, lateness) is not here: it shapes the
    asset graph itself (partition mappings), so it is read when the Definitions load.
    """

    landing_root: str
    lakehouse_root: str
