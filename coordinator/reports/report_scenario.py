"""A scenario's steps and phases as console tables (rich), for `bgbench run` and
`bgbench report`. Labels and details are untrusted text: rich renders them as text
(Text objects, never markup)."""

from rich.console import Group
from rich.table import Table
from rich.text import Text

from bgbench.run_result.scenario import PhaseFigures, ScenarioFigures

DETAIL_CHARS = 80


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _ms(value: float) -> str:
    return f"{value:.2f}" if value < 100 else f"{value:.0f}"


def steps_table(figures: ScenarioFigures) -> Table:
    table = Table(title="scenario steps (s from the experiment's start)", title_justify="left")
    for col in ("#", "step", "planned", "started", "ended", "ok", "what was done"):
        table.add_column(col, justify="left" if col in ("step", "what was done") else "right")
    for s in figures.steps:
        detail = s.detail if len(s.detail) <= DETAIL_CHARS else s.detail[:DETAIL_CHARS] + "…"
        table.add_row(
            str(s.index + 1),
            Text(s.text),
            _s(s.at_s),
            _s(s.started_s) if s.reached else "not reached",
            _s(s.ended_s),
            ("yes" if s.ok else "NO") if s.reached else "",
            Text(detail),
        )
    return table


def _phase_row(p: PhaseFigures) -> list[str | Text]:
    return [
        str(p.index),
        Text(p.label),
        f"{p.start_s:.1f}–{p.end_s:.1f}",
        f"{p.actions_per_s:,.1f}",
        f"{p.errors:,}" + (f" ({p.timeouts:,} t/o)" if p.timeouts else ""),
        f"{p.unavailable_s:.1f}",
        _ms(p.p95_ms),
        f"{p.within_percent:.2f}",
        f"{p.unpredictable:,}/{p.reads:,}",
        _ms(p.lag_p95_ms),
        _s(p.recover_throughput_s) if p.index else "",
        _s(p.recover_sla_s) if p.index else "",
        Text("PASS", style="green") if p.meets_sla else Text("FAIL", style="red"),
    ]


def phase_table(figures: ScenarioFigures) -> Table:
    table = Table(
        title="per phase (throughput back: to 90% of the baseline's; SLA back: holds again; "
        "both for 3 intervals, s from the phase's start, -: not within it)",
        title_justify="left",
    )
    for col in (
        "phase", "after", "s", "actions/s", "errors", "unavail. s", "p95 ms", "≤ β %",
        "unpredictable", "lag p95 ms", "thr. back s", "SLA back s", "SLA",
    ):  # fmt: skip
        table.add_column(col, justify="left" if col == "after" else "right")
    for p in figures.phases:
        table.add_row(*_phase_row(p))
    return table


def render_scenario(figures: ScenarioFigures) -> Group:
    """The steps as they ran, then the phases."""
    return Group(steps_table(figures), phase_table(figures))
