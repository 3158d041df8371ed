from functools import reduce
from pathlib import Path

import pytest

from windowing_core import config_yaml
from windowing_core.config import PipelineConfig, reads_day_tiles


def test_defaults_are_one_7d_window_with_count_and_sum():
    config = PipelineConfig.from_dict({})
    assert [w.name for w in config.windows] == ["7d"]
    assert config.windows[0].length == 7 * 86400 and config.windows[0].every == 60
    assert [a.name for a in config.aggregations] == ["count", "sum"]
    assert config == PipelineConfig()


def test_allowed_lateness_below_a_day_is_kept_to_the_second():
    """A lateness below (or not in) whole days counts from the event time; its readers still read
    whole arrival days, as many as it reaches into."""
    config = PipelineConfig.from_dict({"allowed_lateness": "36h"})
    assert (config.allowed_lateness, config.allowed_lateness_days, config.lateness_by_date) == (129600, 2, False)
    assert PipelineConfig.from_dict({"allowed_lateness": "90m"}).allowed_lateness_days == 1
    zero = PipelineConfig.from_dict({"allowed_lateness": "0d"})
    assert (zero.allowed_lateness_days, zero.lateness_by_date) == (0, True)


@pytest.mark.parametrize(
    "raw, message",
    [
        ({"windowz": {}}, "unknown configuration field.*windowz"),
        ({"windows": {"w": {"length": "7d", "slid": "1m"}}}, "windows.w: unknown field.*slid"),
        ({"windows": {"w": {"slide": "1m"}}}, "windows.w.length is required"),
        ({"windows": {"w": {"length": "0d"}}}, "windows.w.length must be positive"),
        ({"windows": {"w": {"length": "90s", "slide": "1m"}}}, "windows.w.length .* multiple"),
        ({"aggregations": {"n": "median"}}, "unknown aggregation 'median'"),
        ({"allowed_lateness": "-3h"}, "allowed_lateness"),
        ({"key_field": ""}, "key_field"),
        ({"windows": {}}, "windows: declare at least one window"),
        ({"windows": ["7d"]}, "windows: expected a mapping"),
        ({"aggregations": {}}, "aggregations: declare at least one aggregation"),
        ({"aggregations": ["count"]}, "aggregations: expected a mapping"),
        ({"windows": {"w": {"length": "1h", "offset": "quarter"}}}, "windows.w.offset: cannot parse"),
        ({"windows": {"w": {"length": "1h", "align_to": "2025-01-30 00:00"}}},
         "windows.w.align_to: expected a UTC timestamp"),
        ({"windows": {"w": {"length": "1h", "offset": "0m", "align_to": "2025-01-30T00:00:00Z"}}},
         "windows.w: give offset or align_to, not both"),
    ],
)
def test_bad_configuration_names_the_field(raw, message):
    with pytest.raises(ValueError, match=message):
        PipelineConfig.from_dict(raw)


def test_blank_windows_and_aggregations_mean_the_defaults():
    assert PipelineConfig.from_dict({"windows": None, "aggregations": None}) == PipelineConfig()


@pytest.mark.parametrize("text", ["- 7d\n", "just a string\n"])
def test_a_file_that_is_not_a_mapping_is_a_clear_error(tmp_path, text):
    path = tmp_path / "config.yaml"
    path.write_text(text)
    with pytest.raises(ValueError, match="configuration: expected a mapping of fields, got"):
        PipelineConfig.load(path)


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="cannot read configuration file"):
        PipelineConfig.load(tmp_path / "nope.yaml")


# Issue 30, item 13: the thirteen configurations that ended in tracebacks, each a one-line
# ValueError naming the field.
BAD_CONFIGURATIONS = {
    "windows: {7d: {length: 7d\n": "is not valid YAML: expected ',' or '}'",
    "windows:\n\t7d: {length: 7d}\n": "is not valid YAML: found character '\\t'",
    "key_field: !!python/object:os.system user\n": "is not valid YAML: could not determine a constructor",
    "aggregations: {a.b: sum}\n": "aggregations.a.b: an output column's name",
    "aggregations: {'a`b': sum}\n": "aggregations.a`b: an output column's name",
    "aggregations: {table: sum}\n": "aggregations.table: the name is reserved",
    "aggregations: {Date: sum}\n": "aggregations.Date: the name is reserved",
    "aggregations: {KEY: count}\n": "aggregations.KEY: the name is reserved",
    "key_field: 'user`id'\n": "key_field 'user`id': use letters",
    "key_field: value\n": "key_field and value_field are both 'value'",
    "key_field: timestamp\n": "key_field 'timestamp': a record's timestamp field",
    "allowed_lateness: 3000000d\n": "allowed_lateness must be at most 366d",
    "windows: {w: {length: 1000000w}}\n": "windows.w.length (7000000d) must be at most 3660d",
}


@pytest.mark.parametrize("text", sorted(BAD_CONFIGURATIONS))
def test_a_bad_configuration_is_one_line_naming_the_field(tmp_path, text):
    path = tmp_path / "panes.yaml"
    path.write_text(text)
    with pytest.raises(ValueError) as err:
        PipelineConfig.load(path)
    assert BAD_CONFIGURATIONS[text] in str(err.value)
    assert "\n" not in str(err.value)


def test_names_that_differ_only_in_case_are_duplicates():
    with pytest.raises(ValueError, match="duplicate name"):
        PipelineConfig.from_dict({"aggregations": {"total": "sum", "Total": "count"}})


def test_align_to_reads_a_yaml_timestamp():
    import yaml

    config = PipelineConfig.from_dict(yaml.safe_load(
        "windows: {w: {length: 1h, slide: 90m, align_to: 2025-01-30T00:30:00Z}}"))
    assert config.windows[0].offset == 30 * 60


def test_every_window_kind_reads_from_yaml():
    import yaml

    config = PipelineConfig.from_dict(yaml.safe_load("""
        watermark_clock: arrival
        windows:
          today: {length: 1d, step: 10m, offset: -8h}
          all: {length: 1h, slide: 20m, keyed: false, emit: final}
    """))
    today, every_key = config.windows
    assert (today.cumulating, today.every, today.offset) == (True, 600, 16 * 3600)
    assert (every_key.keyed, every_key.emit) == (False, "final")
    assert config.watermark_clock == "arrival"


@pytest.mark.parametrize("window, message", [
    ({"length": "1d", "step": "7m"}, r"^windows\.w\.step \(7m\) must divide the length \(1d\) into whole steps$"),
    ({"length": "1d", "step": "10m", "slide": "10m"}, r"^windows\.w\.step: a cumulating window has no slide"),
    ({"length": "1d", "keyed": "no"}, r"^windows\.w\.keyed must be true or false"),
    ({"length": "1d", "emit": "always"}, r"^windows\.w\.emit must be 'changes' or 'final'"),
])
def test_bad_new_window_fields_fail_with_one_line_naming_the_field(window, message):
    with pytest.raises(ValueError, match=message):
        PipelineConfig.from_dict({"windows": {"w": window}})


def test_a_spine_takes_its_key_from_the_key_field_and_names_what_it_attaches():
    config = PipelineConfig.from_dict({"key_field": "account", "windows": {"1h": {"length": "1h"}, "v": {"gap": "30m"}},
                                       "spine": {"path": "/data/labels", "windows": "1h, v", "exclusive": True}})
    spine = config.spine
    assert (spine.source, spine.key, spine.ts, spine.windows, spine.exclusive) == \
        ("/data/labels", "account", "ts", ("1h", "v"), True)
    assert PipelineConfig.from_dict({}).spine is None


@pytest.mark.parametrize("spine, message", [
    ({"ts": "at"}, "spine: give a path or a table, one of them"),
    ({"path": "/x", "table": "db.t"}, "spine: give a path or a table"),
    ({"table": "db labels"}, "spine.table must be a table name"),
    ({"path": "/x", "format": "csv"}, "spine.format must be one of delta, parquet"),
    ({"path": "/x", "ts": "label time"}, "spine.ts must be a column name"),
    ({"path": "/x", "key": "ts"}, "spine.key and spine.ts are both 'ts'"),
    ({"path": "/x", "windows": ["30d"]}, "spine.windows: 30d not configured"),
    ({"path": "/x", "aggregations": ["p99"]}, "spine.aggregations: p99 not configured"),
    ({"path": "/x", "exclusive": "yes"}, "spine.exclusive must be true or false"),
    ({"path": "/x", "precision": "exact"}, "spine.precision must be one of bucket, event, got 'exact'"),
    ({"path": "/x", "label": "y"}, "spine: unknown field.*label"),
    ("/x", "spine: expected a mapping"),
])
def test_a_bad_spine_names_the_field(spine, message):
    with pytest.raises(ValueError, match=message):
        PipelineConfig.from_dict({"spine": spine})


# Issue 29: declared, typed fields and the long form of an aggregation.
TYPED = {
    "fields": {"amount": "decimal(12,2)", "latency_ms": "double", "clicks": "long", "page": "string",
               "ok": "boolean"},
    "value_field": "clicks",
    "aggregations": {
        "clicks_total": "sum",  # the short form: the kind over value_field
        "revenue": {"kind": "sum", "field": "amount"},
        "p_latency": {"kind": "mean", "field": "latency_ms"},
        "last_page": {"kind": "last", "field": "page"},
        "any_ok": {"kind": "max", "field": "ok"},
    },
}


def test_typed_fields_and_the_long_form_build_aggregations_of_their_field():
    config = PipelineConfig.from_dict(TYPED)
    assert config.measured_fields == (("amount", "decimal(12,2)"), ("latency_ms", "double"),
                                      ("clicks", "bigint"), ("page", "string"), ("ok", "boolean"))
    built = {a.name: (a.kind, a.field, a.value_type, a.output_type, a.invertible) for a in config.aggregations}
    assert built == {
        "clicks_total": ("sum", "clicks", "bigint", "decimal(38,0)", True),
        "revenue": ("sum", "amount", "decimal(12,2)", "decimal(38,2)", True),
        "p_latency": ("mean", "latency_ms", "double", "double", False),
        "last_page": ("last", "page", "string", "string", False),
        "any_ok": ("max", "ok", "boolean", "boolean", False),
    }


def test_without_fields_the_long_form_reads_the_one_value():
    config = PipelineConfig.from_dict({"value_field": "clicks",
                                       "aggregations": {"n": "count", "total": {"kind": "sum", "field": "clicks"}}})
    assert [(a.field, a.value_type) for a in config.aggregations] == [("value", "bigint")] * 2
    assert config.measured_fields == (("value", "bigint"),)


@pytest.mark.parametrize("raw, message", [
    ({"fields": {"page": "string"}, "aggregations": {"total": {"kind": "sum", "field": "page"}}},
     "aggregations.total: sum needs a numeric field, page is string"),
    ({"fields": {"ok": "boolean"}, "aggregations": {"avg": {"kind": "mean", "field": "ok"}}},
     "aggregations.avg: mean needs a numeric field, ok is boolean"),
    ({"fields": {"amount": "money"}}, r"fields.amount: unknown type 'money'; use one of long, double"),
    ({"fields": {"amount": "decimal(19,2)"}}, r"fields.amount: decimal\(19,2\) needs 1 <= P <= 18"),
    ({"fields": {"amount": "decimal(4,5)"}}, r"fields.amount: decimal\(4,5\) needs"),
    ({"fields": {"event_id": "long"}}, "fields.event_id: the name is taken"),
    ({"fields": {"user_id": "string"}}, "fields.user_id: the name is taken by the key"),
    ({"fields": {"a-b": "long"}}, "fields.a-b: a field's name uses letters"),
    ({"fields": {"Amount": "long", "amount": "double"}}, "fields .*duplicate name"),
    ({"fields": []}, "fields: expected a mapping"),
    ({"fields": {"a": "long", "b": "long"}, "aggregations": {"total": "sum"}},
     r"aggregations.total: name its field, \{kind: sum, field: ...\}"),
    ({"fields": {"a": "long"}, "aggregations": {"total": {"kind": "sum", "field": "b"}}},
     "aggregations.total.field: no field 'b'; fields declares a"),
    ({"fields": {"a": "long"}, "value_field": "b"}, "value_field 'b' is not among fields"),
    ({"aggregations": {"total": {"field": "value"}}}, "aggregations.total.kind is required"),
    ({"aggregations": {"total": {"kind": "sum", "k": 3}}}, r"aggregations.total.k: sum takes no parameter 'k'"),
    ({"aggregations": {"total": {"kind": "sum", "field": "amount"}}}, "aggregations.total.field: no field 'amount'"),
])
def test_bad_typed_configuration_names_the_field(raw, message):
    with pytest.raises(ValueError, match=message):
        PipelineConfig.from_dict(raw)


PRICED = {"fields": {"price": "decimal(10,2)", "quantity": "long", "amount": "decimal(18,2)", "kind": "string"},
          "value_field": "price"}


def test_computed_columns_are_fields_not_read_from_the_source_and_a_filter_may_use_them():
    config = PipelineConfig.from_dict({
        **PRICED, "columns": {"amount": "price * quantity"}, "where": "kind = 'buy' AND amount > 0",
        "aggregations": {"spent": {"kind": "sum", "field": "amount"}}})
    assert config.columns == (("amount", "price * quantity"),)
    assert config.source_fields == (("price", "decimal(10,2)"), ("quantity", "bigint"), ("kind", "string"))
    assert ("amount", "decimal(18,2)") in config.measured_fields
    assert config.aggregations[0].value_type == "decimal(18,2)"


@pytest.mark.parametrize("raw, message", [
    ({**PRICED, "columns": {"total": "price * quantity"}}, r"columns.total: declare its type in fields"),
    ({**PRICED, "columns": {"amount": "price *"}}, r"columns.amount: 'price \*' does not parse as Spark SQL"),
    ({**PRICED, "columns": {"amount": "price * qty"}}, r"columns.amount: .* refers to 'qty', which is none of "
                                                       r"key, event_time, price, quantity, kind$"),
    ({**PRICED, "columns": {"amount": "sum(price)"}}, r"columns.amount: .*SUM\(price\) aggregates rows"),
    ({**PRICED, "columns": {"amount": "price * rand()"}}, r"columns.amount: .*rand differs between runs"),
    ({**PRICED, "columns": {"amount": "(select 1)"}}, r"columns.amount: .*a query is not a row expression"),
    ({**PRICED, "columns": {"amount": "price; quantity"}}, r"columns.amount: .*2 statements"),
    ({**PRICED, "columns": {"amount": "t.price"}}, r"columns.amount: .*by its name alone"),
    ({**PRICED, "columns": {"amount": 3}}, r"columns.amount: expected a Spark SQL expression as a string"),
    ({**PRICED, "columns": ["amount"]}, r"columns: expected a mapping of field name"),
    ({**PRICED, "where": "amt > 0"},
     r"where: 'amt > 0' refers to 'amt', which is none of key, event_time, price, quantity, amount, kind$"),
    ({**PRICED, "where": "kind ="}, r"where: .*does not parse"),
    ({**PRICED, "where": "count(*) > 1"}, r"where: .*aggregates rows"),
    ({**PRICED, "where": "row_number() over (order by price) = 1"}, r"where: .*aggregates rows"),
])
def test_a_bad_computed_column_or_filter_is_one_line_naming_it(raw, message):
    with pytest.raises(ValueError, match=message):
        PipelineConfig.from_dict(raw)


@pytest.mark.parametrize("source, message", [
    ("db.clicks", "source: expected a mapping with a table"),
    ({"table": "db.clicks", "when": "ts"},
     r"source: unknown field\(s\) when; known: arrival, format, id, landing, name, path, table, time"),
    ({"table": "db.clicks", "path": "/data/clicks"}, "source: give a path or a table, one of them"),
    ({"time": "ts"}, "source: give a path or a table, one of them"),
    ({"path": "data/clicks"}, "source.path must be an absolute path or a URI"),
    ({"table": "db.clicks", "format": "delta"}, "source.format: a table's format is the catalog's"),
    ({"path": "/data/clicks", "format": "csv"}, "source.format must be one of delta, parquet"),
    ({"table": "db.clicks", "time": "event time"}, "source.time must be a column name"),
    ({"table": "db.clicks", "time": "ts", "arrival": "ts"}, "source: time, arrival and id must be different columns"),
    ({"table": "db.clicks", "time": "user_id"}, "source: column 'user_id' is also the key or a field"),
])
def test_a_bad_source_is_one_line_naming_it(source, message):
    with pytest.raises(ValueError, match=message):
        PipelineConfig.from_dict({"source": source})


def test_a_table_source_names_its_columns():
    config = PipelineConfig.from_dict({"source": {"table": "db.clicks", "time": "ts", "id": "click_id"}})
    assert (config.source.location, config.source.columns()) == ("db.clicks", ["ts", "click_id"])


def test_one_declared_field_is_the_default_of_the_short_form():
    config = PipelineConfig.from_dict({"fields": {"amount": "decimal(12,2)"}, "aggregations": {"n": "count", "t": "sum"}})
    assert [(a.field, a.value_type) for a in config.aggregations] == [("amount", "decimal(12,2)")] * 2


@pytest.mark.parametrize("window, aggregations, kept", [
    ({"length": "7d", "slide": "1m"}, {"low": "min"}, True),     # a day tile slides
    ({"length": "1h", "slide": "1m"}, {"low": "min"}, False),    # tiles under a day, from frames
    ({"length": "7d", "slide": "1m"}, {"total": "sum"}, False),  # invertible: the running sum alone
    ({"length": "2d", "step": "1h"}, {"low": "min"}, True),      # a period's whole days as tiles
    ({"length": "1d", "step": "1h"}, {"low": "min"}, False),     # a period of a day holds no whole day before a run
    ({"length": "2d", "step": "1h", "time": "arrival"}, {"low": "min"}, False),  # merged from arrival frames
])
def test_day_tiles_are_kept_only_where_a_window_reads_them(window, aggregations, kept):
    config = PipelineConfig.from_dict({"windows": {"w": window}, "aggregations": aggregations})
    assert reads_day_tiles(config) is kept


# Issue 47, item 7: hostile YAML structure is one line, never a traceback or a hang.
def _laughs(levels: int) -> str:
    """A billion laughs: each list holds nine aliases of the one before, 9**levels strings."""
    lists = ['&l0 ["x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    lists += [f"&l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]" for i in range(1, levels)]
    return "key_field: [" + ", ".join(lists) + "]\n"


HOSTILE_STRUCTURES = {
    "[" * 5000 + "]" * 5000 + "\n": "nests lists and mappings more than 50 deep (line 1, column 51)",
    "a:\n" + "".join("  " * i + f"b{i}:\n" for i in range(1, 60)) + "  " * 60 + "c\n":
        "nests lists and mappings more than 50 deep (line 50, column ",
    "1: 2\n": "unknown configuration field(s): 1; known: aggregations,",
    "~: 2\nwindowz: 1\n": "unknown configuration field(s): None, windowz; known:",
    "windows: {w: {length: 1h, 1: a, x: b}}\n": "windows.w: unknown field(s) 1, x",
    "windows: {s: {gap: 30m, 2025-01-01: x}}\n": "windows.s: unknown field(s) 2025-01-01",
    "spine: {path: /x, 2.5: y}\n": "spine: unknown field(s) 2.5; known:",
    _laughs(6): "its aliases expand to more than 100000 values (line 1, column ",
    "key_field: &a [*a]\n": "an alias refers to a list or mapping that holds it (line 1, column 16)",
}


def _refused(tmp_path, text):
    """The configuration file holding ``text``, and the ValueError its loading raises."""
    path = tmp_path / "panes.yaml"
    path.write_text(text)
    with pytest.raises(ValueError) as err:
        PipelineConfig.load(path)
    return path, str(err.value)


@pytest.mark.parametrize("text", sorted(HOSTILE_STRUCTURES), ids=lambda t: t[:20])
def test_a_hostile_yaml_structure_is_one_line(tmp_path, text):
    _, refusal = _refused(tmp_path, text)
    assert HOSTILE_STRUCTURES[text] in refusal
    assert "\n" not in refusal and len(refusal) < 400


# Issue 47, item 9: a key given twice, at any depth, is refused with both places; YAML would
# silently keep the last.
DUPLICATE_KEYS = {
    "windows:\n  w: {length: 1h}\n  w: {length: 2h}\n":
        "windows: key 'w' is given twice (line 2, column 3 and line 3, column 3)",
    "aggregations:\n  t: sum\n  n: count\n  t: count\n":
        "aggregations: key 't' is given twice (line 2, column 3 and line 4, column 3)",
    "bucket: 1m\nwindows: {w: {length: 1h}}\nbucket: 5m\n":
        "the top level: key 'bucket' is given twice (line 1, column 1 and line 3, column 1)",
    "windows: {w: {length: 1h, length: 2h}}\n":
        "windows.w: key 'length' is given twice (line 1, column 15 and line 1, column 27)",
    "aggregations:\n  t: {kind: sum, field: value, kind: count}\n":
        "aggregations.t: key 'kind' is given twice (line 2, column 7 and line 2, column 32)",
    "spine:\n  path: /a\n  ts: at\n  path: /b\n":
        "spine: key 'path' is given twice (line 2, column 3 and line 4, column 3)",
    "fields: {a: long, b: double, a: string}\n":
        "fields: key 'a' is given twice (line 1, column 10 and line 1, column 30)",
    "windows: [{length: 1h, length: 2h}]\n":
        "windows[0]: key 'length' is given twice",
    "1: a\n0x1: b\n": "the top level: key 1 is given twice (line 1, column 1 and line 2, column 1)",
}


@pytest.mark.parametrize("text", sorted(DUPLICATE_KEYS), ids=lambda t: t[:24])
def test_a_key_given_twice_is_refused_naming_it_and_where(tmp_path, text):
    path, refusal = _refused(tmp_path, text)
    assert f"configuration file {path}: {DUPLICATE_KEYS[text]}" in refusal
    assert "\n" not in refusal


def test_merge_keys_may_still_override_what_they_merge(tmp_path):
    path = tmp_path / "panes.yaml"
    path.write_text("windows:\n  base: &base {length: 1h, slide: 10m}\n  other: {<<: *base, slide: 20m}\n")
    config = PipelineConfig.load(path)
    assert [(w.name, w.length, w.every) for w in config.windows] == [("base", 3600, 600), ("other", 3600, 1200)]


# Issue 47, item 11: every duration a configuration holds is capped (3660d, the windows' cap;
# the lateness at 366d, the bucket at a day it divides).
@pytest.mark.parametrize("raw, message", [
    ({"windows": {"s": {"gap": "99999999d"}}}, r"^windows\.s\.gap \(99999999d\) must be at most 3660d"),
    ({"windows": {"s": {"gap": 10**30}}}, r"^windows\.s\.gap \(\d+s\) must be at most 3660d"),
    ({"windows": {"s": {"gap": "30m", "max_length": "99999999d"}}},
     r"^windows\.s\.max_length \(99999999d\) must be at most 3660d"),
    ({"windows": {"w": {"length": "99999999d"}}}, r"^windows\.w\.length \(99999999d\) must be at most 3660d"),
    ({"windows": {"w": {"length": "7d", "slide": "99999999d"}}}, r"^windows\.w\.slide \(99999999d\) must be at most"),
    ({"windows": {"w": {"length": "7d", "step": "99999999d"}}}, r"^windows\.w\.step \(99999999d\) must be at most"),
    ({"windows": {"w": {"length": "7d", "offset": "99999999d"}}}, r"^windows\.w\.offset \(99999999d\) must be at most"),
    ({"max_out_of_orderness": "99999999d"}, r"^max_out_of_orderness must be at most 3660d"),
    ({"freshness_slack": "99999999d"}, r"^freshness_slack must be at most 3660d"),
    ({"allowed_lateness": "99999999d"}, r"^allowed_lateness must be at most 366d"),
    ({"freshness_slack": "9" * 5000 + "s"}, r"^freshness_slack: '9{20}\.\.\.' is longer than any duration"),
    ({"bucket": "99999999d", "windows": {"s": {"gap": "99999999d"}}}, r"^bucket \(99999999d\) must divide one day"),
    ({"bucket": "2d", "windows": {"s": {"gap": "2d"}}}, r"^bucket \(2d\) must divide one day evenly"),
    ({"bucket": "7m", "windows": {"s": {"gap": "70m"}}}, r"^bucket \(7m\) must divide one day evenly"),
    ({"bucket": "0s", "windows": {"s": {"gap": "30m", "max_length": "1h"}}}, r"^bucket must be positive, got 0s"),
    ({"bucket": "-1m", "windows": {"s": {"gap": "30m"}}}, r"^bucket must be positive, got -1m"),
])
def test_every_duration_a_configuration_holds_is_capped(raw, message):
    with pytest.raises(ValueError, match=message):
        PipelineConfig.from_dict(raw)


# Issue 47, item 11: spine.path is the one path a configuration names: absolute or a URI.
@pytest.mark.parametrize("path", ["../../../../etc/passwd", "labels", "./labels", "~/labels", "colon:name"])
def test_a_relative_spine_path_is_refused(path):
    with pytest.raises(ValueError, match=r"^spine\.path must be an absolute path or a URI .*, got "):
        PipelineConfig.from_dict({"spine": {"path": path}})


@pytest.mark.parametrize("path", ["/data/labels", "/data/../labels", "s3a://bucket/labels", "file:///data/labels",
                                  "hdfs://namenode:8020/labels", "abfss://c@account.dfs.core.windows.net/labels"])
def test_an_absolute_spine_path_or_uri_is_taken_as_given(path):
    assert PipelineConfig.from_dict({"spine": {"path": path}}).spine.path == path


def test_an_online_store_takes_a_url_without_its_password_and_a_table():
    config = PipelineConfig.from_dict({"online": {"url": "postgresql://panes@db:5432/features"}})
    assert (config.online.url, config.online.table) == ("postgresql://panes@db:5432/features", "window_values")
    assert config.online.schema_and_table == (None, "window_values")
    named = PipelineConfig.from_dict({"online": {"url": "postgres://db/f", "table": "features.values_7d"}})
    assert named.online.schema_and_table == ("features", "values_7d")
    assert PipelineConfig.from_dict({}).online is None


@pytest.mark.parametrize("online, message", [
    ({"url": "postgresql://panes:hunter2@db/f"}, "holds a password: leave it out and set PANES_ONLINE_PASSWORD"),
    ({"url": "mysql://db/f"}, "online.url must be a postgresql:// URL"),
    ({"table": "t"}, "online.url is missing"),
    ({"url": "postgresql://db/f", "table": "a; DROP TABLE b"}, "online.table must be a table name"),
    ({"url": "postgresql://db/f", "tabel": "t"}, "online: unknown field(s) tabel"),
    ("postgresql://db/f", "online: expected a mapping"),
])
def test_a_bad_online_store_names_the_field_and_never_shows_a_password(online, message):
    with pytest.raises(ValueError) as refused:
        PipelineConfig.from_dict({"online": online})
    assert message in str(refused.value) and "hunter2" not in str(refused.value)


CLICKS = {"fields": {"clicked": "long", "price": "decimal(12,2)", "quantity": "long", "page": "string"}}


def test_custom_aggregations_as_the_docs_write_them():
    """The example of docs/reference/aggregations.md#your-own-aggregations-kind-custom, as written."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "reference" / "aggregations.md").read_text()
    example = page.split("## Your own aggregations", 1)[1].split("```yaml", 1)[1].split("```", 1)[0]
    ctr, weighted, pages = PipelineConfig.from_dict(config_yaml.load(example)).aggregations
    assert (ctr.kind, ctr.invertible, ctr.output_type, ctr.reads) == ("custom", True, "double", ("clicked",))
    assert [(f.name, f.spark_type) for f in weighted.fields] == [("w", "decimal(38,0)"), ("wp", "decimal(38,2)")]
    assert weighted.field_columns() == ["weighted_price__w", "weighted_price__wp"]
    assert weighted.row_expressions == (("weighted_price.w", "quantity", "bigint"),
                                        ("weighted_price.wp", "price * quantity", "decimal(33,2)"))
    assert (pages.invertible, pages.output_type) == (False, "boolean")
    clicked = reduce(ctr.accumulate, [(1, 1), (0, 1), (1, 1)], ctr.empty())  # as the page says
    assert ctr.finish(clicked) == 0.6666666666666666 and ctr.finish(ctr.deduct(clicked, clicked)) is None
    assert pages.finish(pages.accumulate(pages.empty(), ("b", "a"))) is True


def _custom(partials, value="x", **more):
    return {**CLICKS, "aggregations": {"c": {"kind": "custom", "partials": partials, "value": value, **more}}}


@pytest.mark.parametrize("raw, message", [
    (_custom({"x": "sum(nope)"}), r"aggregations.c.partials.x: 'nope' refers to 'nope', which is none of clicked"),
    (_custom({"x": "avg(clicked)"}), r"aggregations.c.partials.x: .*avg is not a partial's function; use sum"),
    (_custom({"x": "sum(sum(clicked))"}), r"aggregations.c.partials.x: .*nests an aggregate"),
    (_custom({"x": "sum(clicked) + 1"}), r"aggregations.c.partials.x: .*arithmetic over partials belongs in value"),
    (_custom({"x": "sum(clicked"}), r"aggregations.c.partials.x: .*does not parse as Spark SQL"),
    (_custom({"x": "sum(page)"}), r"aggregations.c.partials.x: sum needs a number, 'page' is string"),
    (_custom({"x": "count(DISTINCT page)"}), r"aggregations.c.partials.x: .*without DISTINCT"),
    (_custom({"x": "sum(rand())"}), r"aggregations.c.partials.x: .*differs between runs"),
    (_custom({"x": "max(upper(page))"}), r"aggregations.c.partials.x: .*the type of upper is not known .*cast it"),
    (_custom({"a__b": "count(*)"}), r"aggregations.c.partials.a__b: a partial's name uses letters"),
    (_custom({"x": "count(*)", "X": "count(*)"}), r"aggregations.c.partials: two partials' names differ only in case"),
    (_custom({}), r"aggregations.c.partials: expected a mapping"),
    (_custom({"x": "sum(clicked)"}, "y"),
     r"aggregations.c.value: 'y' refers to y, which is none of the partials \(x\)"),
    (_custom({"x": "sum(clicked)"}, "sum(x)"), r"aggregations.c.value: .*aggregates; the value sees the partials"),
    (_custom({"x": "sum(clicked)"}, "sqrt(x)"), r"aggregations.c.value: .*is not in a value's subset"),
    (_custom({"x": "sum(clicked)"}, "x +"), r"aggregations.c.value: .*does not parse"),
    (_custom({"x": "sum(clicked)", "p": "max(page)"}, "x + p"), r"aggregations.c.value: .*needs double operands"),
    (_custom({"x": "sum(clicked)"}, "if(x, 1, 2)"), r"aggregations.c.value: .*a condition must be true or false"),
    (_custom({"x": "sum(clicked)"}, "null"), r"aggregations.c.value: always null"),
    (_custom({"x": "sum(clicked)"}, type="decimal(10,2)"), r"aggregations.c.type: 'decimal\(10,2\)': a value is one"),
    (_custom({"x": "sum(clicked)"}, "x > 1", type="double"), r"aggregations.c.type: double does not fit the value"),
    ({**CLICKS, "aggregations": {"c": {"kind": "custom", "partials": {"x": "count(*)"}}}},
     r"aggregations.c.value is required"),
    (_custom({"x": "count(*)"}, field="page"), r"aggregations.c.field: custom takes partials, value and type"),
])
def test_a_bad_custom_aggregation_is_one_line_naming_it(raw, message):
    with pytest.raises(ValueError, match=message):
        PipelineConfig.from_dict(raw)


@pytest.mark.parametrize("raw, message", [
    ({"partition": "90m"}, r"partition \(90 minutes\) must be a day, minutes that divide an hour or hours that "
                           "divide a day"),
    ({"partition": "7h"}, r"partition \(420 minutes\) must be a day"),
    ({"partition": "30s"}, "partition must be whole minutes, got 30 s"),
    ({"partition": "2d"}, r"partition \(2880 minutes\) must be a day"),
    ({"partition": "15m", "bucket": "10m", "windows": {"w": {"length": "1h", "slide": "10m"}}}, r"partition \(15m\) must be whole buckets \(10m\)"),
    ({"partition": "1h", "windows": {"s": {"gap": "30m", "time": "arrival"}}},
     "partition: 1h is below a day, and a run below a day computes frames by event time only"),
    ({"partition": "1h", "windows": {"w": {"length": "7d", "slide": "2d"}}},
     "partition: 1h is below a day, and window 'w' ends less often than daily: it runs by whole days"),
    ({"partition": "1h", "windows": {"w": {"length": "1d", "time": "arrival"}}},
     "partition: 1h is below a day, and a run below a day computes frames by event time only"),
    ({"partition": "1h", "spine": {"path": "/s"}}, "partition: 1h is below a day, and spine: runs by whole days"),
])
def test_a_partition_below_a_day_is_refused_where_a_stage_cannot_run_in_parts(raw, message):
    with pytest.raises(ValueError, match=message) as err:
        PipelineConfig.from_dict(raw)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("text, seconds", [("1d", 86400), ("1h", 3600), ("15m", 900), ("2h", 7200), ("1m", 60)])
def test_a_partition_is_a_day_or_a_part_a_schedule_starts(text, seconds):
    assert PipelineConfig.from_dict({"partition": text}).partition == seconds
    assert PipelineConfig.from_dict({}).partition == 86400
    # sessions and count windows of event time run in parts too
    windows = {"s": {"gap": "30m"}, "c": {"count": 5, "slide": 2}, "w": {"length": "1h", "slide": "1m"}}
    assert PipelineConfig.from_dict({"partition": text, "windows": windows}).partition == seconds
    # a table source's rows arrive in the partition of their arrival time
    assert PipelineConfig.from_dict({"partition": text, "source": {"table": "db.clicks", "time": "ts"}}).partition == seconds
