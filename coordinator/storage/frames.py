"""The results store as pandas DataFrames (`bgbench.results.load`), for reports and notebooks.

Everything is read from what the store recorded: the ratings' summaries and settings, and
each experiment's full result (its result_json), whose agents' HDR histograms are merged
here for exact percentiles. The store is opened read-only: loading never creates or
migrates anything. Tables a store does not have (campaigns in a store written before
campaigns existed, say) load as empty frames with their columns.

Columns of each frame (NaN or None where a record has no such figure):

ratings
    id, status (running|done|failed), objective (both|soar|socialites|exhaustive|sweep|run|
    study:NAME), workload, store (the binding's name), store_description (the server and
    its settings, from its first experiment), over (what was searched: threads, or the
    open-loop rate), soar (actions/s), soar_threads, soar_rate (a rate search's highest
    passing arrival rate), soar_low, soar_high (SoAR's confidence interval, when the
    summary has one), confidence, socialites, socialites_low, socialites_high (the
    uncertain range), uncertain_threads (list of T whose verdicts stayed unclear),
    search_duration_s, final_duration_s, alpha, beta_ms, tau, latency_scope (the SLA),
    experiments (how many recorded), created, updated, message, notes (list of the
    summary's notes), config (the recorded settings as a dict, secrets redacted), hosts
    (list of dicts), versions (dict), transactions (dict: per interaction that ran
    transactions, its final experiment's figures, run_result/transactions.py),
    bottleneck_kind, bottleneck, client_bound (what bound the rating's final experiment,
    as its headline names it; None: resources not recorded).
experiments
    rating_id, seq, experiment_id, phase (warmup|search|final|sweep|retried|run), threads,
    target_rate, duration_s, elapsed_s, status (passed|failed|fault), passed,
    actions_per_s, actions_per_s_low, actions_per_s_high (t interval over the steady
    window's samples at the rating's confidence, when the run was tested for steadiness),
    within_percent, unpredictable_percent, actions, errors, reads, unpredictable_reads,
    never_valid, p50_ms, p95_ms, p99_ms, max_ms, mean_ms (response time, from the agents'
    merged HDR histograms; the recorded summary when there are none), lag_count,
    lag_p50_ms, lag_p95_ms, lag_p99_ms, lag_max_ms (staleness lag of unpredictable
    reads), warmup_s (cut as warm-up), stable, store_description, reasons, fault, created,
    bottleneck_kind (server_cpu|server_disk|network|client|none|unmeasured), bottleneck
    (the line a person reads), client_bound (None: resources not recorded).
per_agent
    rating_id, seq, threads (the experiment's T), agent (address), agent_threads,
    throughput (actions/s), actions, errors, within_percent, session_within_percent,
    reads, unpredictable_reads, unpredictable_percent, never_valid, cpu_percent,
    load_processes, saturated, passed, reasons, p50_ms, p95_ms, p99_ms (from the agent's
    HDR histogram).
per_action
    rating_id, seq, threads, action (short name), title (the workload's name for it),
    count, errors, within_percent, p50_ms, p95_ms, p99_ms, max_ms, mean_ms (response
    time), service_p50_ms, service_p95_ms, service_p99_ms (service time), and for a
    transaction (None otherwise): commits, aborts_conflict, aborts_deadlock,
    aborts_lock_timeout, retries, gave_up, unknown, backoff_ms, retries_per_commit,
    backoff_ms_per_commit (run_result/transactions.py).
validation
    rating_id, seq, threads, kind (item|action), name, reads, unpredictable.
sweep
    rating_id and the thread sweep's table, one row per T and action
    (coordinator/records/sweep.py CSV_COLUMNS: threads, repeats, passed, actions_per_s, ...,
    action, runs, count, mean_ms, p95_ms).
measurements
    rating_id, seq, name (the study's table), then every key its rows recorded.
campaigns
    id, name, created, updated, status (running|done|failed|interrupted), file,
    file_text (secret-sounding values redacted), version, cwd, message.
campaign_jobs
    campaign_id, seq, label, vars (dict of its foreach values), settings (dict),
    servers (list), study (a workload study it ran instead of a rating, or ""),
    rating_id, status (pending|running|done|failed), message, and one column var.NAME per
    foreach variable.
resources
    one row per experiment and host it measured, and ResultFrames.resource_series(
    rating_id, seq) every sample of one experiment: columns in frames_resources.py.
steps, phases
    one row per scenario step and per scenario phase of each experiment that ran a
    scenario, and ResultFrames.scenario_timeline(rating_id, seq) its timeline: columns
    in frames_scenario.py.
"""

import json
import math
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from bgbench.coordinator.configuration.redaction import redact_config
from bgbench.coordinator.configuration.redaction import redact_strings as redacted
from bgbench.coordinator.records.stats import mean_interval
from bgbench.coordinator.records.sweep import CSV_COLUMNS, SweepTable, csv_rows
from bgbench.coordinator.storage import pg
from bgbench.coordinator.storage.frames_campaigns import CAMPAIGN_COLUMNS, campaign_row, jobs_frame
from bgbench.coordinator.storage.frames_resources import (
    BOTTLENECK_COLUMNS,
    bottleneck_columns,
    figures_of,
    rating_bottleneck,
    redacted_result,
    resource_rows,
    resources_frame,
    series_frame,
)
from bgbench.coordinator.storage.frames_scenario import (
    phases_frame,
    scenario_rows,
    scenario_timeline,
    steps_frame,
)
from bgbench.coordinator.storage.location import Location, ResultsURL, location
from bgbench.coordinator.storage.results import DB_NAME, checked_row
from bgbench.coordinator.storage.store_file import checked as _checked
from bgbench.coordinator.storage.store_file import json_object as _object
from bgbench.coordinator.storage.store_file import read_only
from bgbench.errors import BGBenchError, UserError
from bgbench.run_result.rows import ACTION_COLUMNS as ACTION_COLUMNS
from bgbench.run_result.rows import AGENT_COLUMNS as AGENT_COLUMNS
from bgbench.run_result.rows import EXPERIMENT_COLUMNS as RESULT_COLUMNS
from bgbench.run_result.rows import VALIDATION_COLUMNS as VALIDATION_COLUMNS
from bgbench.run_result.rows import experiment_rows
from bgbench.run_result.rows import lag_histogram as lag_histogram
from bgbench.run_result.rows import response_histogram as response_histogram
from bgbench.workloads import registry

RATING_COLUMNS = (
    "id", "status", "objective", "workload", "store", "store_description", "over", "soar",
    "soar_threads", "soar_rate", "soar_low", "soar_high", "confidence", "socialites",
    "socialites_low", "socialites_high", "uncertain_threads", "search_duration_s",
    "final_duration_s", "alpha", "beta_ms", "tau", "latency_scope", "experiments", "created",
    "updated", "message", "notes", "config", "hosts", "versions", "transactions",
    *BOTTLENECK_COLUMNS,
)  # fmt: skip
EXPERIMENT_COLUMNS = (*RESULT_COLUMNS, *BOTTLENECK_COLUMNS)
SWEEP_COLUMNS = ("rating_id", *CSV_COLUMNS)
MEASUREMENT_COLUMNS = ("rating_id", "seq", "name")


@dataclass(frozen=True)
class ResultFrames:
    """A results store as DataFrames (columns: this module's docstring)."""

    path: Location  # the store's file, or its URL (password redacted when shown)
    ratings: pd.DataFrame
    experiments: pd.DataFrame
    per_agent: pd.DataFrame
    per_action: pd.DataFrame
    validation: pd.DataFrame
    sweep: pd.DataFrame
    measurements: pd.DataFrame
    campaigns: pd.DataFrame
    campaign_jobs: pd.DataFrame
    resources: pd.DataFrame  # per experiment and host (frames_resources.py)
    # per scenario step and phase of each experiment (frames_scenario.py)
    steps: pd.DataFrame = field(default_factory=lambda: steps_frame([]))
    phases: pd.DataFrame = field(default_factory=lambda: phases_frame([]))

    def rating(self, rating_id: str) -> "pd.Series[Any]":
        rows = self.ratings[self.ratings["id"] == rating_id]
        if rows.empty:
            raise UserError(f"no rating {rating_id!r} in {self.path}: see `bgbench results`")
        return rows.iloc[0]

    def of_rating(self, frame: pd.DataFrame, rating_id: str) -> pd.DataFrame:
        """The rows of one rating in any frame keyed by rating_id, in their order."""
        return frame[frame["rating_id"] == rating_id].reset_index(drop=True)

    def result(self, rating_id: str, seq: int) -> dict[str, Any]:
        """One experiment's full recorded result (ExperimentResult as JSON)."""
        with reading(self.path) as db:
            row = db.execute(
                "SELECT result_json FROM experiments WHERE rating_id = ? AND seq = ?",
                (rating_id, int(seq)),  # a seq taken from a frame is a numpy integer
            ).fetchone()
        if row is None:
            raise UserError(f"no experiment {seq} of rating {rating_id!r} in {self.path}")
        where = f"experiments row {rating_id!r} seq {seq}"
        value = _checked(self.path, where, _parsed, row[0])
        return dict(redacted_result(value))

    def resource_series(self, rating_id: str, seq: int) -> pd.DataFrame:
        """Every host sample of one experiment (columns: frames_resources.py)."""
        where = f"experiments row {rating_id!r} seq {seq} (resources)"
        result = self.result(rating_id, seq)
        return _checked(self.path, where, lambda: series_frame(figures_of(result)))

    def scenario_timeline(self, rating_id: str, seq: int) -> tuple[pd.DataFrame, pd.DataFrame]:
        """One experiment's scenario timeline: (intervals, bins) (frames_scenario.py)."""
        where = f"experiments row {rating_id!r} seq {seq} (scenario)"
        result = self.result(rating_id, seq)
        return _checked(self.path, where, lambda: scenario_timeline(result))


def store_file(path: str | Path | ResultsURL) -> Location:
    """The results store a path names: a results directory or its bgbench.sqlite, or a
    postgresql:// URL."""
    where = location(path)
    if isinstance(where, ResultsURL):
        return where
    p = where.expanduser()
    if p.is_dir():
        p = p / DB_NAME
    if not p.exists():  # read_only refuses what is not a regular file
        raise UserError(f"no results store at {path}: give a results directory or its {DB_NAME}")
    return p


@contextmanager
def reading(where: Location) -> Iterator[Any]:
    """The store opened read-only (nothing created or changed), its version checked."""
    if isinstance(where, ResultsURL):
        with pg.reading(where) as pdb:
            yield pdb
        return
    with read_only(where) as db:
        yield db


def _tables(db: Any) -> set[str]:
    if isinstance(db, pg.PgDb):
        return db.tables()
    return {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _table(db: Any, where: Location, name: str, order: str) -> list[dict[str, Any]]:
    """Every row of a table, or none when the store has no such table."""
    if name not in _tables(db):
        return []
    rows = db.execute(f"SELECT * FROM {name} ORDER BY {order}").fetchall()
    return [checked_row(where, name, dict(r)) for r in rows]


def load(path: str | Path | ResultsURL) -> ResultFrames:
    """Every rating, experiment, study and campaign of a results store (a directory, its
    bgbench.sqlite, or a postgresql:// URL), as DataFrames."""
    file = store_file(path)
    with reading(file) as db:
        ratings = _table(db, file, "ratings", "created, id")
        experiments = _table(db, file, "experiments", "rating_id, seq")
        measurements = _table(db, file, "measurements", "rating_id, seq")
        campaigns = _table(db, file, "campaigns", "created, id")
        jobs = _table(db, file, "campaign_jobs", "campaign_id, seq")
    rating_rows = [_checked(file, f"ratings row {r.get('id')!r}", _rating_row, r) for r in ratings]
    confidence = {r["id"]: r["confidence"] for r in rating_rows}
    titles = {r["id"]: _titles(r["workload"]) for r in rating_rows}
    exp_rows, agent_rows, action_rows, valid_rows, resource = [], [], [], [], []
    step_rows: list[dict[str, Any]] = []
    phase_rows: list[dict[str, Any]] = []
    described: dict[str, str] = {}
    for e in experiments:
        where = f"experiments row {e.get('rating_id')!r} seq {e.get('seq')}"
        rows = _checked(file, where, _experiment_rows, e, confidence, titles)
        exp_rows.append(rows[0])
        if rows[0]["store_description"] and e["status"] != "fault":
            described.setdefault(e["rating_id"], rows[0]["store_description"])
        agent_rows += rows[1]
        action_rows += rows[2]
        valid_rows += rows[3]
        resource += rows[4]
        step_rows += rows[5]
        phase_rows += rows[6]
    counts = pd.Series([e["rating_id"] for e in experiments], dtype=object).value_counts()
    by_rating: dict[str, list[dict[str, Any]]] = {}
    for row in exp_rows:
        by_rating.setdefault(row["rating_id"], []).append(row)
    for r in rating_rows:
        r["store_description"] = described.get(r["id"], "")
        r["experiments"] = int(counts.get(r["id"], 0))
        mine = by_rating.get(r["id"], [])
        where = f"ratings row {r['id']!r} (bottleneck)"
        at = r["soar_threads"] if r["soar_threads"] is not None else r["socialites"]
        r.update(_checked(file, where, rating_bottleneck, r.pop("summary"), mine, at))
    return ResultFrames(
        path=file,
        ratings=_typed(_frame(rating_rows, RATING_COLUMNS)),
        experiments=_frame(exp_rows, EXPERIMENT_COLUMNS),
        per_agent=_frame(agent_rows, AGENT_COLUMNS),
        per_action=_frame(action_rows, ACTION_COLUMNS),
        validation=_frame(valid_rows, VALIDATION_COLUMNS),
        sweep=_frame(_checked(file, "ratings (sweep)", _sweeps, ratings), SWEEP_COLUMNS),
        measurements=_checked(file, "measurements", _measurements, measurements),
        campaigns=_frame(
            _checked(file, "campaigns", _campaign_rows, campaigns),
            CAMPAIGN_COLUMNS,
        ),
        campaign_jobs=_checked(file, "campaign_jobs", jobs_frame, jobs),
        resources=resources_frame(resource),
        steps=steps_frame(step_rows),
        phases=phases_frame(phase_rows),
    )


Rows = tuple[
    dict[str, Any],
    list[dict[str, Any]],
    list[dict[str, Any]],
    list[dict[str, Any]],
    list[dict[str, Any]],
    list[dict[str, Any]],
    list[dict[str, Any]],
]


def _experiment_rows(
    e: Mapping[str, Any], confidence: Mapping[str, Any], titles: Mapping[str, Any]
) -> Rows:
    """An experiment's row, and its rows of per_agent, per_action, validation, resources,
    steps and phases."""
    result = _object(redacted_result(_parsed(e["result_json"])))  # older records held secrets
    rid = e["rating_id"]
    row = {**e, "reasons": redacted(e["reasons"])}
    interval = _interval(result, confidence.get(rid))
    exp, agents, actions, valid = experiment_rows(row, result, interval, titles.get(rid, {}))
    figures = figures_of(result)
    exp.update(bottleneck_columns(figures))
    steps, phases = scenario_rows(exp, result)
    return exp, agents, actions, valid, resource_rows(exp, figures), steps, phases


def _parsed(text: str) -> dict[str, Any]:
    return _object(json.loads(text))


def _campaign_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [campaign_row(r) for r in rows]


def _sweeps(ratings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [s for r in ratings for s in _sweep_rows(r)]


def _frame(rows: list[dict[str, Any]], columns: tuple[str, ...]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=list(columns))


RATING_INTS = ("soar_threads", "socialites", "socialites_low", "socialites_high")
RATING_FLOATS = (
    "soar", "soar_rate", "soar_low", "soar_high", "confidence", "search_duration_s",
    "final_duration_s", "alpha", "beta_ms", "tau",
)  # fmt: skip


def _typed(ratings: pd.DataFrame) -> pd.DataFrame:
    """Numbers as numbers, a missing one as NA, whatever the first rows held (a column of
    None would otherwise stay a column of objects)."""
    for c in RATING_INTS:
        ratings[c] = pd.to_numeric(ratings[c]).astype("Int64")
    for c in RATING_FLOATS:
        ratings[c] = pd.to_numeric(ratings[c]).astype("float64")
    return ratings


def _titles(workload: str) -> dict[str, str]:
    try:
        w = registry.get(workload)
    except BGBenchError:  # a workload no longer installed: its short names stand
        return {}
    return {name: w.action_titles.get(code, name) for code, name in w.actions.items()}


def _json(text: str | None, default: Any) -> Any:
    return json.loads(text) if text else default


def _rating_row(r: Mapping[str, Any]) -> dict[str, Any]:
    config = redact_config(_object(_json(r["config_json"], {})))  # older records held secrets
    summary = _object(redacted(_json(r.get("summary_json"), {}) or {}))
    sla = config.get("sla", {})
    return {
        "id": r["id"],
        "status": r["status"],
        "objective": r["objective"],
        "workload": r.get("workload") or (config.get("workload") or {}).get("name") or "bg",
        "store": r["store"],
        "over": summary.get("over") or "threads",
        "soar": r["soar"],
        "soar_threads": r["soar_threads"],
        "soar_rate": summary.get("soar_rate"),
        "soar_low": summary.get("soar_low"),
        "soar_high": summary.get("soar_high"),
        "confidence": summary.get("confidence"),
        "socialites": r["socialites"],
        "socialites_low": summary.get("socialites_low"),
        "socialites_high": summary.get("socialites_high"),
        "uncertain_threads": list(summary.get("uncertain_threads") or []),
        "search_duration_s": summary.get("search_duration_s", sla.get("delta_search_s")),
        "final_duration_s": summary.get("final_duration_s", sla.get("delta_s")),
        "alpha": sla.get("alpha"),
        "beta_ms": sla.get("beta_ms"),
        "tau": sla.get("tau"),
        "latency_scope": sla.get("latency_scope"),
        "created": r["created"],
        "updated": r["updated"],
        "message": redacted(r.get("message") or ""),
        "notes": list(summary.get("notes") or []),
        "config": config,
        "hosts": redacted(_json(r.get("hosts_json"), [])),
        "versions": redacted(_json(r.get("versions_json"), {})),
        "transactions": _transactions(summary.get("transactions")),
        "summary": summary,  # for its bottleneck, taken out once read
    }


def _transactions(recorded: Any) -> dict[str, dict[str, float | None]]:
    """A summary's transactions per interaction, each figure a number or None ({} when
    it has none)."""
    if not isinstance(recorded, dict):
        return {}
    return {
        str(action): {
            str(k): v if v is None or isinstance(v, int | float) else math.nan
            for k, v in figures.items()
        }
        for action, figures in recorded.items()
        if isinstance(figures, dict)
    }


def _interval(result: Mapping[str, Any], confidence: float | None) -> tuple[float, float]:
    steady = result.get("steady") or {}
    if not confidence or not steady.get("tested"):
        return math.nan, math.nan
    window = steady.get("throughput", [])[steady.get("cut", 0) :]
    i = mean_interval(window, confidence)
    if not (math.isfinite(i.low) and math.isfinite(i.high)):
        return math.nan, math.nan
    return i.low, i.high


def _sweep_rows(r: Mapping[str, Any]) -> list[dict[str, Any]]:
    summary = _json(r.get("summary_json"), {}) or {}
    if not summary.get("sweep"):
        return []
    return [
        {"rating_id": r["id"], **row} for row in csv_rows(SweepTable.from_dict(summary["sweep"]))
    ]


def _measurements(rows: list[dict[str, Any]]) -> pd.DataFrame:
    flat = [
        {
            "rating_id": m["rating_id"],
            "seq": m["seq"],
            "name": m["name"],
            **_object(redacted(json.loads(m["row_json"]))),
        }
        for m in rows
    ]
    columns = list(dict.fromkeys([*MEASUREMENT_COLUMNS, *(k for m in flat for k in m)]))
    return pd.DataFrame(flat, columns=columns)
