"""The overlay section of a campaign's report and of `bgbench compare -o`: throughput,
share within beta, p95 and unpredictable reads against T (or the arrival rate), one curve
per rating (coordinator/reports/charts_overlay.py).

A campaign's curves are named by their jobs' foreach values, coloured by the first
variable's value and styled by the others'; a compared rating that ran in a campaign is
named the same way, any other by its store and id. Labels reach the page through
Page.figure (matplotlib's SVG text and an escaped aria-label).
"""

from collections.abc import Sequence
from typing import Any, Protocol

import pandas as pd
from matplotlib.figure import Figure

from bgbench.coordinator.reports import charts_overlay as overlay
from bgbench.coordinator.storage.frames import ResultFrames

MAX_LABEL = 60  # characters of a legend entry; campaign files are the user's, not bounded


class Page(Protocol):
    """What this section writes to (html_report.Page)."""

    def heading(self, text: str, anchor: str = "", level: int = 2) -> None: ...
    def text(self, text: str, css: str = "") -> None: ...
    def figure(
        self, ident: str, fig: Figure | None, caption: str, wide: bool = False, alt: str = ""
    ) -> None: ...


def _short(text: str) -> str:
    return text if len(text) <= MAX_LABEL else text[: MAX_LABEL - 3] + "..."


def _values(variables: dict[str, Any], names: Sequence[str]) -> str:
    return " ".join(f"{k}={variables[k]}" for k in names if k in variables)


def campaign_curves(jobs: pd.DataFrame) -> list[overlay.Curve]:
    """One curve per job that rated (studies and jobs without a rating have none), named
    by its foreach values; jobs with the same values are told apart by their number."""
    names = list(dict.fromkeys(k for v in jobs["vars"] for k in v))
    curves, seqs = [], []
    for _, job in jobs.iterrows():
        rid = job["rating_id"]
        if not isinstance(rid, str) or not rid or job["study"]:
            continue
        variables = job["vars"] if isinstance(job["vars"], dict) else {}
        label = _values(variables, names) or str(job["label"]) or f"job {job['seq']}"
        curves.append(overlay.Curve(rid, _short(label), _values(variables, names[:1]),
                                    _values(variables, names[1:])))  # fmt: skip
        seqs.append(str(job["seq"]))
    return _distinct(curves, seqs)


def _distinct(curves: list[overlay.Curve], seqs: Sequence[str]) -> list[overlay.Curve]:
    labels = [c.label for c in curves]
    out = []
    for curve, seq in zip(curves, seqs, strict=True):
        if labels.count(curve.label) > 1:
            curve = overlay.Curve(curve.rating_id, f"{curve.label} (job {seq})",
                                  curve.colour_by, curve.style_by)  # fmt: skip
        out.append(curve)
    return out


def comparison_curves(frames: ResultFrames, ids: Sequence[str]) -> list[overlay.Curve]:
    """One curve per compared rating: its campaign job's foreach values when it ran in
    one, else its store and id."""
    jobs = frames.campaign_jobs
    curves = []
    for rid in ids:
        mine = jobs[jobs["rating_id"] == rid]
        variables = mine["vars"].iloc[0] if len(mine) else {}
        if isinstance(variables, dict) and variables:
            names = list(variables)
            curves.append(overlay.Curve(rid, _short(_values(variables, names)),
                                        _values(variables, names[:1]),
                                        _values(variables, names[1:])))  # fmt: skip
        else:
            store = frames.rating(rid)["store"]
            curves.append(overlay.Curve(rid, _short(f"{store} {rid}"), str(store)))
    if len({c.label for c in curves}) < len(curves):  # the same values in two campaigns
        curves = [overlay.Curve(c.rating_id, _short(f"{c.label} {c.rating_id}"), c.colour_by,
                                c.style_by) for c in curves]  # fmt: skip
    return curves


CAPTIONS = {
    "throughput": "Throughput of each rating",
    "within": "Share of actions within beta of each rating",
    "p95": "95th percentile response time of each rating",
    "unpredictable": "Share of unpredictable reads of each rating",
}


def overlay_section(frames: ResultFrames, curves: Sequence[overlay.Curve], page: Page) -> None:
    """The four overlay figures (per axis: against T, and against the arrival rate for
    ratings that searched it); nothing when no rating has a rated experiment."""
    data = overlay.points(frames.experiments, frames.ratings, curves)
    if data.empty:
        return
    ids = [c.rating_id for c in curves]
    lines = overlay.Lines(*(overlay.shared(frames.ratings, ids, c)
                            for c in ("alpha", "beta_ms", "tau")))  # fmt: skip
    page.heading("Ratings overlaid")
    for axis in dict.fromkeys(data["axis"]):
        labels = overlay.drawn_labels(data, curves, axis)
        left_out = sum(c.rating_id in set(data["rating_id"]) for c in curves) - len(labels)
        suffix = "" if axis == "threads" else f"-{axis}"
        for metric in overlay.METRICS:
            fig = overlay.figure(data, curves, metric, axis, lines)
            caption = (f"{CAPTIONS[metric.ident]} against {overlay.AXES[axis].short}: the "
                       "mean of its experiments at each point; bars: the t interval of "
                       "repeated experiments (a single experiment's own interval for "
                       "throughput).")  # fmt: skip
            if left_out > 0:
                caption += f" {left_out} more ratings left out."
            alt = f"{overlay.title(metric, axis, lines)}: {'; '.join(labels)}"
            page.figure(f"overlay{suffix}-{metric.ident}", fig, caption, alt=alt)
