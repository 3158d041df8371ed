"""Groups: several configurations in one deployment, sharing each source's ingest."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs.tables import asset_key, ingest_root, root
from windowing_core import config_yaml
from windowing_core.config import PipelineConfig
from windowing_core.deployment import Deployment

CLICKS = {"table": "db.clicks", "time": "ts"}


def test_a_configuration_without_groups_is_one_group_whose_tables_stay_at_the_root():
    deployment = Deployment.from_dict({"bucket": "1m"})
    config = deployment.group(None)
    assert not deployment.grouped and deployment.ingest_of(config) is config
    assert root("/lake", config) == ingest_root("/lake", config) == "/lake"
    assert asset_key("window_changes", config) == ["window_changes"] and asset_key("events", config) == ["events"]


def test_groups_over_one_source_share_an_ingest_that_reads_every_field_they_read():
    deployment = Deployment.from_dict({"groups": {
        "spend": {"fields": {"amount": "decimal(12,2)", "page": "string"}, "aggregations": {"total": {
            "kind": "sum", "field": "amount"}}},
        "pages": {"fields": {"page": "string", "amount": "decimal(12,2)", "doubled": "decimal(13,2)"},
                  "columns": {"doubled": "amount * 2"},
                  "aggregations": {"n": {"kind": "count", "field": "page"}}, "where": "page <> 'home'"},
        "clicked": {"source": CLICKS}}})
    spend, pages, clicks = (deployment.group(n) for n in ("spend", "pages", "clicked"))
    assert len(deployment.ingests) == 2 and deployment.ingest_of(spend) == deployment.ingest_of(pages)
    landing = deployment.ingest_of(spend)
    assert landing.group is None and landing.source_fields == (("amount", "decimal(12,2)"), ("page", "string"))
    assert landing.where is None and landing.columns == ()
    assert root("/lake", spend) == "/lake/spend" and ingest_root(root("/lake", spend), spend) == "/lake"
    assert asset_key("minute_partials", pages) == ["pages", "minute_partials"] and asset_key("events", pages) == [
        "events"]
    ingest = deployment.ingest_of(clicks)
    assert ingest.ingest_at == "clicks" and root("/lake", ingest) == "/lake/clicks"
    assert ingest_root(root("/lake", clicks), clicks) == "/lake/clicks"
    assert asset_key("events", clicks) == ["clicks", "events"] == asset_key("events", ingest)
    assert deployment.source_ingest("clicks") == ingest and deployment.source_ingest(None) == landing
    assert deployment.folders == (None, "clicks", "spend", "pages", "clicked")  # what a vacuum walks
    assert Deployment.from_dict({}).folders == (None,)


def test_groups_are_read_from_yaml_with_shared_settings_as_anchors(tmp_path):
    path = tmp_path / "groups.yaml"
    path.write_text("groups:\n"
                    "  views: &common\n"
                    "    allowed_lateness: 1d\n"
                    "    windows: {1h: {length: 1h, slide: 1m}}\n"
                    "  big_views:\n"
                    "    <<: *common\n"
                    "    where: value >= 10\n")
    deployment = Deployment.load(path)
    assert deployment.names == ["views", "big_views"]
    assert deployment.group("big_views").allowed_lateness_days == 1 and deployment.group("big_views").where
    with pytest.raises(ValueError, match="declares groups: name the group to run"):
        PipelineConfig.load(path)


@pytest.mark.parametrize("raw, message", [
    ({"groups": {}}, "groups: expected a mapping of group name to its configuration"),
    ({"groups": {"a": {}}, "bucket": "1m"},
     "groups: with groups, every setting but a spine joined to them belongs to a group"),
    ({"groups": {"my-views": {}}}, "groups: 'my-views' is not a group name"),
    ({"groups": {"1views": {}}}, "groups: '1views' is not a group name"),
    ({"groups": {"events": {}}}, "groups.events: the name is taken by a table of the lakehouse"),
    ({"groups": {"views": {}, "Views": {}}}, "groups.Views: group views differs only in case; name it otherwise"),
    ({"groups": {"a": {"where": "nope("}}}, "groups.a: where: "),
    ({"groups": {"a": {"columns": {"x": "y + 1"}, "fields": {"x": "long"}}}}, "groups.a: columns.x: "),
    ({"groups": {"a": {"source": {"table": "db.c", "format": "delta"}}}}, "groups.a: source.format: a table's format"),
    ({"groups": {"a": {"source": {"path": "/d/c", "format": "csv"}}}}, "groups.a: source.format must be one of"),
    ({"groups": {"a": {"key_field": "user_id"}, "b": {"key_field": "ip"}}},
     r"groups a, b read the same source with different key \(a: user_id, b: ip\)"),
    ({"groups": {"a": {"key": ["user_id", "country"]}, "b": {}}},
     r"groups a, b read the same source with different key \(a: user_id, country, b: user_id\)"),
    ({"groups": {"a": {"allowed_lateness": "1d"}, "b": {}}}, r"groups a, b read the same source with different "
                                                             r"allowed_lateness \(a: 1d, b: 2d\)"),
    ({"groups": {"a": {"fields": {"x": "long"}, "aggregations": {"s": "sum"}},
                 "b": {"fields": {"x": "double"}, "aggregations": {"s": "sum"}}}}, "field x is bigint in one"),
    ({"groups": {"clicks": {"source": CLICKS}}}, "groups.clicks.source: its ingest would be named clicks, as group"),
    ({"groups": {"a": {"source": CLICKS}, "b": {"source": {"path": "/data/clicks", "time": "ts"}}}},
     "groups.b.source: another source is also named clicks"),
    ({"groups": {"a": {"source": {**CLICKS, "name": "events"}}}}, "its ingest would be named events, a table"),
    ({"groups": {"a": {"source": {"landing": "orders"}}}}, "groups.a: source.landing must be an absolute path"),
    ({"groups": {"a": {"source": {"landing": "/data/orders", "time": "ts"}}}},
     r"groups.a: source: landing folders take no time \(each record says its own time, arrival and id\)"),
    ({"groups": {"a": {"source": {"landing": "/data/orders", "path": "/data/o"}}}}, "landing folders take no path"),
    ({"groups": {"a": {"key": ["user_id", "country"], "spine": {"path": "/s", "key": "u"}}}},
     "groups.a: spine.key: the key is user_id, country: name as many spine columns, in that order, got u"),
    ({"groups": {"a": {}}, "spine": {"path": "/s"}}, "spine.groups: beside groups:, name the groups"),
    ({"groups": {"a": {"online": {"url": "postgresql://u@h:5432/d"}}, "b": {"online": {"url": "postgresql://u@h:5432/d"}}}},
     "groups.b.online: group a serves into the table window_values too; give each its own"),
    ({"groups": {"a": {}}, "spine": {"path": "/s", "groups": {"b": {}}}}, "spine.groups.b: no group 'b'"),
    ({"groups": {"a": {}}, "spine": {"path": "/s", "groups": {"a": {"key": ["u", "c"]}}}},
     "spine.groups.a.key: the group's key is user_id: name as many spine columns"),
    ({"groups": {"a": {}}, "spine": {"path": "/s", "groups": {"a": {"windows": ["1h"]}}}},
     "spine.groups.a.windows: 1h not configured"),
    ({"groups": {"a": {}}, "spine": {"path": "/s", "key": "u", "groups": {"a": {}}}}, r"spine: unknown field\(s\) key"),
    ({"groups": {"a": {}}, "spine": {"path": "/s", "ts": "user_id", "groups": {"a": {}}}},
     "spine.groups.a.key and spine.ts are both 'user_id'"),
    ({"groups": {"a": {"partition": "1h"}, "b": {}}},
     r"groups: give every group the same partition \(a: 1h, b: 1d\): their ingest and schedules are shared"),
    ({"groups": {"a": {"partition": "1h"}}, "spine": {"path": "/s", "groups": {"a": {}}}},
     "partition: 1h is below a day, and a spine: joined to several groups runs by whole days"),
])
def test_a_bad_group_configuration_is_one_line_naming_it(raw, message):
    with pytest.raises(ValueError, match=message) as err:
        Deployment.from_dict(raw)
    assert "\n" not in str(err.value)


def test_a_group_over_landing_folders_of_its_own_has_an_ingest_of_its_own():
    deployment = Deployment.from_dict({"groups": {"views": {}, "bought": {"source": {"landing": "/data/orders"}}}})
    bought = deployment.group("bought")
    ingest = deployment.ingest_of(bought)
    assert [i.ingest_at for i in deployment.ingests] == [None, "orders"] and not ingest.source.is_table
    assert ingest.source.columns() == [] and asset_key("events", bought) == ["orders", "events"]
    assert ingest_root(root("/lake", bought), bought) == "/lake/orders"


def test_a_group_is_named_when_it_is_asked_for():
    deployment = Deployment.from_dict({"groups": {"a": {}, "b": {}}})
    with pytest.raises(ValueError, match=r"declares groups \(a, b\): name one"):
        deployment.group(None)
    with pytest.raises(ValueError, match="no group 'c'; the configuration declares a, b"):
        deployment.group("c")


def test_the_documented_groups_load():
    """The example of docs/reference/configuration.md#groups is a deployment, as written."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "reference" / "configuration.md").read_text()
    example = page.split("## Groups", 1)[1].split("```yaml", 1)[1].split("```", 1)[0]
    deployment = Deployment.from_dict(config_yaml.load(example))
    assert deployment.names == ["views", "checkout_visits", "clicks"]
    assert [i.ingest_at for i in deployment.ingests] == [None, "clicks_table"]
    assert deployment.group("checkout_visits").fields == deployment.group("views").fields
    assert [(g.name, g.key) for g in deployment.spine.groups] == [("views", ("user_id",)),
                                                                  ("clicks", ("user_id", "country"))]


def test_a_group_named_twice_is_refused_where_it_is_written(tmp_path):
    path = tmp_path / "twice.yaml"
    path.write_text("groups:\n  views: {}\n  clicks: {}\n  views: {where: value > 1}\n")
    with pytest.raises(ValueError, match=r"groups: key 'views' is given twice \(line 2, column 3 and line 4, "
                                         r"column 3\)"):
        Deployment.load(path)
