"""The report's Scenario section of a rating or a run, and a campaign's jobs side by side
per phase (how consistency settings are compared through the same failure).

Step labels, details and a run step's output come from settings files and commands:
untrusted. They reach the page only through Page.text/pre/table (escaped) and the charts
(coordinator/reports/charts_scenario.py makes them literal).
"""

from typing import Any, Protocol

import pandas as pd
from matplotlib.figure import Figure

from bgbench.coordinator.reports import charts_scenario
from bgbench.coordinator.storage.frames import ResultFrames
from bgbench.coordinator.storage.frames_scenario import scenario_of
from bgbench.run_result.scenario import ScenarioFigures

MAX_EXPERIMENTS = 20  # timelines drawn per rating (the last ones)
OUTPUT_CHARS = 4000  # of a run step's output shown on the page


class Page(Protocol):
    """What this section writes to (html_report.Page)."""

    def heading(self, text: str, anchor: str = "", level: int = 2) -> None: ...
    def text(self, text: str, css: str = "") -> None: ...
    def pre(self, text: str) -> None: ...
    def table(self, frame: pd.DataFrame) -> None: ...
    def figure(self, ident: str, fig: Figure | None, caption: str, wide: bool = False) -> None: ...


STEP_TABLE = {
    "step": "#", "text": "step", "at_s": "planned s", "started_s": "started s",
    "ended_s": "ended s", "ok": "ok", "detail": "what was done", "exit_status": "exit status",
}  # fmt: skip
PHASE_TABLE = {
    "phase": "phase", "label": "after", "start_s": "from s", "end_s": "to s",
    "actions_per_s": "actions/s", "errors": "errors", "timeouts": "timeouts",
    "unavailable_s": "unavailable s", "p95_ms": "p95 ms", "within_percent": "% within beta",
    "reads": "reads", "unpredictable_percent": "% unpredictable", "lag_p95_ms": "lag p95 ms",
    "recover_throughput_s": "throughput back s", "recover_sla_s": "SLA back s",
    "meets_sla": "SLA met", "reasons": "reasons",
}  # fmt: skip
SIDE_BY_SIDE = {
    "actions_per_s": "actions/s", "unavailable_s": "unavailable s", "errors": "errors",
    "unpredictable_percent": "% unpredictable", "lag_p95_ms": "lag p95 ms",
    "recover_throughput_s": "throughput back s", "meets_sla": "SLA met",
}  # fmt: skip


def phase_view(phases: pd.DataFrame) -> pd.DataFrame:
    """Phase rows as the report tables them: reasons as one line."""
    shown = phases[list(PHASE_TABLE)].copy()
    shown["reasons"] = ["; ".join(map(str, r)) for r in shown["reasons"]]
    shown["meets_sla"] = shown["meets_sla"].map({True: "yes", False: "no"})
    return shown.rename(columns=PHASE_TABLE)


def scenario_sections(
    frames: ResultFrames, rating_id: str, page: Page, prefix: str, beta_ms: float | None
) -> None:
    """Per experiment that ran a scenario: its timeline, its steps and its phases."""
    phases = frames.of_rating(frames.phases, rating_id)
    if phases.empty:
        return
    steps = frames.of_rating(frames.steps, rating_id)
    exps = frames.of_rating(frames.experiments, rating_id)
    page.heading("Scenario")
    page.text(
        "Each step cuts the experiment into phases: phase 0 is the baseline, each later one "
        "starts when its step started. Per phase: successful actions/s, errors and timeouts, "
        "time with no successful action (at the progress interval's resolution), response "
        "time of the actions that ended in it, validated reads that started in it and their "
        "staleness, and how long throughput (90% of the baseline's) and the SLA took to hold "
        "again for 3 intervals (empty: not within the phase)."
    )
    seqs = list(dict.fromkeys(int(s) for s in phases["seq"]))
    if len(seqs) > MAX_EXPERIMENTS:
        page.text(f"The last {MAX_EXPERIMENTS} of {len(seqs)} experiments with a scenario.")
        seqs = seqs[-MAX_EXPERIMENTS:]
    for seq in seqs:
        e = exps[exps["seq"] == seq]
        what = f" ({e['phase'].iloc[0]}, T={e['threads'].iloc[0]})" if not e.empty else ""
        page.heading(f"Experiment {seq}{what}", level=3)
        figures = scenario_of(frames.result(rating_id, seq))
        if figures is not None:
            page.figure(
                f"{prefix}scenario-{seq}",
                charts_scenario.timeline(figures, f"Experiment {seq}{what}", beta_ms),
                "Successful actions/s and errors/s, p95 response time against beta, "
                "validated reads/s and unpredictable reads/s; each step a vertical line "
                "where it started (red: it failed), later phases shaded in turn.",
                wide=True,
            )
        mine = steps[steps["seq"] == seq]
        shown = mine.assign(step=mine["step"] + 1)  # numbered from 1, as on the chart
        page.table(shown[list(STEP_TABLE)].rename(columns=STEP_TABLE))
        for _, step in mine.iterrows():
            output = str(step["output"] or "")
            if output:
                cut = " (cut)" if len(output) > OUTPUT_CHARS else ""
                page.text(f"Output of step {step['step'] + 1}{cut}:")
                page.pre(output[:OUTPUT_CHARS])
        page.table(phase_view(phases[phases["seq"] == seq]))


def standing_phases(frames: ResultFrames, rating_id: str) -> pd.DataFrame:
    """The phases of the experiment that stands for a rating: its last final or run with
    a scenario, else its last experiment with one."""
    phases = frames.of_rating(frames.phases, rating_id)
    if phases.empty:
        return phases
    exps = frames.of_rating(frames.experiments, rating_id)
    rated = exps[exps["phase"].isin(("final", "run")) & exps["seq"].isin(phases["seq"])]
    seq = int(rated["seq"].iloc[-1]) if not rated.empty else int(phases["seq"].iloc[-1])
    return phases[phases["seq"] == seq].reset_index(drop=True)


def side_by_side(frames: ResultFrames, jobs: pd.DataFrame) -> pd.DataFrame:
    """Rows: each phase's figures; columns: the jobs (empty: no job ran a scenario)."""
    columns: dict[str, dict[tuple[int, str], Any]] = {}
    labels: dict[int, str] = {}
    for _, job in jobs.iterrows():
        rid = job["rating_id"]
        if not isinstance(rid, str) or rid not in set(frames.ratings["id"]):
            continue
        phases = standing_phases(frames, rid)
        if phases.empty:
            continue
        column: dict[tuple[int, str], Any] = {}
        for _, p in phases.iterrows():
            labels.setdefault(int(p["phase"]), str(p["label"]))
            for key, name in SIDE_BY_SIDE.items():
                column[(int(p["phase"]), name)] = _shown(p[key])
        columns[f"{job['seq']}: {job['label']}"] = column
    if not columns:
        return pd.DataFrame()
    keys = sorted({k for c in columns.values() for k in c}, key=lambda k: (k[0], _order(k[1])))
    rows = [
        {"phase": f"{i}: {labels[i]}", "figure": name, **{j: c.get((i, name)) for j, c in
                                                           columns.items()}}
        for i, name in keys
    ]  # fmt: skip
    return pd.DataFrame(rows)


def _shown(value: Any) -> str:
    """A figure as its cell shows it (the columns mix numbers and words)."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None or (isinstance(value, float) and value != value):
        return ""
    if isinstance(value, float):
        return f"{value:,.1f}" if abs(value) >= 100 else f"{value:.2f}"
    return str(value)


def _order(name: str) -> int:
    return list(SIDE_BY_SIDE.values()).index(name)


def campaign_scenario(frames: ResultFrames, jobs: pd.DataFrame, page: Page) -> None:
    """The jobs that ran a scenario, side by side per phase."""
    table = side_by_side(frames, jobs)
    if table.empty:
        return
    page.heading("Scenario phases, job by job")
    page.text(
        "Each job's experiment that stands for it (its final, or its run), phase by phase: "
        "the same steps under each job's settings (consistency levels, say)."
    )
    page.table(table)


def scenarios_of(frames: ResultFrames, ident: str) -> list[tuple[str, ScenarioFigures]]:
    """The scenario figures a report of `ident` shows, each with what it is: a campaign's
    jobs' standing experiments, or a rating's (a run's) experiments with a scenario."""
    campaigns = frames.campaign_jobs[frames.campaign_jobs["campaign_id"] == ident]
    if not campaigns.empty:
        wanted = [
            (f"job {j['seq']}: {j['label']}", j["rating_id"])
            for _, j in campaigns.iterrows()
            if isinstance(j["rating_id"], str) and j["rating_id"] in set(frames.ratings["id"])
        ]
        seqs = [(what, rid, standing_phases(frames, rid)) for what, rid in wanted]
        chosen = [(what, rid, int(p["seq"].iloc[0])) for what, rid, p in seqs if not p.empty]
    else:
        phases = frames.of_rating(frames.phases, ident)
        seqs_of = list(dict.fromkeys(int(s) for s in phases["seq"]))[-MAX_EXPERIMENTS:]
        chosen = [(f"experiment {s}", ident, s) for s in seqs_of]
    out = []
    for what, rid, seq in chosen:
        figures = scenario_of(frames.result(rid, seq))
        if figures is not None:
            out.append((f"{what} (rating {rid}, experiment {seq})", figures))
    return out
