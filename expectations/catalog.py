"""Every data-quality check panes runs: its name (a predicate), table, severity and why it exists.

One list, so the UI, the CI table and the docs' checks page say the same thing. ``ERROR`` checks are
blocking: when one fails, nothing downstream of its table materialises in the same run (a wrong
window output must not be read). ``WARN`` checks only report.

Which checks apply depends on the configuration: ``mean_between_min_and_max`` exists only when a
mean, a min and a max are all configured, ``sums_non_negative`` only when a sum is. Aggregations
are recognised by their class in ``windowing_core.aggregations.AGGREGATIONS``, never by the
output name a user gave them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from windowing_core.config import reads_day_tiles
from jobs.tables import (
    DAILY_PARTIALS, EVENTS, MINUTE_PARTIALS, QUARANTINE, SPINE_VALUES, WINDOW_CHANGES, WINDOW_SNAPSHOT,
)
from windowing_core.aggregations import AGGREGATIONS, Aggregation
from windowing_core.config import PipelineConfig
from windowing_core.spine import SpineSpec

ERROR = "ERROR"
WARN = "WARN"

QUARANTINE_SHARE_LIMIT = 0.01
"""Above this share of an arrival day's records in quarantine, ``quarantine_share_below_limit``
warns: a few broken lines are normal, a burst means a producer changed its format."""

CONSERVATION_SAMPLE_KEYS = 8
"""Keys per day whose change points ``changes_conserve_frames`` recomputes from minute partials
(plus half as many keys with frames but no change point that day)."""


@dataclass(frozen=True)
class Check:
    name: str
    table: str
    severity: str
    guards: str  # what goes wrong if it is not there: the check's description in the UI

    @property
    def blocking(self) -> bool:
        return self.severity == ERROR


@dataclass
class Outcome:
    """One check's result for one daily partition."""

    passed: bool
    metadata: dict[str, Any] = field(default_factory=dict)


def of_kinds(config: PipelineConfig, *kinds: str) -> list[Aggregation]:
    """The configured aggregations of these kinds (``count``, ``sum``, ``mean`` ...), in order.

    A kind the algebra does not define (yet) matches nothing, so its checks do not apply.
    """
    classes = tuple(AGGREGATIONS[k] for k in kinds if k in AGGREGATIONS)
    return [a for a in config.aggregations if classes and type(a) in classes]


VARIANCE_KINDS = ("var_pop", "var_samp", "stddev_pop", "stddev_samp")
K_LIST_KINDS = ("first_k", "last_k", "top_k", "bottom_k")


def counts_of_fields(config: PipelineConfig) -> list[Aggregation]:
    """The counts of a declared field's values, which may be below the event count (a field's
    nulls); the default value is never null, so its count is the event count."""
    return [a for a in of_kinds(config, "count") if config.fields]


def has_mean_min_max(config: PipelineConfig) -> bool:
    return all(of_kinds(config, kind) for kind in ("mean", "min", "max"))


def catalog(config: PipelineConfig) -> list[Check]:
    """The checks that apply to this configuration, table by table."""
    sums = bool(of_kinds(config, "sum"))
    variances = bool(of_kinds(config, *VARIANCE_KINDS))
    mean_min_max = has_mean_min_max(config)
    checks = [
        Check("input_records_reconcile", EVENTS.name, ERROR,
              "Records lost or counted twice between the landing files and the tables: the landing "
              "folder's records (recounted) must equal the ingest report, the rows in events, "
              "quarantine and late_events must equal its accepted, quarantined and late counts, and "
              "input = accepted + quarantined + duplicates + late."),
        Check("tables_written_whole", EVENTS.name, ERROR,
              "events and quarantine from different runs: a run stopped between their commits left "
              "one with its rows of a day and the other with an earlier run's, so the day's records "
              "are counted in two versions. Read from the Delta logs' write ids."),
        Check("schema_matches_declared", EVENTS.name, ERROR,
              "Columns renamed, dropped, reordered or retyped (a declared field's type, a decimal's "
              "precision and scale): the partials job reads each measured field in its type."),
        Check("quarantine_reasons_known", QUARANTINE.name, ERROR,
              "A record quarantined for a reason ingest does not give under this configuration: each "
              "bad value must name its field (<field>_<problem>, as amount_beyond_scale), so a "
              "producer's broken field can be found. Reports the unknown reasons."),
        Check("quarantine_share_below_limit", QUARANTINE.name, WARN,
              f"A producer that changed its format: more than {QUARANTINE_SHARE_LIMIT:.0%} of an arrival "
              "day's records rejected. Reports the count per reason and a few rejected records."),
        Check("keys_not_null", MINUTE_PARTIALS.name, ERROR,
              "Frames without a key, which every window would fold into one phantom key."),
        Check("frames_on_bucket_grid", MINUTE_PARTIALS.name, ERROR,
              "Frames that do not start on the bucket grid: they would enter and leave windows at "
              "the wrong ends."),
        Check("frames_inside_partition", MINUTE_PARTIALS.name, ERROR,
              "Frames stored under another event day: a re-run of one day would leave or drop them."),
        Check("frames_unique", MINUTE_PARTIALS.name, ERROR,
              "Two rows for one key and frame: the frame would be counted twice in every window."),
        Check("counts_non_negative", MINUTE_PARTIALS.name, ERROR,
              "Negative event counts in a frame: a broken fold (counts only ever add ones)."),
        Check("partials_count_accepted_events", MINUTE_PARTIALS.name, ERROR,
              "Events lost or double counted between events and minute_partials: a day's summed "
              "event_count must equal the distinct event_ids accepted for that event day over its "
              "arrival days (less any kept as late behind the watermark)."),
        Check("schema_matches_declared", MINUTE_PARTIALS.name, ERROR,
              "Columns renamed, dropped, reordered or retyped: readers and the window job would "
              "break or misread."),
        Check("keys_not_null", DAILY_PARTIALS.name, ERROR,
              "Day tiles without a key, which non-invertible windows would fold into one phantom key."),
        Check("tiles_unique", DAILY_PARTIALS.name, ERROR,
              "Two tiles for one key and day: min, max and the like would see the day twice."),
        Check("counts_non_negative", DAILY_PARTIALS.name, ERROR,
              "Negative event counts in a day tile."),
        Check("tiles_match_minute_partials", DAILY_PARTIALS.name, ERROR,
              "Day tiles that disagree with the day's minute frames: per key, event_count and every "
              "invertible partial field must equal the sums over its frames, and every key with frames "
              "must have a tile (non-invertible fields are covered by changes_conserve_frames, which "
              "recomputes windows from the frames)."),
        Check("schema_matches_declared", DAILY_PARTIALS.name, ERROR,
              "Columns renamed, dropped, reordered or retyped: the window job would misread the tiles."),
        Check("keys_not_null", WINDOW_CHANGES.name, ERROR,
              "Change points without a key: their values cannot be served."),
        Check("windows_declared", WINDOW_CHANGES.name, ERROR,
              "Rows for a window that is not configured (a stale name, a typo): nobody reads them."),
        Check("window_ends_on_grid", WINDOW_CHANGES.name, ERROR,
              "A window_end off its window's grid (offset + length + k * slide): the windows are "
              "shifted, so every value is of the wrong interval. Session windows have no grid: exempt."),
        Check("window_length_matches_spec", WINDOW_CHANGES.name, ERROR,
              "window_start is not window_end minus the window's length (a cumulating window's: its "
              "period's start): the row misstates its interval. A session's length is its own: exempt."),
        Check("window_ends_inside_partition", WINDOW_CHANGES.name, ERROR,
              "Change points stored under another day than their window_end's: a re-run of one "
              "day would leave or drop them."),
        Check("change_points_unique", WINDOW_CHANGES.name, ERROR,
              "Two rows for one key, window and window_end: a reader cannot tell which holds."),
        Check("no_repeated_change_points", WINDOW_CHANGES.name, ERROR,
              "Two consecutive change points of a key and window with the same values (the first "
              "of a day compared with the previous day's snapshot): a broken change filter, which "
              "also breaks the 'only changes' row budget. Windows emitting 'final' rows (and "
              "sessions) are exempt."),
        Check("counts_non_negative", WINDOW_CHANGES.name, ERROR,
              "A negative windowed count or event_count: a frame deducted that never entered, or "
              "deducted twice."),
        Check("changes_conserve_frames", WINDOW_CHANGES.name, ERROR,
              "Change points that drift from the frames: for a sample of keys each day, every window "
              "value is recomputed directly from minute_partials (a fold of the frames inside each "
              "window) and the change points must be exactly the ends where it changes, with those "
              "values."),
        Check("partials_materialised", WINDOW_CHANGES.name, ERROR,
              "A window day computed over event days whose minute partials were never "
              "materialised though their events were ingested: their frames neither entered nor "
              "left, so every value is wrong and nothing else fails."),
        Check("tables_written_whole", WINDOW_CHANGES.name, ERROR,
              "window_changes and window_snapshot (and session_state, count_state) from different runs: a run "
              "stopped between their commits left a day's change points beside an earlier run's "
              "snapshot, from which the next day would continue. Read from the Delta logs' write ids."),
        Check("schema_matches_declared", WINDOW_CHANGES.name, ERROR,
              "Columns renamed, dropped, reordered or retyped: serving reads would break."),
        Check("keys_not_null", WINDOW_SNAPSHOT.name, ERROR,
              "Snapshot rows without a key: their values cannot be served."),
        Check("windows_declared", WINDOW_SNAPSHOT.name, ERROR,
              "Rows for a window that is not configured: nobody reads them."),
        Check("snapshot_as_of_last_window_end", WINDOW_SNAPSHOT.name, ERROR,
              "as_of is not the day's last window end: the next day would continue from the wrong "
              "state, and serving would show a stale time."),
        Check("window_length_matches_spec", WINDOW_SNAPSHOT.name, ERROR,
              "window_start is not as_of minus the window's length (a cumulating window's: its "
              "period's start): the state is of another "
              "window, and the next day would continue from it."),
        Check("snapshot_keys_not_empty", WINDOW_SNAPSHOT.name, ERROR,
              "Keys whose window is empty kept in the snapshot: it should hold only keys with events "
              "in their window."),
        Check("snapshot_keys_unique", WINDOW_SNAPSHOT.name, ERROR,
              "Two rows for one key and window on one day: the next day's baseline would double."),
        Check("counts_non_negative", WINDOW_SNAPSHOT.name, ERROR,
              "A negative count or event_count in the carried state: every later day inherits it."),
        Check("snapshot_matches_last_change", WINDOW_SNAPSHOT.name, ERROR,
              "A snapshot that disagrees with the change points: each key's snapshot must equal its "
              "last change point of the day, or the previous day's snapshot when it did not change "
              "(absent when the value is empty); the next day continues from it."),
        Check("schema_matches_declared", WINDOW_SNAPSHOT.name, ERROR,
              "Columns renamed, dropped, reordered or retyped: the next day's run and serving break."),
    ]
    if sums:
        for table in (MINUTE_PARTIALS.name, DAILY_PARTIALS.name, WINDOW_CHANGES.name, WINDOW_SNAPSHOT.name):
            checks.append(Check("sums_non_negative", table, WARN,
                                "Negative sums: legal when inputs are negative (values are signed "
                                "integers), otherwise a deduction without its entry. Reports the keys."))
    if counts_of_fields(config):
        for table in (WINDOW_CHANGES.name, WINDOW_SNAPSHOT.name):
            checks.append(Check("counts_within_event_count", table, ERROR,
                                "A count of a field's values above the window's event count: a "
                                "count that took null values in, or partials from other events."))
    if mean_min_max:
        for table in (WINDOW_CHANGES.name, WINDOW_SNAPSHOT.name):
            checks.append(Check("mean_between_min_and_max", table, ERROR,
                                "A mean outside [min, max] of the same window: the aggregations "
                                "disagree about which events the window holds."))
    if variances:
        for table in (WINDOW_CHANGES.name, WINDOW_SNAPSHOT.name):
            checks.append(Check("variances_non_negative", table, ERROR,
                                "A negative variance or standard deviation: moments from different "
                                "events, or a cancelling subtraction."))
    for kinds, name, description in (
            (("approx_percentile",), "percentiles_ordered",
             "A percentile array out of order (a higher percentile below a lower one): a sketch merged "
             "from partials of different values, or a broken finish."),
            (K_LIST_KINDS, "k_lists_at_most_k",
             "A first_k, last_k, top_k or bottom_k list longer than its k: a merge that kept too much."),
            (("histogram",), "histogram_counts_match_events",
             "A histogram whose counts disagree with the window's events: a count below 1 (a value that "
             "left the window still listed), or counts summing to more than event_count (to exactly "
             "event_count where the field is never null): a frame deducted that never entered.")):
        if of_kinds(config, *kinds):
            for table in (WINDOW_CHANGES.name, WINDOW_SNAPSHOT.name):
                checks.append(Check(name, table, ERROR, description))
    if config.spine is not None:
        checks += spine_checks(config.spine)
    if not reads_day_tiles(config):  # no such asset to check
        checks = [c for c in checks if c.table != DAILY_PARTIALS.name]
    return checks


def spine_checks(spine: SpineSpec) -> list[Check]:
    """The checks of ``spine_values``: a group's own spine, or one joined to several groups."""
    bound = "before it" if spine.exclusive else "at or before it"
    return [
        Check("values_not_after_row_time", SPINE_VALUES.name, ERROR,
              "A joined value from after its spine row's ts: a feature leaking the future into "
              f"training data. For every row and window (of every group joined), the window read must end "
              f"{bound}, and the row the value was read from (read_at) no later than that end."),
        Check("spine_rows_joined_once", SPINE_VALUES.name, ERROR,
              "Spine rows lost or repeated by the join: each day's output rows must equal the "
              "spine's rows whose ts falls on that day."),
    ]


def checks_of(config: PipelineConfig, table: str) -> list[Check]:
    return [c for c in catalog(config) if c.table == table]
