"""The catalog: check names are predicates, one per table, present only where they apply."""

from dataclasses import replace

from expectations.catalog import checks_of
from jobs.tables import MINUTE_PARTIALS, WINDOW_CHANGES, WINDOW_SNAPSHOT
from tests.expectations.frames import SUITE_CONFIG
from windowing_core.aggregations import aggregation


def test_catalog_names_are_predicates_and_unique_per_table():
    for table_name in (MINUTE_PARTIALS.name, WINDOW_CHANGES.name, WINDOW_SNAPSHOT.name):
        names = [c.name for c in checks_of(SUITE_CONFIG, table_name)]
        assert len(names) == len(set(names))
    only_counts = replace(SUITE_CONFIG, aggregations=(aggregation("count"),))
    assert "sums_non_negative" not in {c.name for c in checks_of(only_counts, WINDOW_CHANGES.name)}
    assert "mean_between_min_and_max" not in {c.name for c in checks_of(only_counts, WINDOW_SNAPSHOT.name)}
