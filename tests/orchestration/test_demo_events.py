"""Tests for orchestration.demo_events: reproducible, realistic demo landing data (pure Python, fast)."""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from datetime import date, datetime, timezone
from pathlib import Path

import pytest

from orchestration.demo_events import MALFORMED_KINDS, DemoEventsSummary, generate_demo_events

PROJECT_ROOT = Path(__file__).resolve().parents[2]
SMALL = dict(start=date(2025, 1, 27), days=2, events_per_day=1_500, keys=300)
TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")


@dataclass(frozen=True)
class Line:
    folder_date: date
    file: Path
    text: str


@dataclass
class Classified:
    valid: list[tuple[Line, dict]]
    duplicates: list[tuple[Line, dict]]
    malformed: Counter


def read_lines(landing: Path) -> list[Line]:
    """Every line in reading order: folders by date, files by name, lines in file order."""
    lines = []
    for folder in sorted(p for p in landing.iterdir() if p.is_dir()):
        for file in sorted(folder.iterdir()):
            raw = file.read_bytes()
            if file.name.endswith(".gz"):
                raw = gzip.decompress(raw)
            text = raw.decode("utf-8")
            assert text.endswith("\n")
            for line in text[:-1].split("\n"):
                lines.append(Line(date.fromisoformat(folder.name), file, line))
    return lines


def parse_time(text: object) -> datetime | None:
    if not isinstance(text, str) or not TIMESTAMP.match(text):
        return None
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def malformed_kind(text: str, key_field: str = "user_id") -> str | None:
    """Which MALFORMED_KINDS a line is, or None for a good record."""
    try:
        record = json.loads(text)
    except json.JSONDecodeError:
        return "truncated_json" if text.startswith("{") else "not_json"
    if key_field not in record:
        return "missing_key"
    if record[key_field] is None:
        return "null_key"
    if parse_time(record.get("timestamp")) is None:
        return "bad_timestamp"
    if not isinstance(record.get("value", 1), int):
        return "bad_value"
    return None


def classify(landing: Path, key_field: str = "user_id") -> Classified:
    result = Classified([], [], Counter())
    seen_ids: set[str] = set()
    for line in read_lines(landing):
        kind = malformed_kind(line.text, key_field)
        if kind is not None:
            result.malformed[kind] += 1
            continue
        record = json.loads(line.text)
        event_id = record.get("event_id")
        if event_id is not None and event_id in seen_ids:
            result.duplicates.append((line, record))
        else:
            result.valid.append((line, record))
            if event_id is not None:
                seen_ids.add(event_id)
    return result


def snapshot(landing: Path) -> dict[str, bytes]:
    files = sorted(p for p in landing.rglob("*") if p.is_file())
    return {str(p.relative_to(landing)): p.read_bytes() for p in files}


@pytest.fixture(scope="module")
def medium(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, DemoEventsSummary, Classified]:
    """Three days of 6,000 events: enough for shares and distributions to show."""
    landing = tmp_path_factory.mktemp("landing")
    summary = generate_demo_events(landing, days=3, events_per_day=6_000)
    return landing, summary, classify(landing)


def test_same_arguments_give_byte_identical_files(tmp_path: Path) -> None:
    first = generate_demo_events(tmp_path / "a", **SMALL)
    second = generate_demo_events(tmp_path / "b", **SMALL)
    assert snapshot(tmp_path / "a") == snapshot(tmp_path / "b")
    assert first.records_written == second.records_written
    assert first.files_written == second.files_written


def test_rerun_replaces_existing_files(tmp_path: Path) -> None:
    generate_demo_events(tmp_path / "fresh", **SMALL)
    generate_demo_events(tmp_path / "reused", **SMALL, seed=99, late_share=0.5)
    generate_demo_events(tmp_path / "reused", **SMALL)
    assert snapshot(tmp_path / "reused") == snapshot(tmp_path / "fresh")


def test_different_seed_gives_different_data(tmp_path: Path) -> None:
    generate_demo_events(tmp_path / "a", **SMALL, seed=7)
    generate_demo_events(tmp_path / "b", **SMALL, seed=8)
    assert snapshot(tmp_path / "a") != snapshot(tmp_path / "b")


def test_summary_counts_match_the_files(medium) -> None:
    landing, summary, classified = medium
    lines = read_lines(landing)
    assert summary.records_written == len(lines)
    assert summary.records_written == summary.valid + summary.duplicate + summary.malformed
    assert summary.valid == len(classified.valid) == 3 * 6_000
    assert summary.duplicate == len(classified.duplicates)
    assert summary.malformed == sum(classified.malformed.values())
    assert summary.malformed_by_kind == {k: classified.malformed[k] for k in MALFORMED_KINDS}
    assert summary.without_event_id == sum("event_id" not in r for _, r in classified.valid)
    files = sorted(p for p in landing.rglob("*") if p.is_file())
    assert summary.files_written == len(files) and sorted(summary.files) == files
    assert summary.folders_written == len({p.parent for p in files})
    assert summary.first_event_date == date(2025, 1, 27)
    assert summary.last_event_date == date(2025, 1, 29)
    assert summary.first_arrival_date == min(line.folder_date for line in lines)
    assert summary.last_arrival_date == max(line.folder_date for line in lines)


def test_valid_records_parse_and_never_land_before_their_event_date(medium) -> None:
    _, summary, classified = medium
    delays = Counter()
    for line, record in classified.valid:
        event_time = parse_time(record["timestamp"])
        assert event_time is not None and event_time.tzinfo is not None
        assert re.fullmatch(r"u\d{5}", record["user_id"])
        assert record.get("value", 1) in range(1, 6)
        delay = (line.folder_date - event_time.date()).days
        assert delay >= 0, line
        delays[min(delay, 4)] += 1
    assert delays[1] == summary.late_1d
    assert delays[2] == summary.late_2d
    assert delays[4] == summary.beyond_lateness
    assert delays[3] == 0  # nothing just past the 2-day lateness: "beyond" means 4+ days
    late_share = (summary.late_1d + summary.late_2d) / summary.valid
    assert 0.02 < late_share < 0.04
    assert 0 < summary.late_2d < summary.late_1d
    assert 0 < summary.beyond_lateness < summary.late_2d
    assert 0 < summary.without_event_id < summary.valid * 0.1
    values = Counter(record.get("value") for _, record in classified.valid)
    assert values[None] > 0 and values[1] > 0 and any(values[v] for v in range(2, 6))


def test_every_malformed_kind_is_present(medium) -> None:
    _, summary, classified = medium
    assert set(classified.malformed) == set(MALFORMED_KINDS)
    assert summary.malformed == 3 * 6  # the default, six a day


def test_duplicates_repeat_an_earlier_record_exactly(medium) -> None:
    _, summary, classified = medium
    first_seen = {r["event_id"]: line for line, r in classified.valid if "event_id" in r}
    assert 0.005 * summary.valid < summary.duplicate < 0.015 * summary.valid
    gaps = Counter()
    for line, record in classified.duplicates:
        original = first_seen[record["event_id"]]
        assert line.text == original.text  # identical payload
        gap = (line.folder_date - original.folder_date).days
        assert gap in (0, 1)
        gaps[gap] += 1
    assert gaps[0] > 0 and gaps[1] > 0


def test_plain_and_gzipped_files_are_both_written_and_readable(medium) -> None:
    landing, _, _ = medium
    files = sorted(p for p in landing.rglob("*") if p.is_file())
    gzipped = [p for p in files if p.name.endswith(".json.gz")]
    plain = [p for p in files if p.name.endswith(".json")]
    assert gzipped and plain and len(gzipped) + len(plain) == len(files)
    for path in gzipped:
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            assert sum(1 for _ in handle) > 0
    for folder in {p.parent for p in files}:
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", folder.name)


def test_keys_are_skewed(medium) -> None:
    _, _, classified = medium
    per_key = Counter(record["user_id"] for _, record in classified.valid)
    counts = sorted(per_key.values(), reverse=True)
    median = counts[len(counts) // 2]
    assert counts[0] > 20 * median
    assert len(per_key) > 500  # a long tail, not a handful of keys


def test_daily_cycle_is_visible(medium) -> None:
    _, _, classified = medium
    by_hour = Counter(parse_time(record["timestamp"]).hour for _, record in classified.valid)
    afternoon = sum(by_hour[h] for h in range(13, 19)) / 6
    night = sum(by_hour[h] for h in range(3, 6)) / 3
    assert afternoon > 2.5 * night


def test_key_field_is_configurable(tmp_path: Path) -> None:
    summary = generate_demo_events(tmp_path, **SMALL, key_field="account")
    classified = classify(tmp_path, key_field="account")
    assert len(classified.valid) == summary.valid
    assert all("account" in record and "user_id" not in record for _, record in classified.valid)
    assert set(classified.malformed) == set(MALFORMED_KINDS)


def test_file_times_are_deterministic_and_inside_the_arrival_day(tmp_path: Path) -> None:
    summary = generate_demo_events(tmp_path, **SMALL)
    for path in summary.files:
        modified = datetime.fromtimestamp(path.stat().st_mtime, timezone.utc)
        assert modified.date() == date.fromisoformat(path.parent.name)


@pytest.mark.parametrize(
    "bad",
    [dict(days=0), dict(events_per_day=-1), dict(keys=0), dict(late_share=1.5),
     dict(late_share=0.001, late_2d_share=0.005), dict(key_field=""),
     dict(start=datetime(2025, 1, 27))],
)
def test_bad_arguments_are_rejected(tmp_path: Path, bad: dict) -> None:
    with pytest.raises(ValueError):
        generate_demo_events(tmp_path, **bad)
    assert not any(tmp_path.iterdir())


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "orchestration.demo_events", *args], cwd=PROJECT_ROOT,
                          capture_output=True, text=True, timeout=60)


def test_cli_runs_alone(tmp_path: Path) -> None:
    assert run_cli("--help").returncode == 0
    done = run_cli("--landing", str(tmp_path / "cli"), "--days", "1", "--events-per-day", "200",
                   "--keys", "50", "--seed", "3")
    assert done.returncode == 0, done.stderr
    assert "wrote" in done.stdout
    generate_demo_events(tmp_path / "api", days=1, events_per_day=200, keys=50, seed=3)
    assert snapshot(tmp_path / "cli") == snapshot(tmp_path / "api")


@pytest.mark.parametrize("args", [["--days", "0"], ["--start", "2025-02-30"], ["--keys", "many"],
                                  ["--late-share", "2"], []])
def test_cli_bad_arguments_give_one_clear_error(tmp_path: Path, args: list[str]) -> None:
    landing = [] if not args else ["--landing", str(tmp_path)]
    done = run_cli(*landing, *args)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    errors = [line for line in done.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1


def test_the_demo_spine_is_reproducible_labelled_moments_of_the_demo_days_and_its_configuration_loads(tmp_path):
    import pyarrow.parquet as pq

    from orchestration.demo_events import generate_demo_purchases, generate_demo_spine, home_country
    from orchestration.demo import write_demo_config
    from windowing_core.deployment import Deployment

    rows = generate_demo_spine(tmp_path / "spine", days=2, rows_per_day=50, keys=30)
    table = pq.read_table(tmp_path / "spine")
    assert rows == table.num_rows == 100 and table.column_names == ["user_id", "country", "ts", "label"]
    assert all(home_country(r["user_id"]) == r["country"] for r in table.to_pylist())
    moments = table["ts"].to_pylist()
    assert all(m.date().isoformat() in ("2025-01-27", "2025-01-28") for m in moments)
    on_minute = [m for m in moments if m.second == 0 and m.microsecond == 0]
    assert 0 < len(on_minute) < len(moments), "some rows fall on window ends, the others between"
    assert any(m.microsecond % 1000 == 0 and m.microsecond for m in moments), "millisecond precision"
    generate_demo_spine(tmp_path / "again", days=2, rows_per_day=50, keys=30)
    assert pq.read_table(tmp_path / "again").equals(table)
    bought = generate_demo_purchases(tmp_path / "purchases", days=2, purchases_per_day=40, keys=30)
    purchases = pq.read_table(tmp_path / "purchases")
    assert bought == purchases.num_rows == 80
    assert purchases.column_names == ["purchase_id", "user_id", "country", "ts", "price", "quantity", "loaded_at"]
    assert all(r["loaded_at"] > r["ts"] for r in purchases.to_pylist())
    generate_demo_purchases(tmp_path / "bought_again", days=2, purchases_per_day=40, keys=30)
    assert pq.read_table(tmp_path / "bought_again").equals(purchases)
    deployment = Deployment.load(write_demo_config(tmp_path / "demo.yaml", tmp_path / "spine", tmp_path / "purchases"))
    spine = deployment.spine
    assert (spine.path, spine.ts) == (str(tmp_path / "spine"), "ts") and deployment.names == ["views", "purchases"]
    assert [(g.name, g.key) for g in spine.groups] == [("views", ("user_id",)), ("purchases", ("user_id", "country"))]
    assert deployment.group("purchases").source.path == str(tmp_path / "purchases")
