"""The timeline of an experiment that ran a scenario: throughput and errors, p95 against
beta, and the unpredictable reads per second, with each step drawn as a labelled vertical
line where it started and the phases shaded in turn.

Step labels come from settings files: untrusted text. Matplotlib reads `$...$` as math
(and fails on an odd `$`), so labels are made literal and shortened before drawing; the
SVG writer escapes what remains.
"""

import math

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from bgbench.coordinator.reports.charts import panel
from bgbench.run_result.scenario import ScenarioFigures

SIZE = (10.0, 7.5)
LABEL_CHARS = 40
SHADES = ("#f2f2f2", "#e0e8f5")  # phases in turn; the baseline is left white


def literal(text: str, limit: int = LABEL_CHARS) -> str:
    """Text as matplotlib draws it literally: no math, no line breaks, at most `limit`."""
    flat = " ".join(text.split())
    if len(flat) > limit:
        flat = flat[: limit - 1] + "…"
    return flat.replace("\\", "\\\\").replace("$", r"\$")


def timeline(figures: ScenarioFigures, title: str, beta_ms: float | None) -> Figure | None:
    """The figure, or None when the timeline has no point."""
    t = figures.timeline
    if not t.t_s:
        return None
    fig = Figure(figsize=SIZE, layout="constrained")
    rate = panel(fig, 1, literal(title, 120), "actions/s")
    p95 = panel(fig, 2, "p95 response time (log scale)", "ms")
    stale = panel(fig, 3, "Validated reads", "reads/s")
    stale.set_xlabel("s into the experiment")
    rate.plot(t.t_s, t.throughput, label="successful actions/s", color="tab:blue")
    if any(t.errors_per_s):
        rate.plot(t.t_s, t.errors_per_s, label="errors/s", color="tab:red", linestyle="--")
    # an interval where nothing ended breaks the line (NaN): no p95 is drawn across it
    values = [math.nan if v is None else v for v in t.p95_ms[: len(t.t_s)]]
    p95.plot(t.t_s[: len(values)], values, color="tab:purple", marker=".", markersize=3,
             label="p95")  # fmt: skip
    if beta_ms:
        p95.axhline(beta_ms, color="black", linestyle=":", linewidth=0.8, label="beta")
    p95.set_yscale("log")  # a failure's timeouts are seconds, the store's normal ms or less
    if t.reads and t.bin_s:
        starts = [t.bin_start_s + i * t.bin_s for i in range(len(t.reads))]
        stale.bar(starts, [r / t.bin_s for r in t.reads], width=t.bin_s, align="edge",
                  color="tab:gray", alpha=0.5, label="reads/s")  # fmt: skip
        unpredictable = (t.unpredictable + [0] * len(t.reads))[: len(t.reads)]
        stale.bar(starts, [u / t.bin_s for u in unpredictable], width=t.bin_s, align="edge",
                  color="tab:red", label="unpredictable reads/s")  # fmt: skip
    else:
        stale.text(0.5, 0.5, "no read series recorded", transform=stale.transAxes,
                   ha="center", va="center", color="#777")  # fmt: skip
    end = max([t.t_s[-1], *(p.end_s for p in figures.phases)])
    for ax in (rate, p95, stale):
        _phases_and_steps(ax, figures, labelled=ax is rate)
        ax.set_xlim(0, end)
        if ax is not p95:
            ax.set_ylim(bottom=0)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, loc="lower right")
    return fig


def _phases_and_steps(ax: Axes, figures: ScenarioFigures, labelled: bool) -> None:
    """Phases after the baseline shaded in turn; a vertical line where each step started,
    named on the top panel."""
    for phase in figures.phases[1:]:
        ax.axvspan(phase.start_s, phase.end_s, color=SHADES[phase.index % 2], zorder=0)
    for step in figures.steps:
        if step.started_s is None:
            continue
        color = "tab:green" if step.ok else "tab:red"
        ax.axvline(step.started_s, color=color, linewidth=1.0, linestyle="-")
        if labelled:
            ax.annotate(
                literal(f"{step.index + 1}: {step.text}"),
                xy=(step.started_s, 1.0),
                xycoords=("data", "axes fraction"),
                xytext=(2, -2),
                textcoords="offset points",
                rotation=90,
                va="top",
                fontsize=7,
                color=color,
            )
