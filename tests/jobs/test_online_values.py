"""The online store against a real PostgreSQL server (``tests/postgres_server.py``).

The snapshots here are random rows of every output type (doubles with NaN and infinities,
38-digit decimals, text with quotes and newlines, arrays and maps) written as ``window_snapshot``
by delta-rs: what a load reads does not depend on how the windows job made it, and the windows
job's own rows are compared with the oracle elsewhere. The property: after random loads, late
firings (a day's snapshot replaced) and re-runs in any order, each window's rows are exactly the latest day's snapshot as last loaded, and the consistency check says so (and fails where the store was tampered with or a firing not loaded).
"""

from __future__ import annotations

import json
import math
import os
import random
import signal
import subprocess
import sys
import time
from datetime import date, timedelta
from decimal import Decimal
from pathlib import Path

import psycopg2
import psycopg2.extras
import pyarrow as pa
import pytest
from deltalake import write_deltalake

from jobs.errors import MissingInputError, OnlineStoreError, StoreMismatchError
from jobs.online.day_snapshot import day_as_of, stored_key
from jobs.online.postgres import store_columns
from jobs.online_values import compare, load, lookup
from jobs.tables import WINDOW_SNAPSHOT
from tests.postgres_server import free_port, new_database, server_or_skip
from windowing_core.config import PipelineConfig
from windowing_core.online import OnlineSpec
from windowing_core.window_spec import from_epoch_seconds, to_epoch_seconds

ROOT = Path(__file__).parents[2]
CONFIG = {
    "fields": {"amount": "decimal(12,2)", "latency": "double", "page": "string", "clicks": "long"},
    "value_field": "clicks",
    "windows": {"7d": {"length": "7d", "slide": "1m"}, "day": {"length": "1d", "slide": "1d"},
                "all": {"length": "1d", "slide": "1h", "keyed": False}},
    "aggregations": {"clicks_total": "sum", "revenue": {"kind": "sum", "field": "amount"},
                     "latency_avg": {"kind": "mean", "field": "latency"},
                     "recent": {"kind": "last_k", "field": "page", "k": 3},
                     "pages": {"kind": "histogram", "field": "page"},
                     "p50": {"kind": "approx_percentile", "field": "latency", "percentiles": [0.5, 0.9]},
                     "last_page": {"kind": "last", "field": "page"},
                     "visitors": {"kind": "approx_distinct", "field": "page"}},
}
FIRST = date(2025, 1, 27)
DAYS = [FIRST + timedelta(days=i) for i in range(6)]
KEYS = [f"user-{i}" for i in range(8)] + ['quote"comma,', "line\nbreak", "ünï"]
TEXT = ["", "a", 'say "hi", then', "two\nlines", "tab\there", "é€😀", "\\N", "NULL"]


@pytest.fixture(scope="module")
def server():
    with server_or_skip() as running:
        yield running


@pytest.fixture
def store(server, tmp_path):
    host, port, user = server
    database = new_database(host, port, user, "online")
    config = PipelineConfig.from_dict({**CONFIG, "online": {"url": f"postgresql://{user}@{host}:{port}/{database}"}})
    return config, config.online, str(tmp_path / "lakehouse")


# -- random snapshots -----------------------------------------------------------------------------


def arrow_type(ddl: str) -> pa.DataType:
    if ddl.startswith("decimal"):
        precision, scale = ddl[len("decimal("):-1].split(",")
        return pa.decimal128(int(precision), int(scale))
    if ddl.startswith("array<"):
        return pa.list_(arrow_type(ddl[len("array<"):-1]))
    if ddl.startswith("map<"):
        key, value = ddl[len("map<"):-1].split(",")
        return pa.map_(arrow_type(key), arrow_type(value))
    return {"bigint": pa.int64(), "double": pa.float64(), "string": pa.string(), "boolean": pa.bool_()}[ddl]


def random_value(rng: random.Random, ddl: str):
    if rng.random() < 0.1:
        return None
    if ddl == "bigint":
        return rng.choice([0, -1, 2**63 - 1, -(2**63), rng.randrange(-10**12, 10**12)])
    if ddl == "double":
        return rng.choice([0.1, -0.0, 1 / 3, 1e300, 5e-324, math.nan, math.inf, -math.inf, rng.uniform(-1e6, 1e6)])
    if ddl.startswith("decimal"):
        scale = int(ddl[:-1].split(",")[1])
        return Decimal(rng.randrange(-10**36 + 1, 10**36)).scaleb(-scale)
    if ddl == "string":
        return rng.choice(TEXT) + str(rng.randrange(100))
    if ddl == "boolean":
        return rng.random() < 0.5
    if ddl.startswith("array<"):
        element = ddl[len("array<"):-1]
        return [v for v in (random_value(rng, element) for _ in range(rng.randrange(4))) if v is not None]
    if ddl.startswith("map<"):
        key, value = ddl[len("map<"):-1].split(",")
        return [(k, rng.randrange(1, 99)) for k in {random_value(rng, key) for _ in range(rng.randrange(4))} - {None}]
    raise AssertionError(ddl)


# A composite key (user_id, country): its JSON array as ingest writes it, and a column per field.
COMPOSITE = {**CONFIG, "key": ["user_id", "country"]}
COUNTRIES = ["CH", "DE", 'a "quoted", one', "ü"]


def composite_keys(config: PipelineConfig) -> list[dict]:
    if not config.key_fields:
        return [{"key": k} for k in KEYS]
    return [{"key": json.dumps([k, c], separators=(",", ":"), ensure_ascii=False), "user_id": k, "country": c}
            for k in KEYS for c in COUNTRIES[:2 + KEYS.index(k) % 3]]


def random_snapshot(rng: random.Random, config: PipelineConfig, day: date) -> list[dict]:
    """A day's snapshot rows: each window holds a random subset of the keys (the unkeyed one: ``*``)."""
    rows = []
    unkeyed = {"key": "*", **{f: None for f in config.key_fields}}
    for spec in config.windows:
        as_of = day_as_of(spec, day)
        start = from_epoch_seconds(spec.window_start(to_epoch_seconds(as_of)))
        keys = ([k for k in composite_keys(config) if rng.random() < 0.6] if spec.keyed else
                ([unkeyed] if rng.random() < 0.8 else []))
        for key in keys:
            rows.append({**key, "window": spec.name, "window_start": start, "as_of": as_of,
                         "event_count": rng.randrange(1, 10**6),
                         **{a.name: random_value(rng, a.output_type) for a in config.aggregations}, "date": day})
    return rows


def write_snapshot(lakehouse: str, config: PipelineConfig, day: date, rows: list[dict]) -> None:
    """Replace ``day``'s partition of window_snapshot, as a windows run (or a late firing) does."""
    schema = pa.schema([("key", pa.string()), *[(f, pa.string()) for f in config.key_fields], ("window", pa.string()),
                        ("window_start", pa.timestamp("us", "UTC")),
                        ("as_of", pa.timestamp("us", "UTC")), ("event_count", pa.int64()),
                        *[(a.name, arrow_type(a.output_type)) for a in config.aggregations], ("date", pa.date32())])
    table = pa.Table.from_pylist(rows, schema=schema)
    path = WINDOW_SNAPSHOT.path(lakehouse)
    if not os.path.exists(path):
        write_deltalake(path, table, partition_by=["date"])
    else:
        write_deltalake(path, table, mode="overwrite", predicate=f"date = '{day.isoformat()}'")


# -- what the store must hold ---------------------------------------------------------------------


def plain(value, ddl: str):
    """A value as the store gives it back: nested values as JSON (decimals exact, non-finite
    doubles as PostgreSQL's to_jsonb spells them, a map's keys as text)."""
    if value is None:
        return None
    if ddl.startswith("array<"):
        return [plain(v, ddl[len("array<"):-1]) for v in value]
    if ddl.startswith("map<"):
        key, element = ddl[len("map<"):-1].split(",")
        return {str(k): plain(v, element) for k, v in value}
    return value


def json_side(value, ddl: str):
    """Within JSON, numbers compare as decimals and non-finite doubles as their names."""
    if value is None:
        return None
    if isinstance(value, list):
        return [json_side(v, ddl) for v in value]
    if isinstance(value, dict):
        return {k: json_side(v, ddl) for k, v in value.items()}
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        return Decimal(repr(value)) if math.isfinite(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, int) and not isinstance(value, bool):
        return Decimal(value)
    return value


def same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    return a == b


def held(spec: OnlineSpec, config: PipelineConfig) -> dict[tuple[str, str], dict]:
    names = [c for c, _ in store_columns(config)]
    with psycopg2.connect(spec.url) as connection, connection.cursor() as cursor:
        psycopg2.extras.register_default_jsonb(conn_or_curs=cursor, loads=lambda s: json.loads(
            s, parse_float=Decimal, parse_int=Decimal))
        cursor.execute(f'SELECT {", ".join(chr(34) + n + chr(34) for n in names)} FROM {spec.table}')
        rows = [dict(zip(names, r)) for r in cursor.fetchall()]
    connection.close()
    return {(r["key"], r["window"]): r for r in rows}


def assert_store_is(spec: OnlineSpec, config: PipelineConfig, latest: dict[str, tuple[date, list[dict]]]) -> None:
    """Per window: the store's rows are the snapshot rows of its latest day as loaded (``latest``),
    each value equal."""
    store = held(spec, config)
    for w in config.windows:
        day, rows = latest[w.name]
        expected = {r["key"]: r for r in rows if r["window"] == w.name}
        mine = {key: r for (key, window), r in store.items() if window == w.name}
        assert set(mine) == set(expected), (w.name, day)
        for key, row in mine.items():
            want = expected[key]
            assert (row["window_start"], row["window_end"], row["as_of"], row["event_count"]) == (
                want["window_start"], want["as_of"], want["as_of"], want["event_count"]), (w.name, key)
            assert row["as_of"] == day_as_of(w, day)
            assert [row[f] for f in config.key_fields] == [want[f] for f in config.key_fields], (w.name, key)
            for a in config.aggregations:
                got, value = row[a.name], plain(want[a.name], a.output_type)
                if a.output_type.startswith(("array<", "map<")):
                    assert got == json_side(value, a.output_type), (w.name, key, a.name, got, value)
                else:
                    assert same(got, value), (w.name, key, a.name, got, value)


# -- the property ---------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(6))
def test_the_store_holds_each_keys_latest_snapshot_row_after_loads_late_firings_and_reruns_in_any_order(
        store, seed):
    config, spec, lakehouse = store
    if seed >= 4:  # and under a composite key, served with a column per field
        config = PipelineConfig.from_dict({**COMPOSITE, "online": {"url": spec.url}})
    rng = random.Random(seed)
    snapshots = {d: random_snapshot(rng, config, d) for d in DAYS}
    for d in DAYS:
        write_snapshot(lakehouse, config, d, snapshots[d])
    loaded: dict[date, list[dict]] = {}   # each day's snapshot as last loaded
    latest_day: date | None = None
    for _ in range(14):
        d = rng.choice(DAYS)
        if loaded and rng.random() < 0.3:  # a late firing replaces a day's snapshot, then loads it
            snapshots[d] = random_snapshot(rng, config, d)
            write_snapshot(lakehouse, config, d, snapshots[d])
            if d == latest_day:  # until it is loaded, the check sees the store behind the snapshot
                assert not compare(lakehouse, d, config, spec).ok
        result = load(lakehouse, d, config, spec)
        if latest_day is None or d >= latest_day:
            assert result.windows == [w.name for w in config.windows] and not result.skipped
            latest_day, loaded[d] = d, snapshots[d]
        else:  # an older day: the store holds a later one, nothing moves back
            assert result.skipped == [w.name for w in config.windows] and result.written == 0
        assert_store_is(spec, config, {w.name: (latest_day, loaded[latest_day]) for w in config.windows})
        for checked in {d, latest_day}:
            comparison = compare(lakehouse, checked, config, spec)
            assert comparison.ok, comparison
            assert comparison.equal + comparison.superseded == len(snapshots[checked])
    # re-running the latest day is idempotent
    again = load(lakehouse, latest_day, config, spec)
    assert again.removed == 0 and again.written == len(loaded[latest_day])
    assert_store_is(spec, config, {w.name: (latest_day, loaded[latest_day]) for w in config.windows})
    if config.key_fields:  # a key read back by its JSON array, however it is spaced
        row = next(r for r in loaded[latest_day] if r["key"] != "*")
        spaced = json.dumps([row["user_id"], row["country"]], indent=1)
        got = lookup(spec, config, stored_key(config, spaced), row["window"])
        assert [(r["key"], r["user_id"], r["country"]) for r in got] == [(row["key"], row["user_id"], row["country"])]


def test_the_check_names_rows_that_differ_are_missing_or_are_not_in_the_snapshot(store):
    config, spec, lakehouse = store
    rows = random_snapshot(random.Random(7), config, DAYS[0])
    rows = [r for r in rows if r["window"] == "7d"][:3] + [r for r in rows if r["window"] != "7d"]
    assert len([r for r in rows if r["window"] == "7d"]) == 3
    write_snapshot(lakehouse, config, DAYS[0], rows)
    load(lakehouse, DAYS[0], config, spec)
    assert compare(lakehouse, DAYS[0], config, spec).ok
    first, second, third = sorted(r["key"] for r in rows if r["window"] == "7d")
    with psycopg2.connect(spec.url) as connection, connection.cursor() as cursor:
        cursor.execute(f"UPDATE {spec.table} SET event_count = event_count + 1 WHERE key = %s AND \"window\" = '7d'",
                       [first])
        cursor.execute(f"DELETE FROM {spec.table} WHERE key = %s AND \"window\" = '7d'", [second])
        cursor.execute(f"INSERT INTO {spec.table} SELECT 'stranger', \"window\", window_start, window_end, as_of, "
                       f"1{', NULL' * len(config.aggregations)} FROM {spec.table} WHERE key = %s AND \"window\" = '7d'",
                       [third])
    connection.close()
    comparison = compare(lakehouse, DAYS[0], config, spec)
    assert comparison.differing_count == 3
    assert sorted(comparison.differing) == sorted([(first, "7d", "different values"), (second, "7d", "missing"),
                                                   ("stranger", "7d", "not in the snapshot")])
    load(lakehouse, DAYS[0], config, spec)  # a re-run repairs what it owns
    with psycopg2.connect(spec.url) as connection, connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {spec.table} WHERE key = 'stranger'")
    connection.close()
    assert compare(lakehouse, DAYS[0], config, spec).ok


# -- faults ---------------------------------------------------------------------------------------


def test_an_unreachable_store_fails_in_one_line_without_the_password(store, monkeypatch):
    config, spec, lakehouse = store
    write_snapshot(lakehouse, config, DAYS[0], random_snapshot(random.Random(1), config, DAYS[0]))
    monkeypatch.setenv("PANES_ONLINE_PASSWORD", "s3cret-pw")
    down = OnlineSpec(f"postgresql://panes@127.0.0.1:{free_port()}/features")
    with pytest.raises(OnlineStoreError) as refused:
        load(lakehouse, DAYS[0], config, down)
    message = str(refused.value)
    assert "\n" not in message and "s3cret" not in message and "cannot connect" in message, message
    with pytest.raises(ValueError, match="PANES_ONLINE_PASSWORD"):
        OnlineSpec("postgresql://panes:s3cret@127.0.0.1/features")


def test_a_store_of_another_configuration_is_refused_before_anything_is_written(store):
    config, spec, lakehouse = store
    write_snapshot(lakehouse, config, DAYS[0], random_snapshot(random.Random(2), config, DAYS[0]))
    load(lakehouse, DAYS[0], config, spec)
    before = held(spec, config)
    fewer = PipelineConfig.from_dict({**CONFIG, "aggregations": {"clicks_total": "sum"},
                                      "online": {"url": spec.url}})
    with pytest.raises(StoreMismatchError, match="drop the table, or name another online.table"):
        load(lakehouse, DAYS[0], fewer, spec)
    assert held(spec, config) == before


def _cli(config_file: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "jobs.online_values", "--config", str(config_file), *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_a_killed_load_leaves_the_previous_state_and_a_retry_converges(store, tmp_path):
    """The load is killed (SIGKILL) after its upsert, while its second statement waits for a
    row this test holds locked: the server rolls all of it back."""
    import yaml

    config, spec, lakehouse = store
    rng = random.Random(11)
    before, after = random_snapshot(rng, config, DAYS[0]), random_snapshot(rng, config, DAYS[1])
    gone = next(r["key"] for r in before if r["window"] == "7d"
                and r["key"] not in {a["key"] for a in after if a["window"] == "7d"})
    write_snapshot(lakehouse, config, DAYS[0], before)
    write_snapshot(lakehouse, config, DAYS[1], after)
    load(lakehouse, DAYS[0], config, spec)
    state = held(spec, config)
    config_file = tmp_path / "pipeline.yaml"
    config_file.write_text(yaml.safe_dump({**CONFIG, "online": {"url": spec.url}}))

    holder = psycopg2.connect(spec.url)
    with holder.cursor() as cursor:  # the row the load will delete (its key left the 7d window)
        cursor.execute(f"SELECT 1 FROM {spec.table} WHERE key = %s AND \"window\" = '7d' FOR UPDATE", [gone])
    job = subprocess.Popen([sys.executable, "-m", "jobs.online_values", "--config", str(config_file),
                            "--lakehouse", lakehouse, "--date", DAYS[1].isoformat()], cwd=ROOT,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        watcher = psycopg2.connect(spec.url)
        watcher.autocommit = True
        deadline = time.monotonic() + 60
        with watcher.cursor() as cursor:
            while True:
                cursor.execute("SELECT pid FROM pg_stat_activity WHERE application_name = 'panes' "
                               "AND wait_event_type = 'Lock' AND query LIKE 'DELETE%%'")
                waiting = cursor.fetchall()
                if waiting:
                    break
                assert job.poll() is None and time.monotonic() < deadline, job.stderr.read() if job.poll() else "timeout"
                time.sleep(0.1)
            os.killpg(job.pid, signal.SIGKILL)
            job.wait()
            holder.rollback()  # the load's backend goes on, then finds its client gone: no COMMIT came
            while True:
                cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", [waiting[0][0]])
                if cursor.fetchone()[0] == 0:
                    break
                assert time.monotonic() < deadline
                time.sleep(0.1)
        watcher.close()
    finally:
        holder.close()
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGKILL)
    assert held(spec, config) == state
    assert compare(lakehouse, DAYS[0], config, spec).ok

    done = _cli(config_file, "--lakehouse", lakehouse, "--date", DAYS[1].isoformat())
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"online_values {DAYS[1]}: ")
    assert_store_is(spec, config, {w.name: (DAYS[1], after) for w in config.windows})
    assert compare(lakehouse, DAYS[1], config, spec).ok

    # what an application reads: the CLI's --get and lookup() agree with the store
    key = next(r["key"] for r in after if r["window"] == "7d")
    got = _cli(config_file, "--get", key, "--window", "7d")
    assert got.returncode == 0, got.stderr
    (line,) = got.stdout.splitlines()
    row = json.loads(line)
    (looked,) = lookup(spec, config, key, "7d")
    assert (row["key"], row["window"], row["event_count"]) == (key, "7d", looked["event_count"])
    assert row["as_of"] == looked["as_of"].isoformat() == day_as_of(config.windows[0], DAYS[1]).isoformat()
    assert {r["window"] for r in lookup(spec, config, key)} <= {"7d", "day"}
    several = sorted({r["key"] for r in after if r["window"] == "7d"})[:3] + ["nobody"]
    together = lookup(spec, config, several, "7d")
    assert [r["key"] for r in together] == several[:3]  # one query, in key order; no row: no events
    assert together == [row for k in several for row in lookup(spec, config, k, "7d")]
    both = _cli(config_file, *[a for k in several for a in ("--get", k)], "--window", "7d")
    assert [json.loads(line)["key"] for line in both.stdout.splitlines()] == several[:3], both.stderr
    bad = _cli(config_file, "--get", key, "--window", "nope")
    assert bad.returncode == 2 and "not a served window" in bad.stderr


def test_a_snapshot_whose_window_holds_rows_of_two_instants_is_refused(store):
    config, spec, lakehouse = store
    rows = random_snapshot(random.Random(5), config, DAYS[1])
    moved = next(r for r in rows if r["window"] == "7d")
    moved["as_of"] -= timedelta(minutes=1)
    write_snapshot(lakehouse, config, DAYS[1], rows)
    with pytest.raises(OnlineStoreError, match="holds rows of window 7d as of .* not one day's snapshot"):
        load(lakehouse, DAYS[1], config, spec)


def test_a_user_with_only_the_listed_rights_loads_into_tables_an_administrator_made(store):
    """The guide's rights: SELECT, INSERT, UPDATE, DELETE on both tables (and TEMPORARY, which
    every user has by default), no CREATE on the schema."""
    config, spec, lakehouse = store
    for day in DAYS[:2]:
        write_snapshot(lakehouse, config, day, random_snapshot(random.Random(day.day), config, day))
    load(lakehouse, DAYS[0], config, spec)  # as the administrator: the tables are made
    loader = f"loader_{time.time_ns()}"  # roles are the server's, not the database's
    with psycopg2.connect(spec.url) as connection, connection.cursor() as cursor:
        cursor.execute(f"CREATE ROLE {loader} LOGIN")
        cursor.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
        cursor.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON window_values, window_values_as_of TO {loader}")
    connection.close()
    as_loader = OnlineSpec(spec.url.replace("//panes@", f"//{loader}@"))
    assert load(lakehouse, DAYS[1], config, as_loader).written > 0
    assert compare(lakehouse, DAYS[1], config, as_loader).ok
    with psycopg2.connect(as_loader.url) as connection, connection.cursor() as cursor:
        with pytest.raises(psycopg2.errors.InsufficientPrivilege):
            cursor.execute("CREATE TABLE other (x int)")
    connection.close()


def test_a_day_never_materialised_is_refused_and_the_store_kept(store):
    """A day without snapshot rows loads only where a windows run wrote it (its windows emptied):
    a day never materialised would otherwise empty the store and mark it as of that day."""
    config, spec, lakehouse = store
    write_snapshot(lakehouse, config, DAYS[0], random_snapshot(random.Random(3), config, DAYS[0]))
    load(lakehouse, DAYS[0], config, spec)
    before = held(spec, config)
    with pytest.raises(MissingInputError, match=f"no run wrote {DAYS[4]}: materialise the windows of {DAYS[4]} first"):
        load(lakehouse, DAYS[4], config, spec)
    assert held(spec, config) == before and compare(lakehouse, DAYS[0], config, spec).ok


def test_a_composite_key_is_given_as_its_json_array_as_ingest_writes_it():
    config = PipelineConfig.from_dict(COMPOSITE)
    assert [c for c, _ in store_columns(config)][:4] == ["key", "user_id", "country", "window"]
    assert stored_key(config, '[ "u1", "DE" ]') == '["u1","DE"]'
    assert stored_key(config, '["ü", "a \\"b\\", c"]') == '["ü","a \\"b\\", c"]'
    for bad in ("u1,DE", '["u1"]', '["u1", 2]', "{}"):
        with pytest.raises(ValueError, match=r'^the key is user_id, country: give it as a JSON array of 2 strings '
                                             r'\(\["<user_id>","<country>"\]\), got '):
            stored_key(config, bad)
    assert stored_key(PipelineConfig.from_dict(CONFIG), '["u1"]') == '["u1"]'  # one field: the text itself
