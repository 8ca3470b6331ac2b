"""The report's figures, drawn with matplotlib from the DataFrames of coordinator/storage/frames.py.

Each function returns a matplotlib Figure (made without pyplot, so nothing global is
touched and no display is needed), or None when the data has nothing to show; svg()
turns one into the markup inlined in the HTML report.
"""

import io
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard

import matplotlib
import numpy as np
import pandas as pd
from hdrh.histogram import HdrHistogram
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import ScalarFormatter

from bgbench.coordinator.records.metrics import distribution

SIZE = (7.0, 3.8)
GROUP_ID = re.compile(r'<g id="(?!overlay-)[^"]*">')  # charts_overlay names its curves
RATED_PHASES = ("search", "final", "sweep", "run")  # warm-ups and faulted attempts are not
PHASE_STYLE = {"search": ("o", "tab:blue"), "final": ("D", "tab:green"),
               "sweep": ("o", "tab:purple"), "run": ("s", "tab:blue")}  # fmt: skip


def panel(fig: Figure, i: int, title: str, ylabel: str) -> Axes:
    """The i-th of three stacked panels of a timeline figure, titled and gridded."""
    ax = fig.add_subplot(3, 1, i)
    ax.set_title(title, loc="left", fontsize=10)
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    return ax


def svg(fig: Figure) -> str:
    """The figure as an <svg> element (no XML prologue), to inline in HTML."""
    buf = io.StringIO()
    # text as <text> (the page's fonts), not glyph outlines whose ids repeat in every figure
    with matplotlib.rc_context({"svg.fonttype": "none"}):
        fig.savefig(buf, format="svg", bbox_inches="tight")
    text = buf.getvalue()
    # matplotlib names its groups figure_1, axes_1, ... in every figure: ids that would
    # repeat on the page, and that nothing refers to
    return GROUP_ID.sub("<g>", text[text.index("<svg") :])


def save(fig: Figure, path: str, fmt: str) -> None:
    fig.savefig(path, format=fmt, bbox_inches="tight", dpi=120)


def _axes(title: str, xlabel: str, ylabel: str) -> tuple[Figure, Axes]:
    fig = Figure(figsize=SIZE)
    ax = fig.add_subplot()
    ax.set_title(title, loc="left", fontsize=11)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    return fig, ax


def rated(experiments: pd.DataFrame) -> pd.DataFrame:
    """The experiments the charts plot: rated phases, no infrastructure faults."""
    keep = experiments["phase"].isin(RATED_PHASES) & (experiments["status"] != "fault")
    return experiments[keep]


@dataclass(frozen=True)
class XAxis:
    """What a rating's figures are drawn against: T, or the open-loop rate it searched."""

    column: str  # of the experiments frame
    label: str
    short: str
    soar_at: str  # the ratings frame's column where SoAR was reached
    at: str  # how that point is written: a format with one field

    def where(self, value: float) -> str:
        return self.at.format(value)


THREADS = XAxis("threads", "T (threads)", "T", "soar_threads", "T={:g}")
RATE = XAxis("target_rate", "arrival rate (actions/s)", "the arrival rate", "soar_rate",
             "{:,.0f} arrivals/s")  # fmt: skip


def _by_phase(ax: Axes, experiments: pd.DataFrame, column: str, x: XAxis) -> None:
    """One series per phase; failed experiments drawn hollow in red."""
    for phase, rows in experiments.groupby("phase", sort=False):
        marker, color = PHASE_STYLE.get(str(phase), ("o", "tab:gray"))
        ok = rows[rows["passed"]]
        bad = rows[~rows["passed"]]
        ax.scatter(ok[x.column], ok[column], marker=marker, color=color, label=f"{phase}")
        if not bad.empty:
            ax.scatter(bad[x.column], bad[column], marker=marker, facecolors="none",
                       edgecolors="tab:red", label=f"{phase}, failed")  # fmt: skip


def _threads_axis(ax: Axes, experiments: pd.DataFrame, x: XAxis = THREADS) -> None:
    values = experiments[x.column]
    if len(values) and values.max() / max(values.min(), 1) >= 16:
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(ScalarFormatter())


def throughput(
    experiments: pd.DataFrame, rating: "pd.Series[Any]", x: XAxis = THREADS
) -> Figure | None:
    """Actions/s against T, each experiment's interval as an error bar, SoAR marked with
    its interval as a band."""
    rows = rated(experiments)
    if rows.empty:
        return None
    fig, ax = _axes(f"Throughput against {x.short}", x.label, "actions/s")
    with_ci = rows.dropna(subset=["actions_per_s_low", "actions_per_s_high"])
    if not with_ci.empty:
        err = [with_ci["actions_per_s"] - with_ci["actions_per_s_low"],
               with_ci["actions_per_s_high"] - with_ci["actions_per_s"]]  # fmt: skip
        ax.errorbar(with_ci[x.column], with_ci["actions_per_s"], yerr=err, fmt="none",
                    ecolor="tab:gray", alpha=0.6, capsize=2)  # fmt: skip
    _by_phase(ax, rows, "actions_per_s", x)
    soar, at = rating["soar"], rating[x.soar_at]
    if _number(soar) and _number(at) and at:
        low, high = rating["soar_low"], rating["soar_high"]
        if _number(low) and _number(high):
            ax.axhspan(low, high, color="tab:orange", alpha=0.15, label="SoAR interval")
        ax.scatter([at], [soar], marker="*", s=220, color="tab:orange", zorder=5,
                   label=f"SoAR {soar:,.0f} at {x.where(at)}")  # fmt: skip
    ax.set_ylim(bottom=0)  # a short run's interval may reach below it
    _threads_axis(ax, rows, x)
    ax.legend(fontsize=8)
    return fig


def within(
    experiments: pd.DataFrame, alpha: float | None, beta_ms: float | None, x: XAxis = THREADS
) -> Figure | None:
    rows = rated(experiments)
    if rows.empty:
        return None
    bound = f"{beta_ms:g} ms" if _number(beta_ms) else "beta"
    fig, ax = _axes(f"Share of actions within {bound} against {x.short}", x.label, "% within beta")
    _by_phase(ax, rows, "within_percent", x)
    if _number(alpha):
        ax.axhline(alpha, color="tab:red", linestyle="--", label=f"alpha {alpha:g}%")
    _threads_axis(ax, rows, x)
    ax.legend(fontsize=8)
    return fig


def latency(experiments: pd.DataFrame, beta_ms: float | None, x: XAxis = THREADS) -> Figure | None:
    rows = rated(experiments).dropna(subset=["p50_ms"])
    if rows.empty:
        return None
    fig, ax = _axes(f"Response time against {x.short}", x.label, "ms")
    for column, color in (("p50_ms", "tab:blue"), ("p95_ms", "tab:orange"),
                          ("p99_ms", "tab:red")):  # fmt: skip
        by_t = rows.groupby(x.column)[column].mean()
        ax.plot(by_t.index, by_t.to_numpy(), marker="o", color=color, label=column[:3])
    if _number(beta_ms):
        ax.axhline(beta_ms, color="black", linestyle="--", label=f"beta {beta_ms:g} ms")
    ax.set_yscale("log")
    _threads_axis(ax, rows, x)
    ax.legend(fontsize=8)
    return fig


def unpredictable(
    experiments: pd.DataFrame, tau: float | None, x: XAxis = THREADS
) -> Figure | None:
    rows = rated(experiments)
    if rows.empty:
        return None
    fig, ax = _axes(f"Unpredictable reads against {x.short}", x.label, "% unpredictable")
    _by_phase(ax, rows, "unpredictable_percent", x)
    if _number(tau):
        ax.axhline(tau, color="tab:red", linestyle="--", label=f"tau {tau:g}%")
    ax.set_ylim(bottom=0)
    _threads_axis(ax, rows, x)
    ax.legend(fontsize=8)
    return fig


def histograms(named: Sequence[tuple[str, HdrHistogram]], title: str, unit_us: bool) -> Figure:
    """Distributions of HDR histograms (values in microseconds) over log-spaced bins, one
    line per histogram, in ms."""
    fig, ax = _axes(title, "ms (log)", "share of values %")
    for label, h in named:
        values, counts = distribution(h)
        if not len(values):
            continue
        ms = values / 1000 if unit_us else values
        edges = np.geomspace(max(ms.min(), 1e-3), ms.max() * 1.01, 40)
        share, _ = np.histogram(ms, bins=edges, weights=100 * counts / counts.sum())
        ax.stairs(share, edges, label=label)
    ax.set_xscale("log")
    ax.legend(fontsize=8)
    return fig


def per_agent(agents: pd.DataFrame) -> Figure | None:
    if agents.empty:
        return None
    fig, ax = _axes("Throughput per agent against T", "T (threads)", "actions/s")
    for agent, rows in agents.groupby("agent", sort=False):
        by_t = rows.groupby("threads")["throughput"].mean()
        ax.plot(by_t.index, by_t.to_numpy(), marker="o", label=str(agent))
    ax.set_ylim(bottom=0)
    _threads_axis(ax, agents)
    ax.legend(fontsize=8)
    return fig


def per_action(actions: pd.DataFrame) -> Figure | None:
    rows = actions.dropna(subset=["p95_ms"])
    rows = rows[rows["count"] > 0]
    if rows.empty:
        return None
    fig, ax = _axes("95th percentile response time per action against T", "T (threads)", "ms")
    for action, part in rows.groupby("action", sort=False):
        by_t = part.groupby("threads")["p95_ms"].mean()
        ax.plot(by_t.index, by_t.to_numpy(), marker=".", label=str(action))
    ax.set_yscale("log")
    _threads_axis(ax, rows)
    ax.legend(fontsize=7, ncol=2)
    return fig


def sweep(table: pd.DataFrame) -> Figure | None:
    """A thread sweep's mean latency per operation against T (Klein et al.'s figures)."""
    if table.empty:
        return None
    fig, ax = _axes("Mean latency per operation against T (thread sweep)", "T (threads)", "ms")
    for action, rows in table.groupby("action", sort=False):
        ax.plot(rows["threads"], rows["mean_ms"], marker="o", label=str(action),
                linestyle="--" if action == "all" else "-")  # fmt: skip
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.legend(fontsize=7, ncol=2)
    return fig


def progress(result: dict[str, Any]) -> Figure | None:
    """An experiment's throughput series, its warm-up cut shaded."""
    steady = result.get("steady") or {}
    series = steady.get("throughput") or []
    if not series:
        return None
    step = steady.get("interval_s") or 1.0
    t = np.arange(1, len(series) + 1) * step
    fig, ax = _axes("Throughput over the experiment", "s", "actions/s")
    ax.plot(t, series, marker="o")
    if steady.get("cut"):
        ax.axvspan(0, steady["cut"] * step, color="tab:gray", alpha=0.2, label="warm-up cut")
        ax.legend(fontsize=8)
    return fig


def _is_time(column: str) -> bool:
    return column == "seconds" or (column.endswith("_s") and "_per_" not in column)


def _is_outcome(column: str) -> bool:
    """A measured time or rate, as against a quantity the study set (a size, a share)."""
    return _is_time(column) or "_per_" in column or column.endswith(("/s", " ms"))


def study(rows: pd.DataFrame, name: str) -> list[tuple[str, Figure]]:
    """One table of a study's measurements: the mean time of the runs against each
    numeric column that varies and is not itself measured (a size, a selectivity; not the
    run number), one line per combination of its short text columns. A time is a column
    named seconds or ending in _s (total_s first); none: no figure."""
    numeric = [c for c in rows.columns if pd.api.types.is_numeric_dtype(rows[c])]
    times = [c for c in numeric if _is_time(c)]
    xs = [c for c in numeric if not _is_outcome(c) and c not in ("seq", "run")
          and rows[c].nunique() > 1]  # fmt: skip
    if not times:
        return []
    y = "total_s" if "total_s" in times else times[0]
    out = []
    for x in xs:
        data = rows.dropna(subset=[x, y])
        if data[x].nunique() > 1:
            out.append((x, _study_figure(data, name, x, y)))
    return out


def _short_labels(column: "pd.Series[Any]") -> bool:
    """A text column of a few short values: worth a line each."""
    if pd.api.types.is_numeric_dtype(column):
        return False
    return 1 < column.nunique() <= 8 and column.astype(str).str.len().max() <= 30


def _study_figure(data: pd.DataFrame, name: str, x: str, y: str) -> Figure:
    text = [c for c in data.columns if _short_labels(data[c]) and c not in ("rating_id", "name")]
    fig, ax = _axes(f"{name}: {y} against {x}", x, y)
    groups = data.groupby(text, sort=False) if text else [("", data)]
    for key, part in groups:
        means = part.groupby(x)[y].mean()
        label = " ".join(map(str, key)) if isinstance(key, tuple) else str(key)
        ax.plot(means.index, means.to_numpy(), marker="o", label=label or y)
    if data[x].min() > 0 and data[x].max() / data[x].min() >= 100:
        ax.set_xscale("log")
    ax.legend(fontsize=8)
    return fig


def campaign(jobs: pd.DataFrame, variables: list[str]) -> Figure | None:
    """SoAR of each job of a campaign with its interval as an error bar, grouped by the
    first foreach variable, one bar colour per combination of the others."""
    rated_jobs = jobs.dropna(subset=["soar"])
    if rated_jobs.empty:
        return None
    fig, ax = _axes("SoAR per job", variables[0] if variables else "job", "actions/s")
    first = variables[:1]
    rest = variables[1:]
    groups = list(dict.fromkeys(_key(r, first) for _, r in jobs.iterrows()))
    hues = list(dict.fromkeys(_key(r, rest) for _, r in jobs.iterrows()))
    width = 0.8 / max(len(hues), 1)
    for h, hue in enumerate(hues):
        part = rated_jobs[[_key(r, rest) == hue for _, r in rated_jobs.iterrows()]]
        x = np.array([groups.index(_key(r, first)) + (h - (len(hues) - 1) / 2) * width
                      for _, r in part.iterrows()])  # fmt: skip
        ax.bar(x, part["soar"], width=width, label=hue or None)
        # a job whose rating has no interval gets no bar: not a zero-width one
        known = (part["soar_low"].notna() & part["soar_high"].notna()).to_numpy()
        if known.any():
            p = part[known]
            err = [
                (p["soar"] - p["soar_low"]).clip(lower=0),
                (p["soar_high"] - p["soar"]).clip(lower=0),
            ]
            ax.errorbar(x[known], p["soar"], yerr=err, fmt="none", ecolor="black", capsize=3)
    ax.set_xticks(range(len(groups)), [g or "(all)" for g in groups])
    if any(hues):
        ax.legend(fontsize=8)
    return fig


def _key(row: "pd.Series[Any]", variables: list[str]) -> str:
    return " ".join(f"{v}={row.get('var.' + v)}" for v in variables)


def _number(value: Any) -> TypeGuard[float]:
    return isinstance(value, int | float | np.number) and not (
        isinstance(value, float) and math.isnan(value)
    )
