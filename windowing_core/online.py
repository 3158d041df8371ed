"""The online store: a PostgreSQL table holding each key's latest window values, for lookups.

The configuration's ``online:`` names it for the Dagster asset ``online_values`` and for the job
``jobs.online_values``, which reads it from the configuration file its ``--config`` names.

    online:
      url: postgresql://panes@127.0.0.1:5432/features   # the password from PANES_ONLINE_PASSWORD
      table: window_values                               # default; schema.table names a schema

The password never stands in the configuration: the configuration is shown in the Dagster UI
and kept in runs' logs, so a URL holding one is refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from windowing_core.window_spec import refuse_unknown

ONLINE_FIELDS = {"url", "table"}
PASSWORD_VARIABLE = "PANES_ONLINE_PASSWORD"
DEFAULT_TABLE = "window_values"
_TABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?")


@dataclass(frozen=True)
class OnlineSpec:
    """Where the online store is: a libpq URL without a password, and a table (``schema.table``
    or a table of the connection's search path)."""

    url: str
    table: str = DEFAULT_TABLE

    def __post_init__(self) -> None:
        if not isinstance(self.url, str) or not self.url.startswith(("postgresql://", "postgres://")):
            raise ValueError(f"online.url must be a postgresql:// URL, got {_shown(self.url)!r}")
        if urlsplit(self.url).password is not None:
            raise ValueError(f"online.url holds a password: leave it out and set {PASSWORD_VARIABLE} instead "
                             "(the configuration is shown in the Dagster UI)")
        if not isinstance(self.table, str) or not _TABLE.fullmatch(self.table):
            raise ValueError(f"online.table must be a table name such as window_values or features.window_values, "
                             f"got {self.table!r}")

    @property
    def schema_and_table(self) -> tuple[str | None, str]:
        schema, _, table = self.table.rpartition(".")
        return schema or None, table

    @classmethod
    def from_dict(cls, raw: Any) -> OnlineSpec:
        if not isinstance(raw, dict):
            raise ValueError("online: expected a mapping with url (and table)")
        refuse_unknown(raw, ONLINE_FIELDS, "online")
        if "url" not in raw:
            raise ValueError("online.url is missing: give the store's postgresql:// URL")
        return cls(url=raw["url"], table=raw.get("table", DEFAULT_TABLE))


def _shown(url: Any) -> Any:
    """A URL as an error may show it: any password replaced."""
    if not isinstance(url, str):
        return url
    parts = urlsplit(url)
    if parts.password is None:
        return url
    return url.replace(f":{parts.password}@", ":***@", 1)
