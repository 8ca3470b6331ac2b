"""The scenario frames of bgbench.results.load: what each experiment that ran a scenario
recorded of its steps and phases (ExperimentResult.scenario, kept under the key
"scenario" of its result JSON). An experiment without a scenario has no rows.

steps (one row per step of one experiment)
    rating_id, seq, experiment_id, threads, step (its index in the scenario), at_s (when
    planned, from the experiment's start), action, node, label, text (what tables call
    it), started_s, ended_s (NaN: never reached), late_s (started - planned), reached,
    ok, detail, exit_status (a run step's; None: none), output (a run step's, bounded and
    redacted).
phases (one row per phase of one experiment; phase 0 is the baseline)
    rating_id, seq, experiment_id, threads, phase, label (the step that opened it),
    start_s, end_s, duration_s, actions, errors, timeouts, actions_per_s (successful),
    p50_ms, p95_ms, p99_ms, within_percent, unavailable_s, reads, unpredictable,
    unpredictable_percent, lag_p50_ms, lag_p95_ms, lag_max_ms, recover_throughput_s,
    recover_sla_s (NaN: not recovered within the phase, or the baseline), meets_sla,
    reasons (list).
scenario_timeline(result) (one experiment's timeline: two frames)
    intervals: t_s (the interval's end), throughput, p95_ms, errors_per_s, within;
    bins: t_s (the bin's start, on the experiment's clock), reads, unpredictable.
"""

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from bgbench.run_result.scenario import ScenarioFigures

KEY = "scenario"  # of an experiment's result JSON
EXPERIMENT_KEYS = ("rating_id", "seq", "experiment_id", "threads")
STEP_COLUMNS = (
    *EXPERIMENT_KEYS, "step", "at_s", "action", "node", "label", "text", "started_s",
    "ended_s", "late_s", "reached", "ok", "detail", "exit_status", "output",
)  # fmt: skip
PHASE_FIGURES = (
    "start_s", "end_s", "duration_s", "actions", "errors", "timeouts", "actions_per_s",
    "p50_ms", "p95_ms", "p99_ms", "within_percent", "unavailable_s", "reads",
    "unpredictable", "unpredictable_percent", "lag_p50_ms", "lag_p95_ms", "lag_max_ms",
    "recover_throughput_s", "recover_sla_s", "meets_sla", "reasons",
)  # fmt: skip
PHASE_COLUMNS = (*EXPERIMENT_KEYS, "phase", "label", *PHASE_FIGURES)
INTERVAL_COLUMNS = ("t_s", "throughput", "p95_ms", "errors_per_s", "within")
BIN_COLUMNS = ("t_s", "reads", "unpredictable")


def scenario_of(result: Mapping[str, Any]) -> ScenarioFigures | None:
    """The scenario figures of a recorded result (None: it ran none)."""
    data = result.get(KEY)
    return ScenarioFigures.from_record(data) if isinstance(data, dict) else None


def scenario_rows(
    experiment: Mapping[str, Any], result: Mapping[str, Any]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """An experiment's rows of the steps and phases frames (`experiment`: its row of the
    experiments frame)."""
    figures = scenario_of(result)
    if figures is None:
        return [], []
    keys = {k: experiment.get(k) for k in EXPERIMENT_KEYS}
    steps = [
        {
            **keys,
            "step": s.index,
            "at_s": s.at_s,
            "action": s.action,
            "node": s.node,
            "label": s.label,
            "text": s.text,
            "started_s": _number(s.started_s),
            "ended_s": _number(s.ended_s),
            "late_s": s.started_s - s.at_s if s.started_s is not None else math.nan,
            "reached": s.reached,
            "ok": s.ok,
            "detail": s.detail,
            "exit_status": s.exit_status,
            "output": s.output,
        }
        for s in figures.steps
    ]
    phases = [
        {
            **keys,
            "phase": p.index,
            "label": p.label,
            **{name: _number(getattr(p, name)) for name in PHASE_FIGURES if name != "reasons"},
            "reasons": list(p.reasons),
        }
        for p in figures.phases
    ]
    return steps, phases


def scenario_timeline(result: Mapping[str, Any]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(intervals, bins) of one experiment's timeline; empty frames when it ran none."""
    figures = scenario_of(result)
    if figures is None:
        return _empty(INTERVAL_COLUMNS), _empty(BIN_COLUMNS)
    t = figures.timeline
    n = len(t.t_s)
    intervals = pd.DataFrame(
        {
            "t_s": t.t_s,
            "throughput": t.throughput[:n],
            "p95_ms": [_number(v) for v in t.p95_ms[:n]],
            "errors_per_s": t.errors_per_s[:n],
            "within": [_number(v) for v in t.within[:n]],
        },
        columns=list(INTERVAL_COLUMNS),
    )
    bins = len(t.reads)
    bin_rows = pd.DataFrame(
        {
            "t_s": [t.bin_start_s + i * t.bin_s for i in range(bins)],
            "reads": t.reads,
            "unpredictable": (t.unpredictable + [0] * bins)[:bins],
        },
        columns=list(BIN_COLUMNS),
    )
    return intervals, bin_rows


def steps_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=list(STEP_COLUMNS))
    frame["exit_status"] = pd.to_numeric(frame["exit_status"]).astype("Int64")  # None: NA
    return frame


def phases_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=list(PHASE_COLUMNS))


def _number(value: Any) -> Any:
    """None as NaN, so the column stays numeric (booleans and numbers as they are)."""
    return math.nan if value is None else value


def _empty(columns: tuple[str, ...]) -> pd.DataFrame:
    return pd.DataFrame([], columns=list(columns))
