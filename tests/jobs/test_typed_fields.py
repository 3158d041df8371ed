"""Declared, typed fields through the pipeline: strict parsing at ingest, exact decimals, doubles
that do not drift, and variances of longs that never overflow (issues 29 and 30)."""

from __future__ import annotations

import json
import math
import statistics
from datetime import date, datetime, timedelta, timezone
from decimal import ROUND_HALF_UP, Decimal

import pytest

from jobs import ingest_events, minute_partials, sliding_windows
from jobs.storage import delta_io
from jobs.tables import EVENTS, QUARANTINE, WINDOW_CHANGES
from windowing_core.config import PipelineConfig

DAY = date(2025, 1, 28)
FIELDS = {"amount": "decimal(12,2)", "latency_ms": "double", "clicks": "long", "page": "string", "ok": "boolean"}


def write_day(landing, lines, day=DAY):
    folder = landing / day.isoformat()
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "part-0.json").write_text("\n".join(lines) + "\n")


def record(event_id, minute=0, **fields):
    """A record's JSON text; string values of ``fields`` are written as raw JSON (``"12.50"``
    is the number 12.50, ``'"x"'`` the string x)."""
    at = datetime(DAY.year, DAY.month, DAY.day, 10, tzinfo=timezone.utc) + timedelta(minutes=minute)
    head = {"user_id": "u1", "timestamp": at.strftime("%Y-%m-%dT%H:%M:%SZ"), "event_id": event_id}
    return "{" + ", ".join([*(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in head.items()),
                            *(f"{json.dumps(k)}: {v}" for k, v in fields.items())]) + "}"


# The records ingest accepts, and each field's typed value: exactly the digits given, never a float.
GOOD = [
    (record("g1", amount="12.5", latency_ms="0.25", clicks="3", page='"home"', ok="true"),
     (Decimal("12.50"), 0.25, 3, "home", True)),
    (record("g2", amount='"7.05"', latency_ms="1e3", clicks='"42"', page='""', ok="false"),
     (Decimal("7.05"), 1000.0, 42, "", False)),
    (record("g3"), (None, None, None, None, None)),  # every field missing: null
    (record("g4", amount="null", latency_ms="null", clicks="null", page="null", ok="null"),
     (None, None, None, None, None)),
    (record("g5", amount="9999999999.99", clicks="9223372036854775807", latency_ms="-0.1"),
     (Decimal("9999999999.99"), -0.1, 2**63 - 1, None, None)),
    (record("g6", amount="-0.01", clicks="-9223372036854775808", latency_ms="12345678901234567890"),
     (Decimal("-0.01"), 1.2345678901234567e19, -(2**63), None, None)),
    (record("g7", amount="1.5e2", clicks="4.0"), (Decimal("150.00"), None, 4, None, None)),
    (record("g8", amount="0.10000"), (Decimal("0.10"), None, None, None, None)),  # trailing zeros are no digits
]

# Each record that must be quarantined, with the reason naming its field.
BAD = [
    (record("b1", amount="1.234"), "amount_beyond_scale"),
    (record("b2", amount="12345678901"), "amount_out_of_range"),
    (record("b3", amount='"abc"'), "amount_not_numeric"),
    (record("b4", amount="5e-2"), "amount_beyond_scale"),  # an exponent: a double, taken only where whole
    (record("b5", amount="true"), "amount_not_numeric"),
    (record("b6", latency_ms='"fast"'), "latency_ms_not_numeric"),
    (record("b7", latency_ms="[1]"), "latency_ms_not_numeric"),
    (record("b8", clicks="1.5"), "clicks_not_integer"),
    (record("b9", clicks="1e20"), "clicks_out_of_range"),
    (record("b10", clicks="9223372036854775808"), "clicks_out_of_range"),
    (record("b11", page="5"), "page_not_string"),
    (record("b12", ok='"yes"'), "ok_not_boolean"),
    (record("b13", ok="1"), "ok_not_boolean"),
    (record("b14", page="5", amount="1.234"), "amount_beyond_scale"),  # the first declared field's
]


def test_ingest_parses_each_declared_field_strictly_and_quarantines_by_field(spark, tmp_path):
    config = PipelineConfig.from_dict({"fields": FIELDS, "aggregations": {"n": {"kind": "count", "field": "clicks"}}})
    write_day(tmp_path / "landing", [line for line, _ in GOOD + BAD])
    lakehouse = str(tmp_path / "lakehouse")

    result = ingest_events.ingest(spark, str(tmp_path / "landing"), lakehouse, DAY, DAY, config)

    events = delta_io.read_table(spark, EVENTS.path(lakehouse))
    assert [(f.name, f.dataType.simpleString()) for f in events.schema.fields][2:7] == [
        ("amount", "decimal(12,2)"), ("latency_ms", "double"), ("clicks", "bigint"), ("page", "string"),
        ("ok", "boolean")]
    got = {r["event_id"]: tuple(r[f] for f in FIELDS) for r in events.collect()}
    assert got == {line.split('"event_id": "')[1].split('"')[0]: values for line, values in GOOD}
    quarantined = {r["raw"]: r["reason"] for r in delta_io.read_table(spark, QUARANTINE.path(lakehouse)).collect()}
    assert quarantined == {line: reason for line, reason in BAD}
    assert result.reconciles and result.accepted == len(GOOD) and result.quarantined == len(BAD)


def test_the_default_value_keeps_its_reasons_and_its_default_of_one(spark, tmp_path):
    write_day(tmp_path / "landing", [record("a"), record("b", value="1.5"), record("c", value='"x"'),
                                     record("d", value="1e20")])
    lakehouse = str(tmp_path / "lakehouse")
    ingest_events.ingest(spark, str(tmp_path / "landing"), lakehouse, DAY, DAY, PipelineConfig())
    assert [r["value"] for r in delta_io.read_table(spark, EVENTS.path(lakehouse)).collect()] == [1]
    reasons = sorted(r["reason"] for r in delta_io.read_table(spark, QUARANTINE.path(lakehouse)).collect())
    assert reasons == ["value_not_integer", "value_not_numeric", "value_out_of_range"]


def run(spark, tmp_path, config, lines, last=DAY):
    write_day(tmp_path / "landing", lines)
    for day in (DAY + timedelta(days=i) for i in range(1, 4)):
        (tmp_path / "landing" / day.isoformat()).mkdir(parents=True, exist_ok=True)
    lakehouse = str(tmp_path / "lakehouse")
    ingest_events.ingest(spark, str(tmp_path / "landing"), lakehouse, DAY, DAY + timedelta(days=3), config)
    minute_partials.run(spark, lakehouse, DAY, DAY, config)
    sliding_windows.run(spark, lakehouse, DAY, last, config)
    return delta_io.read_table(spark, WINDOW_CHANGES.path(lakehouse))


def test_decimal_sums_and_means_are_exact_to_the_last_digit(spark, tmp_path):
    """Tumbling 10-minute windows of decimal(12,2) amounts: each window's sum and mean equal
    Python's decimal arithmetic exactly, the mean rounded half away from zero at the scale
    (0.015 -> 0.02, -0.015 -> -0.02)."""
    config = PipelineConfig.from_dict({
        "fields": {"amount": "decimal(12,2)"},
        "windows": {"10m": {"length": "10m", "emit": "final"}},
        "aggregations": {"total": "sum", "avg": "mean", "low": "min"},
    })
    amounts = {0: ["0.01", "0.02"], 1: ["-0.01", "-0.02"], 2: ["9999999999.99"] * 7 + ["0.01"],
               3: ["0.10", "0.20", "0.30"], 4: ["1.00", "2.00", "2.00"], 5: ["33.33", "33.33", "33.34", "0.01"]}
    lines = [record(f"e{w}-{i}", minute=10 * w + i, amount=a) for w, values in amounts.items()
             for i, a in enumerate(values)]
    rows = run(spark, tmp_path, config, lines).orderBy("window_end").collect()

    expected = []
    for values in amounts.values():
        exact = [Decimal(v) for v in values]
        total = sum(exact, Decimal(0))
        mean = (total / len(exact)).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
        expected.append((total, mean, min(exact)))
    assert [(r["total"], r["avg"], r["low"]) for r in rows] == expected
    assert expected[0][1] == Decimal("0.02") and expected[1][1] == Decimal("-0.02")
    assert expected[2][0] == Decimal("69999999999.94")  # beyond the field's 12 digits, as a sum may be


def _window_sums(events, length, end):
    inside = [v for t, v in events if end - length <= t < end]
    return math.fsum(inside), sum(abs(v) for v in inside), len(inside)


def test_double_sums_do_not_drift_after_a_huge_value_enters_and_leaves(spark, tmp_path):
    """A 30-minute window sliding every minute over values near 0.1, one of them 1e15: while
    the huge value is inside, and after it has left, every change point's sum is within 1e-9 of
    the window's own magnitude (sum of |x| of its events), and the empty window is 0.0 exactly.

        minutes  0 .. 59: one value 0.1 + i/1000 each, and 1e15 at minute 20
        window   [end - 30m, end)
    """
    config = PipelineConfig.from_dict({
        "fields": {"latency_ms": "double"},
        "windows": {"30m": {"length": "30m", "slide": "1m"}},
        "aggregations": {"total": "sum", "avg": "mean", "n": "count"},
    })
    values = [(m, 0.1 + m / 1000) for m in range(60)] + [(20, 1e15)]
    lines = [record(f"e{i}", minute=m, latency_ms=repr(v)) for i, (m, v) in enumerate(values)]
    rows = run(spark, tmp_path, config, lines).collect()
    start = datetime(DAY.year, DAY.month, DAY.day, 10, tzinfo=timezone.utc).timestamp()
    events = [(start + 60 * m, v) for m, v in values]

    checked = 0
    for r in rows:
        end = r["window_end"].replace(tzinfo=timezone.utc).timestamp()
        exact, magnitude, count = _window_sums(events, 1800, end)
        assert r["n"] == count
        assert abs(r["total"] - exact) <= 1e-9 * magnitude, (r["window_end"], r["total"], exact)
        checked += 1
    last = max(rows, key=lambda r: r["window_end"])
    assert (last["n"], last["total"], last["avg"]) == (0, 0.0, None)  # emptied: no residue
    after = [r for r in rows if r["window_end"].minute >= 51 or r["window_end"].hour > 10]
    assert any(r["n"] and abs(r["total"]) < 10 for r in after), "windows after 1e15 left must be checked"
    assert checked > 60


def test_a_running_sum_of_double_deltas_drifts_and_a_compensated_one_keeps_a_residue():
    """Why double sums slide over tiles (``windowing_core.aggregations``): the same data as a
    running sum of +entering / -leaving deltas. A plain double running sum misses the bound by
    orders of magnitude once 1e15 has entered and left; Neumaier's compensated sum meets it, but
    the emptied window keeps a residue instead of 0, and it needs a sequential custom aggregate
    that Spark's window functions do not offer."""
    values = [0.1 + m / 1000 for m in range(60)]
    entering = values[:20] + [1e15] + values[20:]
    kept = entering[-10:]

    def plain(deltas):
        total = 0.0
        for d in deltas:
            total += d
        return total

    def neumaier(deltas):
        total = compensation = 0.0
        for d in deltas:
            t = total + d
            compensation += (total - t) + d if abs(total) >= abs(d) else (d - t) + total
            total = t
        return total + compensation

    leaving = [-v for v in entering[:-10]]
    bound = 1e-9 * sum(abs(v) for v in kept)
    assert abs(plain(entering + leaving) - math.fsum(kept)) > 1000 * bound
    assert abs(neumaier(entering + leaving) - math.fsum(kept)) <= bound
    assert neumaier(entering + [-v for v in entering]) != 0.0


def test_variance_of_longs_beyond_38_digits_of_squares_never_fails_a_day(spark, tmp_path):
    """Issue 30: the squares of two values of 2**63 - 1 leave decimal(38,0). The variance
    neither fails nor wraps: exact where the integer moments fit, and close otherwise."""
    config = PipelineConfig.from_dict({
        "windows": {"10m": {"length": "10m", "emit": "final"}},
        "aggregations": {"var": "var_pop", "sd": "stddev_samp", "total": "sum"},
    })
    big = 2**63 - 1
    groups = {0: [big, big], 1: [big, big - 1, big - 7], 2: [big, -big - 1], 3: [3, 5, 10**18]}
    lines = [record(f"e{w}-{i}", minute=10 * w + i, value=str(v)) for w, vs in groups.items()
             for i, v in enumerate(vs)]
    rows = run(spark, tmp_path, config, lines).orderBy("window_end").collect()
    for r, values in zip(rows, groups.values(), strict=True):
        assert r["total"] == sum(values)
        assert r["var"] == pytest.approx(float(statistics.pvariance(values)), rel=1e-12, abs=1e-9)
        assert r["sd"] == pytest.approx(float(statistics.stdev(values)), rel=1e-12, abs=1e-9)
    assert rows[0]["var"] == 0.0 and rows[3]["var"] == float(statistics.pvariance(groups[3]))
