"""Overlay charts: several ratings' throughput, share within beta, p95 and unpredictable
reads against T (or the arrival rate), one curve per rating, as the papers draw their
figures (BG's Figures 6 and 11, Klein et al.'s thread sweeps).

points() is the DataFrame the charts draw: per rating, per T and per figure, the mean of
every rated experiment the rating ran at that T (search, final, sweep and run phases; no
warm-ups, no faulted attempts) with its interval. Repeated experiments at one T give the
Student t interval of their values at the rating's confidence (0.95 when it recorded
none); one experiment gives its own steady-window interval for throughput and no interval
for the other figures. Intervals are cut to what the figure can take (never below 0, a
share never above 100).

Like charts.py: matplotlib Figures made without pyplot, None when nothing is to be drawn.
Labels come from campaign files and settings: matplotlib writes them as SVG text, escaped.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, MaxNLocator

from bgbench.coordinator.records.stats import Interval, t_half_width, within
from bgbench.coordinator.reports.charts import RATE, THREADS, rated

DEFAULT_CONFIDENCE = 0.95
MAX_CURVES = 24  # curves one chart draws at most; the rest are left out and the caption says so
COLOURS = [f"tab:{c}" for c in ("blue", "orange", "green", "red", "purple", "brown", "pink",
                                "gray", "olive", "cyan")]  # fmt: skip
LINE_STYLES = ["-", "--", ":", "-."]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]
POINT_COLUMNS = ("rating_id", "label", "axis", "x", "metric", "n", "mean", "low", "high")


@dataclass(frozen=True)
class Curve:
    """One rating's line: its label (the foreach values that made it), the value its colour
    follows (the first foreach variable's) and the one its line style follows (the rest)."""

    rating_id: str
    label: str
    colour_by: str = ""
    style_by: str = ""


@dataclass(frozen=True)
class Metric:
    column: str  # of the experiments frame
    ident: str  # the figure's id, after "overlay-"
    title: str
    unit: str
    ceiling: float  # the highest value it can take
    log_scale: bool  # drawn on a log axis when it spans a wide range


METRICS = (
    Metric("actions_per_s", "throughput", "Throughput", "actions/s", math.inf, False),
    Metric("within_percent", "within", "Share of actions within beta", "% within beta",
           100.0, False),
    Metric("p95_ms", "p95", "95th percentile response time", "p95 ms", math.inf, True),
    Metric("unpredictable_percent", "unpredictable", "Unpredictable reads",
           "% unpredictable", 100.0, False),
)  # fmt: skip
AXES = {"threads": THREADS, "rate": RATE}


def axis_of(over: Any) -> str:
    """The key in AXES a rating is drawn against: the arrival rate when it searched one."""
    return "rate" if over == "rate" else "threads"


def _interval(values: np.ndarray, confidence: float, ceiling: float) -> tuple[float, float]:
    if len(values) < 2:
        return math.nan, math.nan
    mean, half = float(values.mean()), t_half_width(values, confidence)
    cut = within(Interval(mean, mean - half, mean + half, len(values)), 0.0, ceiling)
    return cut.low, cut.high


def _curve_points(
    rows: pd.DataFrame, curve: Curve, axis: str, confidence: float
) -> list[dict[str, Any]]:
    x = AXES[axis].column
    out = []
    for metric in METRICS:
        known = rows.dropna(subset=[x, metric.column])
        for _, part in known.groupby(x, sort=True):
            values = part[metric.column].to_numpy(dtype=np.float64)
            low, high = _interval(values, confidence, metric.ceiling)
            if len(values) == 1 and metric.column == "actions_per_s":
                low = float(part["actions_per_s_low"].iloc[0])  # the experiment's own
                high = float(part["actions_per_s_high"].iloc[0])
            out.append({"rating_id": curve.rating_id, "label": curve.label, "axis": axis,
                        "x": float(part[x].iloc[0]), "metric": metric.ident, "n": len(values),
                        "mean": float(values.mean()), "low": low, "high": high})  # fmt: skip
    return out


def points(
    experiments: pd.DataFrame, ratings: pd.DataFrame, curves: Sequence[Curve]
) -> pd.DataFrame:
    """The overlay's data: one row per curve, T (or rate) and figure, with columns
    POINT_COLUMNS (n: the experiments averaged; low, high: the interval, NaN where there
    is none). `ratings` is the ratings frame (its over and confidence columns)."""
    rows: list[dict[str, Any]] = []
    known = ratings.set_index("id")
    for curve in curves:
        if curve.rating_id not in known.index:
            continue
        r = known.loc[curve.rating_id]
        recorded = r["confidence"]
        confidence = DEFAULT_CONFIDENCE
        if isinstance(recorded, float | int) and 0 < recorded < 1:
            confidence = float(recorded)
        mine = rated(experiments[experiments["rating_id"] == curve.rating_id])
        rows += _curve_points(mine, curve, axis_of(r["over"]), confidence)
    return pd.DataFrame(rows, columns=list(POINT_COLUMNS))


def shared(ratings: pd.DataFrame, ids: Sequence[str], column: str) -> float | None:
    """The value of an SLA column when every one of the ratings has the same, else None."""
    values = ratings.loc[ratings["id"].isin(list(ids)), column].dropna().unique()
    return float(values[0]) if len(values) == 1 else None


def _styles(curves: Sequence[Curve]) -> dict[str, tuple[str, str, str]]:
    """Per rating: its colour (by its first foreach value), line style and marker (by the
    others), so curves of one group share a colour."""
    colour_keys = list(dict.fromkeys(c.colour_by for c in curves))
    style_keys = list(dict.fromkeys(c.style_by for c in curves))
    out = {}
    for c in curves:
        s = style_keys.index(c.style_by)
        colour = COLOURS[colour_keys.index(c.colour_by) % len(COLOURS)]
        out[c.rating_id] = (colour, LINE_STYLES[s % len(LINE_STYLES)], MARKERS[s % len(MARKERS)])
    return out


def _x_scale(ax: Axes, xs: "pd.Series[Any]", axis: str) -> None:
    if len(xs) and xs.max() / max(xs.min(), 1) >= 16:
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))  # 16, not 16.0
    elif axis == "threads":
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def _y_scale(ax: Axes, metric: Metric, values: "pd.Series[Any]") -> None:
    positive = values[values > 0]
    if metric.log_scale and len(positive) and positive.max() / positive.min() >= 20:
        ax.set_yscale("log")
    else:
        ax.set_ylim(bottom=0)


@dataclass(frozen=True)
class Lines:
    """The SLA lines drawn across the overlay: each only when every rating shares it."""

    alpha: float | None = None
    beta_ms: float | None = None
    tau: float | None = None


def _sla_line(ax: Axes, metric: Metric, lines: Lines) -> None:
    line = {"within": ("alpha", lines.alpha, "%"), "p95": ("beta", lines.beta_ms, " ms"),
            "unpredictable": ("tau", lines.tau, "%")}.get(metric.ident)  # fmt: skip
    if line is None:
        return
    name, value, unit = line
    if value is not None:
        ax.axhline(value, color="black", linestyle="--", linewidth=0.8,
                   label=f"{name} {value:g}{unit}")  # fmt: skip


def _plain(label: str) -> str:
    """A label matplotlib draws as written: a $ would start mathematics (which may not
    parse), a leading _ would hide the entry from the legend."""
    text = label.replace("$", r"\$")
    return " " + text if text.startswith("_") else text


def curve_id(metric: Metric, axis: str, i: int) -> str:
    """The id of the i-th curve's group in a figure's SVG (unique on a page: the overlay
    is drawn once per page), so a reader or a test can find each curve."""
    suffix = "" if axis == "threads" else f"-{axis}"
    return f"overlay{suffix}-{metric.ident}-curve-{i}"


def title(metric: Metric, axis: str, lines: Lines) -> str:
    what = metric.title
    if metric.ident == "within" and lines.beta_ms is not None:
        what = f"Share of actions within {lines.beta_ms:g} ms"
    return f"{what} against {AXES[axis].short}, one curve per rating"


def figure(
    data: pd.DataFrame, curves: Sequence[Curve], metric: Metric, axis: str, lines: Lines
) -> Figure | None:
    """One figure of the overlay: each curve's means against T (or the rate) joined by a
    line, its intervals as error bars."""
    rows = data[(data["metric"] == metric.ident) & (data["axis"] == axis)]
    if rows.empty:
        return None
    x = AXES[axis]
    fig = Figure(figsize=(7.0, 4.2))
    ax = fig.add_subplot()
    ax.set_title(title(metric, axis, lines), loc="left", fontsize=11)
    ax.set_xlabel(x.label)
    ax.set_ylabel(metric.unit)
    ax.grid(True, alpha=0.3)
    drawn = [c for c in curves if c.rating_id in set(rows["rating_id"])][:MAX_CURVES]
    style = _styles(drawn)
    for i, curve in enumerate(drawn, start=1):
        mine = rows[rows["rating_id"] == curve.rating_id].sort_values("x")
        colour, dash, marker = style[curve.rating_id]
        ax.plot(mine["x"], mine["mean"], color=colour, linestyle=dash, marker=marker,
                label=_plain(curve.label), gid=curve_id(metric, axis, i))  # fmt: skip
        bars = mine.dropna(subset=["low", "high"])
        if not bars.empty:
            err = [(bars["mean"] - bars["low"]).clip(lower=0),
                   (bars["high"] - bars["mean"]).clip(lower=0)]  # fmt: skip
            ax.errorbar(bars["x"], bars["mean"], yerr=err, fmt="none", ecolor=colour,
                        alpha=0.7, capsize=3)  # fmt: skip
    _sla_line(ax, metric, lines)
    _x_scale(ax, rows["x"], axis)
    _y_scale(ax, metric, rows["mean"])
    ax.legend(fontsize=7, ncol=2 if len(drawn) > 8 else 1)
    return fig


def drawn_labels(data: pd.DataFrame, curves: Sequence[Curve], axis: str) -> list[str]:
    """The labels of the curves a figure against `axis` draws, in order (its legend)."""
    present = set(data.loc[data["axis"] == axis, "rating_id"])
    return [c.label for c in curves if c.rating_id in present][:MAX_CURVES]
