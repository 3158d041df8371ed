"""Fill the docs' reference pages from the code at build time (mkdocs-gen-files), so they cannot drift.

Each page below holds hand-written prose and one or more markers, ``<!-- generated: NAME -->``;
this script replaces each marker with what the code says:

- ``tables``: every table of ``jobs.tables`` with its partition columns and declared columns;
- ``checks``: the check catalog of ``expectations.catalog``, with the configurations each
  conditional check applies under (found by building the catalog for them, not written down);
- ``aggregations``: the registry of ``windowing_core.aggregations``, each kind built for every
  field type (which types it takes, its output type, whether it is invertible, its partial);
- ``cli``: the ``--help`` of every command, run as a user runs it (``python -m ...``);
- ``quarantine-reasons``: the reasons ingest gives (``jobs.ingest_events``);
- ``bench-figures``: the commands and current figures of ``bench/README.md``.

It also guards the hand-written pages against the code: a configuration field, an environment
variable, a table, a quarantine reason, an exit code or a command the code has and the docs do not
mention is a warning, and so is a README link to a file that does not exist; ``mkdocs build
--strict`` (CI) fails on warnings.

Nothing here starts Spark: the modules are imported for their declarations, and ``--help``
exits before a job builds its session.
"""

from __future__ import annotations

import inspect
import logging
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable

import mkdocs_gen_files

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
# Import this checkout's modules, not whatever the virtualenv's editable install points at.
sys.path.insert(0, str(ROOT))

from expectations import catalog as check_catalog  # noqa: E402
from jobs import cli as job_cli  # noqa: E402
from jobs import tables  # noqa: E402
from jobs.ingest import quarantine  # noqa: E402
from windowing_core import config as config_module  # noqa: E402
from windowing_core import field_types  # noqa: E402
from windowing_core.aggregations import AGGREGATIONS, aggregation  # noqa: E402
from windowing_core.config import PipelineConfig, reads_day_tiles  # noqa: E402
from windowing_core.sessions import SESSION_FIELDS  # noqa: E402
from windowing_core.spine import SPINE_FIELDS  # noqa: E402

# A child of the "mkdocs" logger: strict mode counts its warnings and fails the build.
log = logging.getLogger("mkdocs.plugins.panes.gen_reference")


def warn(message: str) -> None:
    log.warning("gen_reference: %s", message)


def code(text: str) -> str:
    """Docstrings write RST's ``code``; Markdown writes `code`."""
    return re.sub(r"``([^`]+)``", r"`\1`", text)


def cell(text: str) -> str:
    """Text for a Markdown table cell: one line, ``|`` escaped, and ``<`` and ``>`` outside code
    spans too (``<field>_<problem>`` is not an HTML tag)."""
    parts = " ".join(code(text).split()).split("`")
    return "`".join(p if i % 2 else p.replace("<", "&lt;").replace(">", "&gt;")
                    for i, p in enumerate(parts)).replace("|", "\\|")


def table(header: list[str], rows: list[list[str]], align: list[str] | None = None) -> str:
    align = align or ["---"] * len(header)
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# Tables

SPINE = {"path": "/data/labels", "key": "user_id", "ts": "ts"}
TABLE_SHOWN_UNDER: dict[str, tuple[str, dict[str, Any]]] = {
    "daily_partials": ("the default configuration plus `low: min` (a non-invertible aggregation over the "
                       "7-day window)", {"aggregations": {"count": "count", "sum": "sum", "low": "min"}}),
    "session_state": ("`windows: {visits: {gap: 30m}}`", {"windows": {"visits": {"gap": "30m"}}}),
    "count_state": ("`windows: {last_10: {count: 10}}`", {"windows": {"last_10": {"count": 10}}}),
    "arrival_partials": ("`windows: {arrived: {length: 1h, slide: 10m, time: arrival}}`",
                         {"windows": {"arrived": {"length": "1h", "slide": "10m", "time": "arrival"}}}),
}
"""Tables that the default configuration does not have, and a configuration that has them."""

COLUMN_VARIANTS: list[tuple[str, dict[str, Any]]] = [
    ("declared fields `amount: decimal(12,2)` and `page: string`, and `value_field: amount`",
     {"fields": {"amount": "decimal(12,2)", "page": "string"}, "value_field": "amount"}),
    ("a session window by event time, `{gap: 30m}`",
     {"windows": {"7d": {"length": "7d", "slide": "1m"}, "visits": {"gap": "30m"}}}),
    ("a session window by arrival time, `{gap: 30m, time: arrival}`",
     {"windows": {"7d": {"length": "7d", "slide": "1m"}, "arrived": {"gap": "30m", "time": "arrival"}}}),
]
"""Configurations that change a table's columns, shown as what they add and remove."""

TABLE_ABOUT = {
    "events": ("ingest (`jobs.ingest_events`)", "always",
               "Accepted events, deduplicated by `event_id` within the arrival day."),
    "quarantine": ("ingest", "always",
                   "Rejected input records, each with its reason ([Input records](input.md#quarantine-reasons))."),
    "late_events": ("ingest (reason `beyond_allowed_lateness`) and the partials job (reason `behind_watermark`, "
                    "under `late_policy: drop`)", "always",
                    "Events that never enter a window, kept and counted. Each writer replaces only its own "
                    "slice: the table is partitioned by the reason and both dates."),
    "minute_partials": ("the partials job (`jobs.minute_partials`)", "always",
                        "One row per key and frame: `event_count` and every aggregation's partial. Each write "
                        "stamps the frames' bucket on its commit (`panes.bucketSeconds`)."),
    "daily_partials": ("the partials job", "a non-invertible aggregation slides over a window of a day or more",
                       "The same partials per key and whole event day: the tiles non-invertible aggregations "
                       "slide over ([the sliding method](../concepts/sliding-method.md#aggregations-that-cannot-deduct))."),
    "window_changes": ("the windows job (`jobs.sliding_windows`)", "always",
                       "Change points (or final rows), partitioned by the day of `window_end`."),
    "window_snapshot": ("the windows job", "always",
                        "Each key's state per window as of the day's last window end: where the next day "
                        "continues from."),
    "session_state": ("the windows job", "a session window is configured",
                      "Each key's sessions still open at the day's end, and one marker row (null key) per "
                      "window saying the day was materialised under this `gap`, `max_length` and `time`."),
    "count_state": ("the windows job", "a count window is configured",
                    "Each key's events that a count window still to fire holds (at most count - 1), with their "
                    "numbers among the key's events and the fields the aggregations read, and one marker row "
                    "(null key) per window saying the day was materialised under this `count` and `slide`."),
    "interval_state": ("the windows job run below a day (`--from/--until`)", "a windows run below a day ran",
                       "Each key's state at its last change within a run below a day, for the next run of the day "
                       "to continue from, and one marker row (null key) per window and run saying which end it "
                       "reached ([Running the jobs alone](../guides/running-jobs.md#part-of-a-day))."),
    "arrival_partials": ("the partials job", "a window with `time: arrival` is configured",
                         "Frames of arrival time, partitioned by the event day of the run and the frame's own day."),
    "spine_values": ("the point-in-time join (`jobs.point_in_time_join`)", "`spine:` is configured",
                     "The spine's rows, each with every window's values as of its `ts`."),
}


def _columns(name: str, raw: dict[str, Any]) -> list[tuple[str, str, str]]:
    config = PipelineConfig.from_dict(raw)
    notes = tables.column_notes(name, config)
    return [(c, t, notes[c]) for c, t in tables.declared_columns(name, config)]


def gen_tables() -> str:
    names = [t.name for t in tables.ALL_TABLES]
    for missing in sorted(set(names) - set(TABLE_ABOUT)):
        warn(f"table {missing} (jobs.tables.ALL_TABLES) has no entry in TABLE_ABOUT")
    for stale in sorted(set(TABLE_ABOUT) - set(names)):
        warn(f"TABLE_ABOUT describes {stale}, which jobs.tables no longer declares")
    out = [table(["table", "partitioned by", "exists when", "holds"],
                 [[f"[`{t.name}`](#{t.name})", ", ".join(f"`{c}`" for c in t.partition_by),
                   TABLE_ABOUT.get(t.name, ("", "", ""))[1], TABLE_ABOUT.get(t.name, ("", "", ""))[2]]
                  for t in tables.ALL_TABLES])]
    for t in tables.ALL_TABLES:
        written_by, exists, holds = TABLE_ABOUT.get(t.name, ("?", "?", "?"))
        out.append(f"\n### `{t.name}` {{#{t.name}}}\n\n{holds}\n\n"
                   f"- written by {written_by}\n- exists when: {exists}\n"
                   f"- partitioned by {', '.join(f'`{c}`' for c in t.partition_by)}\n")
        try:
            tables.declared_columns(t.name, PipelineConfig())
        except ValueError:  # not declared: its columns are the spine's own and the join's
            out.append("\nIts columns are the spine's own and the join's, not declared in `jobs/tables.py`: "
                       "see [Point-in-time joins](../guides/point-in-time.md#point-in-time-joins).\n")
            continue
        label, raw = TABLE_SHOWN_UNDER.get(t.name, ("the default configuration", {}))
        base = _columns(t.name, raw)
        out.append(f"\nColumns under {label}, in stored order:\n\n")
        out.append(table(["column", "type", "holds"], [[f"`{c}`", f"`{ty}`", cell(n)] for c, ty, n in base]))
        for variant, extra in COLUMN_VARIANTS:
            try:
                other = _columns(t.name, _merged(raw, extra))
            except ValueError as err:
                warn(f"{t.name}: the column variant {variant!r} does not load: {err}")
                continue
            before, after = {c: ty for c, ty, _ in base}, {c: ty for c, ty, _ in other}
            parts = []
            added = [f"`{c}` (`{ty}`)" for c, ty in after.items() if c not in before]
            retyped = [f"`{c}` to `{ty}`" for c, ty in after.items() if c in before and before[c] != ty]
            removed = [f"`{c}`" for c in before if c not in after]
            for verb, items in (("adds", added), ("retypes", retyped), ("drops", removed)):
                if items:
                    parts.append(f"{verb} {', '.join(items)}")
            if parts:
                out.append(f"\nWith {variant}: {'; '.join(parts)}.\n")
    return "".join(out)


# ---------------------------------------------------------------------------------------------
# Checks

CHECK_BASE: dict[str, Any] = {"aggregations": {"n": "count"}}
CHECK_FEATURES: list[tuple[str, dict[str, Any]]] = [
    ("a `sum`", {"aggregations": {"total": "sum"}}),
    ("a `count` of a declared field", {"fields": {"amount": "long"}}),
    ("`mean`, `min` and `max` together", {"aggregations": {"avg": "mean", "low": "min", "high": "max"}}),
    ("a variance or standard deviation", {"aggregations": {"spread": "var_pop"}}),
    ("`approx_percentile`", {"aggregations": {"q": "approx_percentile"}}),
    ("`first_k`, `last_k`, `top_k` or `bottom_k`", {"aggregations": {"recent": "last_k"}}),
    ("`histogram`", {"aggregations": {"hist": "histogram"}}),
]
"""What can add checks to a table; each is merged into the table's base configuration and the
catalog built for it, so the condition shown is what the catalog does."""
CHECK_TABLE_BASE: dict[str, dict[str, Any]] = {
    "daily_partials": {"aggregations": {"n": "count", "lowest": "min"}},
    "spine_values": {**CHECK_BASE, "spine": SPINE},
}


def _merged(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in extra.items():
        merged[key] = {**merged.get(key, {}), **value} if isinstance(value, dict) and key != "spine" else value
    return merged


def _checks(raw: dict[str, Any], table_name: str) -> list[check_catalog.Check]:
    return check_catalog.checks_of(PipelineConfig.from_dict(raw), table_name)


def gen_checks() -> str:
    everything: dict[str, Any] = {**CHECK_BASE, "spine": SPINE}
    for _, extra in CHECK_FEATURES:
        everything = _merged(everything, extra)
    everything = _merged(everything, CHECK_TABLE_BASE["daily_partials"])
    full = PipelineConfig.from_dict(everything)
    assert reads_day_tiles(full)
    default_names = {(c.name, c.table) for c in check_catalog.catalog(PipelineConfig())}
    out = [f"The default configuration (one `7d` window, `count` and `sum`) runs {len(default_names)} checks; "
           f"with every feature below, {len(check_catalog.catalog(full))}.\n"]
    for t in tables.ALL_TABLES:
        checks = check_catalog.checks_of(full, t.name)
        if not checks:
            continue
        base_raw = CHECK_TABLE_BASE.get(t.name, CHECK_BASE)
        always = {c.name for c in _checks(base_raw, t.name)}
        when: dict[str, list[str]] = {}
        for label, extra in CHECK_FEATURES:
            for c in _checks(_merged(base_raw, extra), t.name):
                if c.name not in always:
                    when.setdefault(c.name, []).append(label)
        rows = []
        for c in checks:
            if c.name in always:
                applies = "always"
            elif c.name in when:
                applies = "with " + " or ".join(when[c.name])
            else:
                applies = "?"
                warn(f"check {c.name} on {t.name}: no configuration in CHECK_FEATURES makes it apply")
            rows.append([f"`{c.name}`", f"**{c.severity}**" if c.blocking else c.severity, applies, cell(c.guards)])
        exists = TABLE_ABOUT.get(t.name, ("", "always", ""))[1]
        note = "" if exists == "always" else f" (the table exists when {exists})"
        out.append(f"\n### `{t.name}`{note} {{#{t.name}}}\n\n")
        out.append(table(["check", "severity", "applies", "fails on"], rows))
    return "".join(out)


# ---------------------------------------------------------------------------------------------
# Aggregations

FIELD_TYPES = ["long", "decimal(12,2)", "double", "string", "boolean"]


def _built(kind: str, declared: str):
    try:
        return aggregation(kind, "x", "f", field_types.spark_type(declared, "docs"))
    except ValueError:
        return None


def gen_aggregations() -> str:
    out = ["Each cell: the output column's type for a field of that type, and whether the kind is "
           "invertible there (**inv.**: it slides by a running sum; otherwise over tiles). "
           "— : the kind does not apply to that type (the configuration is refused when it loads).\n\n"]
    # Kinds that share a docstring (one class family) share a section, anchored at its first kind.
    families: dict[str, list[str]] = {}
    for kind, cls in AGGREGATIONS.items():
        families.setdefault(inspect.getdoc(cls) or "", []).append(kind)
    anchor = {k: kinds[0] for kinds in families.values() for k in kinds}
    rows = []
    for kind in AGGREGATIONS:
        cells = []
        for declared in FIELD_TYPES:
            a = _built(kind, declared)
            cells.append("—" if a is None else f"`{a.output_type}`" + (" **inv.**" if a.invertible else ""))
        rows.append([f"[`{kind}`](#{anchor[kind]})", *cells])
    out.append(table(["kind", *[f"`{t}`" for t in FIELD_TYPES]], rows))
    for doc, kinds in families.items():
        out.append("\n### " + ", ".join(f"`{k}`" for k in kinds) + f" {{#{kinds[0]}}}\n\n")
        out.append(code(doc) + "\n\n")
        params = AGGREGATIONS[kinds[0]].parameters
        if params:
            out.append("Parameters (long form `NAME: {kind: KIND, field: FIELD, ...}`): "
                       + ", ".join(f"`{p}` (default `{_yaml(v)}`)" for p, v in params.items()) + ".\n\n")
        prows = []
        for kind in kinds:
            for declared in FIELD_TYPES:
                a = _built(kind, declared)
                if a is not None:
                    prows.append([f"`{kind}`", f"`{declared}`",
                                  ", ".join(f"`{c}` `{f.spark_type}`" for c, f in zip(a.field_columns(), a.fields)),
                                  "yes" if a.invertible else "no"])
        out.append("Partial columns of an aggregation named `x`, by field type:\n\n")
        out.append(table(["kind", "field", "partial columns", "invertible"], prows))
    return "".join(out)


def _yaml(value: Any) -> str:
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(str(v) for v in value) + "]"
    return str(value)


# ---------------------------------------------------------------------------------------------
# Command line

COMMANDS = [
    ("jobs.ingest_events", "Ingest: landing files into events, quarantine and late_events."),
    ("jobs.minute_partials", "Minute partials (and day tiles, arrival frames) of event days."),
    ("jobs.sliding_windows", "Window values: change points, snapshots, sessions."),
    ("jobs.point_in_time", "Every window's value for keys as of an instant."),
    ("jobs.point_in_time_join", "A spine of labelled moments joined to the values as of each."),
    ("jobs.online_values", "Load a day's window values into the online store (PostgreSQL), or read a key's."),
    ("jobs.vacuum", "Delete data files no version within the retention needs."),
    ("jobs.runtime.jvm_packages", "Fetch (or list) the pinned JVM jars."),
    ("jobs.runtime.spark_session", "Build the class archive a job's JVM starts from, once (`bash run.sh setup` does)."),
    ("orchestration.demo_events", "Write the seeded demo event set into a landing folder."),
    ("orchestration.demo", "The demo (`bash run.sh demo`): every asset over the demo's days."),
    ("orchestration.ci_checks", "CI: materialise demo days and judge every check."),
]
HELP_SECONDS = 15
"""A --help slower than this has probably started Spark: it should not."""


def _help(module: str) -> tuple[str, str, float]:
    started = time.monotonic()
    env = {**os.environ, "COLUMNS": "100", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", module, "--help"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    seconds = time.monotonic() - started
    if done.returncode != 0:
        warn(f"python -m {module} --help exited {done.returncode}: {done.stderr.strip()[-300:]}")
    return module, done.stdout, seconds


def gen_cli() -> str:
    runnable = sorted(".".join(p.relative_to(ROOT).with_suffix("").parts) for folder in ("jobs", "orchestration")
                      for p in (ROOT / folder).rglob("*.py")
                      if re.search(r'^if __name__ == "__main__"', p.read_text(), re.M))
    listed = {m for m, _ in COMMANDS}
    for module in sorted(set(runnable) - listed - {"jobs.cli", "jobs.errors"}):
        warn(f"python -m {module} runs as a command but docs/gen_reference.py COMMANDS does not list it")
    for module in sorted(listed - set(runnable)):
        warn(f"COMMANDS lists {module}, which no longer runs as a command")
    with ThreadPoolExecutor(max_workers=4) as pool:
        helps = list(pool.map(_help, [m for m, _ in COMMANDS]))
    out = [table(["command", "what it does"], [[f"[`python -m {m}`](#{m.replace('.', '')})", what]
                                               for m, what in COMMANDS])]
    for (module, text, seconds), (_, what) in zip(helps, COMMANDS):
        if seconds > HELP_SECONDS:
            warn(f"python -m {module} --help took {seconds:.0f} s: --help must not start Spark")
        out.append(f"\n### `python -m {module}` {{#{module.replace('.', '')}}}\n\n{what}\n\n```text\n"
                   f"{text.rstrip()}\n```\n")
    return "".join(out)


EXIT_CODES = {
    "EXIT_MISSING_INPUT": "a missing input: a landing folder, a table, or (for the windows job) a day whose "
                          "partials were never materialised; also a table left half-written by a killed run "
                          "or with a damaged log. The line names it.",
    "EXIT_BAD_ARGUMENTS": "bad arguments or configuration: a `--date` outside 1970-01-01 .. 9899-12-31, a "
                          "configuration that does not load, or one the tables were not made with.",
    "EXIT_CONCURRENT_WRITE": "a write refused because another run replaced the same partitions of the table it "
                             "names while this one ran: nothing was committed; run it again.",
}


def gen_exit_codes() -> str:
    rows = [["0", "success"]]
    for name, meaning in EXIT_CODES.items():
        value = getattr(job_cli, name, None)
        if value is None:
            warn(f"jobs.cli.{name} is gone: update EXIT_CODES in docs/gen_reference.py")
            continue
        rows.append([str(value), meaning])
    for name in sorted(n for n in vars(job_cli) if n.startswith("EXIT_") and n not in EXIT_CODES):
        warn(f"jobs.cli.{name} has no meaning in EXIT_CODES (docs/gen_reference.py)")
    return table(["exit", "meaning"], rows, ["---:", "---"])


# ---------------------------------------------------------------------------------------------
# Quarantine reasons

REASON_MEANINGS = {
    "truncated_gzip": "a `.gz` file that ends before its end-of-stream marker: one record for the whole "
                      "file, `raw` null; none of its lines are trusted, re-send it",
    "hidden_file": "a non-empty file whose name (or a folder's on its path) starts with `_` or `.`, which "
                   "Spark never reads: one record for the whole file, `raw` null; rename it to have its lines read",
    "unreadable_file": "a `.gz` file that is not gzip at all, or is corrupt: one record for the whole file",
    "bad_encoding": "a line that is not UTF-8 (a Latin-1 byte, a UTF-16 file)",
    "malformed_json": "not exactly one JSON object: two objects on one line, or an object followed by any other text",
    "missing_key": "the key field absent, null, empty or only blanks",
    "key_not_string": "a key given as a number, boolean, object or array: keys are JSON strings, kept exactly "
                      "as given (never trimmed)",
    "missing_timestamp": "`timestamp` absent or null",
    "unparseable_timestamp": "`timestamp` is not an ISO-8601 instant",
    "timestamp_out_of_range": "before 1970, or after the end of its arrival day",
    "value_not_numeric": "the value is not a number (nor a string holding one)",
    "value_not_integer": "the value has a fraction, however small: `1.0000000001` and `1e-10` are never "
                         "rounded; `4.0`, `1.5e3` and the string `\"7\"` are whole numbers",
    "value_out_of_range": "beyond a 64-bit integer; a value written with an exponent, or with more than 38 "
                          "digits, is read as a double and accepted only up to 2^53",
    "beyond_allowed_lateness": "(in `late_events`, not quarantine) arrived more than the allowed lateness "
                               "after its event day (below whole days: its hour folder more than that after "
                               "its event time)",
}
PROBLEM_MEANINGS = {
    "not_numeric": "not a number (nor a string holding one)",
    "not_integer": "a `long` field's value with a fraction (the rules of `value_not_integer`)",
    "out_of_range": "a `long` beyond 64 bits; a decimal with more digits before the point than P − S; "
                    "a double that is not finite",
    "beyond_scale": "more digits after the point than the decimal's scale (`1.234` in a `decimal(12,2)`): "
                    "never rounded",
    "not_string": "a string field takes JSON strings only",
    "not_boolean": "`true` or `false` only",
}

FAMILY_SPELLING = {field_types.INTEGER: "long", field_types.DECIMAL: "decimal(P,S)"}
"""A field type family as the configuration spells it (the others are spelled as they are named)."""


def gen_quarantine_reasons() -> str:
    reasons = [*quarantine.REASONS, quarantine.LATE_REASON]
    for r in reasons:
        if r not in REASON_MEANINGS:
            warn(f"quarantine reason {r} (jobs.ingest_events) has no meaning in REASON_MEANINGS")
    for r in set(REASON_MEANINGS) - set(reasons):
        warn(f"REASON_MEANINGS explains {r}, which ingest no longer gives")
    problems: dict[str, list[str]] = {}
    for family_name, names in quarantine.FIELD_PROBLEMS.items():
        for p in names:
            problems.setdefault(p, []).append(family_name)
    for p in problems:
        if p not in PROBLEM_MEANINGS:
            warn(f"field problem {p} (jobs.ingest_events.FIELD_PROBLEMS) has no meaning in PROBLEM_MEANINGS")
    out = [table(["reason", "meaning"], [[f"`{r}`", REASON_MEANINGS.get(r, "?")] for r in reasons])]
    out.append("\nWith declared `fields`, each field's value is checked in the order declared, and the reason "
               "names the field, `<field>_<problem>` (the default `value`'s are the `value_...` rows above):\n\n")
    out.append(table(["problem", "field types", "meaning"],
                     [[f"`<field>_{p}`", ", ".join(f"`{FAMILY_SPELLING.get(f, f)}`" for f in sorted(fams)),
                       PROBLEM_MEANINGS.get(p, "?")]
                      for p, fams in problems.items()]))
    example = PipelineConfig.from_dict({"fields": {"amount": "decimal(12,2)", "page": "string"},
                                        "aggregations": {"total": {"kind": "sum", "field": "amount"}}})
    out.append("\nFor example, with the fields `amount: decimal(12,2)` and `page: string` ingest gives: "
               + ", ".join(f"`{r}`" for r in quarantine.quarantine_reasons(example)) + ".\n")
    return "".join(out)


# ---------------------------------------------------------------------------------------------
# Bench figures

def gen_bench_figures() -> str:
    """``bench/README.md`` below its title, its headings one level down: the figures live there
    (``python -m bench --update-readme bench/README.md`` rewrites its table) and are shown here."""
    text = (ROOT / "bench" / "README.md").read_text()
    body = text.split("\n", 1)[1] if text.startswith("# ") else text
    return re.sub(r"^(#+) ", lambda m: "#" + m.group(1) + " ", body, flags=re.M)


# ---------------------------------------------------------------------------------------------
# Guards on hand-written pages

def guard_configuration() -> None:
    page = (DOCS / "reference" / "configuration.md").read_text()
    top_level = getattr(config_module, "_TOP_LEVEL", None)
    window_keys = getattr(config_module, "_WINDOW_KEYS", None)
    if top_level is None or window_keys is None:
        warn("windowing_core.config no longer has _TOP_LEVEL / _WINDOW_KEYS: update guard_configuration")
        top_level, window_keys = set(), set()
    for where, keys in (("configuration field", top_level), ("window field", window_keys),
                        ("session window field", SESSION_FIELDS), ("spine field", SPINE_FIELDS)):
        for key in sorted(keys):
            if f"`{key}`" not in page:
                warn(f"reference/configuration.md does not mention the {where} `{key}`")
    variables = set()
    for folder in ("jobs", "assets", "orchestration", "expectations", "windowing_core"):
        for p in (ROOT / folder).rglob("*.py"):
            variables |= set(re.findall(r"\bPANES_[A-Z_]+\b", p.read_text()))
    for name in sorted(variables):
        if f"`{name}`" not in page:
            warn(f"reference/configuration.md does not mention the environment variable `{name}`")


def guard_readme() -> None:
    """Every relative link of the README opens a page of this site (or another file of the repository)."""
    for target in re.findall(r"\]\(([^)\s]+)\)", (ROOT / "README.md").read_text()):
        if re.match(r"[a-z]+://", target) or target.startswith("#"):
            continue
        path = target.split("#", 1)[0]
        if not (ROOT / path).exists():
            warn(f"README.md links to {target}, which does not exist")
        elif path.endswith(".md") and not path.startswith("docs/"):
            warn(f"README.md links to {target}: link to the docs pages instead")


# ---------------------------------------------------------------------------------------------

PAGES: dict[str, list[tuple[str, Callable[[], str]]]] = {
    "reference/tables.md": [("tables", gen_tables)],
    "reference/checks.md": [("checks", gen_checks)],
    "reference/aggregations.md": [("aggregations", gen_aggregations)],
    "reference/cli.md": [("exit-codes", gen_exit_codes), ("cli", gen_cli)],
    "reference/input.md": [("quarantine-reasons", gen_quarantine_reasons)],
    "performance.md": [("bench-figures", gen_bench_figures)],
}


def main() -> None:
    started = time.monotonic()
    guard_configuration()
    guard_readme()
    for page, parts in PAGES.items():
        text = (DOCS / page).read_text()
        for name, generate in parts:
            marker = f"<!-- generated: {name} -->"
            if marker not in text:
                warn(f"{page} has no {marker}")
                continue
            text = text.replace(marker, f"<!-- generated by docs/gen_reference.py from the code -->\n"
                                        f"{generate().rstrip()}\n")
        with mkdocs_gen_files.open(page, "w") as f:
            f.write(text)
    log.info("gen_reference: reference pages generated in %.1f s", time.monotonic() - started)


main()
