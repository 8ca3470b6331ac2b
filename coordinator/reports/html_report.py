"""`bgbench report`: one self-contained HTML file for a rating, a run, a study or a campaign.

Figures are inline SVG (coordinator/reports/charts.py), each in <figure class="chart" id=...>;
tables are the DataFrames of coordinator/storage/frames.py through DataFrame.to_html, so every
text from the store is escaped. Nothing is fetched when the page opens. Secrets were
redacted when the store recorded the settings, and again as they are loaded.
"""

import html
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from string import Template
from typing import Any

import pandas as pd
from hdrh.histogram import HdrHistogram
from matplotlib.figure import Figure

from bgbench.coordinator.reports import charts
from bgbench.coordinator.reports.compare import (
    Comparison,
    bottleneck_text,
    flatten,
    soar_text,
    socialites_text,
)
from bgbench.coordinator.reports.html_overlay import (
    campaign_curves,
    comparison_curves,
    overlay_section,
)
from bgbench.coordinator.reports.html_resources import bottleneck_line, resource_sections
from bgbench.coordinator.reports.html_scenario import campaign_scenario, scenario_sections
from bgbench.coordinator.reports.html_transactions import transaction_section
from bgbench.coordinator.reports.html_visibility import visibility_section
from bgbench.coordinator.storage.frames import ResultFrames, lag_histogram, response_histogram
from bgbench.errors import UserError

RUN_OBJECTIVE = "run"
STUDY_PREFIX = "study:"
PAGE = Template("""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<link rel="icon" href="data:,">
<title>$title</title>
<style>
body { font-family: system-ui, sans-serif; margin: 2em auto; padding: 0 1em; max-width: 1200px;
       color: #222; }
h1 { font-size: 1.5em; } h2 { border-bottom: 1px solid #ccc; margin-top: 2em; }
table.data { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0 1.5em; }
table.data th, table.data td { border: 1px solid #ddd; padding: 2px 6px; text-align: right; }
table.data th { background: #f4f4f4; }
figure.chart { display: inline-block; vertical-align: top; width: 48%; margin: 0.5em 1% 1em 0; }
figure.chart.wide { width: 98%; }
figure.chart svg { width: 100%; height: auto; } figcaption { font-size: 0.85em; color: #555; }
.headline { font-size: 1.15em; font-weight: bold; color: #14632b; }
.failed { color: #a00; } pre { background: #f6f6f6; padding: 0.5em; overflow-x: auto; }
</style></head>
<body>
<h1>$title</h1>
$body
</body></html>
""")


@dataclass
class Page:
    """A report being written: its HTML parts and its figures (also saved as files when
    a format is asked for)."""

    stem: Path  # the HTML file without its suffix: figure files are named after it
    fmt: str | None
    parts: list[str] = field(default_factory=list)
    figures: list[str] = field(default_factory=list)  # ids, in order
    files: list[Path] = field(default_factory=list)

    def heading(self, text: str, anchor: str = "", level: int = 2) -> None:
        ident = f' id="{html.escape(anchor)}"' if anchor else ""
        self.parts.append(f"<h{level}{ident}>{html.escape(text)}</h{level}>")

    def text(self, text: str, css: str = "") -> None:
        cls = f' class="{css}"' if css else ""
        self.parts.append(f"<p{cls}>{html.escape(text)}</p>")

    def pre(self, text: str) -> None:
        self.parts.append(f"<pre>{html.escape(text)}</pre>")

    def table(self, frame: pd.DataFrame) -> None:
        if frame.empty:
            self.text("(none)")
            return
        shown = frame.copy()
        for c in shown.columns:  # to_html writes <NA> and None as such, NaN as na_rep
            if not pd.api.types.is_float_dtype(shown[c]):
                shown[c] = shown[c].astype(object).where(shown[c].notna(), "")
        self.parts.append(
            shown.to_html(index=False, classes="data", border=0, na_rep="", float_format=_num)
        )

    def figure(
        self, ident: str, fig: Figure | None, caption: str, wide: bool = False, alt: str = ""
    ) -> None:
        """A figure inline; `alt`, when given, names what it shows to assistive technology
        (the svg's role img and aria-label)."""
        if fig is None:
            return
        css = "chart wide" if wide else "chart"
        drawn = charts.svg(fig)
        if alt:
            drawn = drawn.replace("<svg ", f'<svg role="img" aria-label="{html.escape(alt)}" ', 1)
        self.parts.append(
            f'<figure class="{css}" id="{html.escape(ident)}">{drawn}'
            f"<figcaption>{html.escape(caption)}</figcaption></figure>"
        )
        self.figures.append(ident)
        if self.fmt:
            path = self.stem.parent / f"{self.stem.name}-{ident}.{self.fmt}"
            _writing(path, lambda: charts.save(fig, str(path), str(self.fmt)))
            self.files.append(path)

    def html(self, title: str) -> str:
        return PAGE.substitute(title=html.escape(title), body="\n".join(self.parts))


def _writing(path: Path, write: Callable[[], object]) -> None:
    try:
        write()
    except OSError as exc:
        raise UserError(f"cannot write {path}: {exc.strerror}; choose another -o") from None


def _check_writable(out: Path) -> None:
    """Before any work: the report's directory must exist and take files."""
    where = out.absolute().parent
    if out.is_dir() or not where.is_dir() or not os.access(where, os.W_OK):
        raise UserError(f"cannot write {out}: not a writable file path; choose another -o")


def _num(v: float) -> str:
    if v == 0:
        return "0"
    if abs(v) >= 100:
        return f"{v:,.1f}"
    return f"{v:.3f}" if abs(v) < 1 else f"{v:.2f}"


# -- a rating -----------------------------------------------------------------------------

SEARCH_PATH = {
    "seq": "#", "phase": "phase", "threads": "T", "target_rate": "rate/s", "duration_s": "s",
    "status": "verdict",
    "actions_per_s": "actions/s", "actions_per_s_low": "CI low", "actions_per_s_high": "CI high",
    "within_percent": "% within beta", "unpredictable_percent": "% unpredictable",
    "p50_ms": "p50 ms", "p95_ms": "p95 ms", "p99_ms": "p99 ms", "reasons": "reasons",
    "bottleneck": "bottleneck",
}  # fmt: skip
AGENT_TABLE = {
    "seq": "#", "threads": "T", "agent": "agent", "agent_threads": "its T",
    "throughput": "actions/s", "within_percent": "% within beta", "reads": "reads",
    "unpredictable_reads": "unpredictable", "cpu_percent": "CPU %", "p50_ms": "p50 ms",
    "p95_ms": "p95 ms", "p99_ms": "p99 ms", "passed": "passed", "reasons": "reasons",
}  # fmt: skip
ACTION_TABLE = {
    "threads": "T", "action": "action", "title": "title", "count": "count", "errors": "errors",
    "within_percent": "% within beta", "mean_ms": "mean ms", "p50_ms": "p50 ms",
    "p95_ms": "p95 ms", "p99_ms": "p99 ms",
}  # fmt: skip


def _columns(frame: pd.DataFrame, names: dict[str, str]) -> pd.DataFrame:
    return frame[list(names)].rename(columns=names)


def _headline(page: Page, r: "pd.Series[Any]") -> None:
    page.text(
        f"{r['objective']} of {r['workload']} on {r['store']} ({r['store_description']}); "
        f"{r['status']}, created {r['created']}, {r['experiments']} experiments recorded"
    )
    if pd.notna(r["soar"]) and r["objective"] != RUN_OBJECTIVE:
        at = f" at T={r['soar_threads']:.0f}" if pd.notna(r["soar_threads"]) else ""
        page.text(f"SoAR {soar_text(r)} actions/s{at}", "headline")
    if pd.notna(r["socialites"]):
        page.text(f"Socialites {socialites_text(r)}", "headline")
    bound = bottleneck_line(r)
    if bound is not None:
        page.text(*bound)
    if r["message"]:
        page.text(str(r["message"]), "failed")
    for note in r["notes"]:
        page.text(str(note))


def _sla(page: Page, r: "pd.Series[Any]") -> None:
    page.heading("SLA")
    sla = pd.DataFrame(
        [("alpha: % within beta", r["alpha"]), ("beta ms", r["beta_ms"]),
         ("tau: % unpredictable", r["tau"]), ("latency scope", r["latency_scope"]),
         ("search duration s", r["search_duration_s"]),
         ("final duration s", r["final_duration_s"])],
        columns=["SLA", "value"],
    )  # fmt: skip
    page.table(sla)


def _settings(page: Page, r: "pd.Series[Any]") -> None:
    """Every recorded setting (secrets redacted), and the versions, folded away."""
    page.heading("Settings")
    page.parts.append("<details><summary>every setting, as recorded</summary>")
    flat = flatten(r["config"])
    page.table(pd.DataFrame({"setting": list(flat), "value": [str(v) for v in flat.values()]}))
    page.parts.append("</details>")
    versions = r["versions"] or {}
    if versions:
        page.table(pd.DataFrame({"component": list(versions), "version": list(versions.values())}))


def _final_or_last(experiments: pd.DataFrame) -> pd.DataFrame:
    """The experiments that stand for each T: its finals when it has any, else all."""
    rows = charts.rated(experiments)
    finals = rows[rows["phase"] == "final"]
    return finals if not finals.empty else rows


def _histograms(
    frames: ResultFrames, rating_id: str, rows: pd.DataFrame, of: Callable[..., Any]
) -> list[tuple[str, HdrHistogram]]:
    """Per T of the rows, its experiments' histograms (response or lag) merged."""
    merged: dict[int, HdrHistogram] = {}
    for _, e in rows.iterrows():
        h = of(frames.result(rating_id, int(e["seq"])))
        if h is None:
            continue
        t = int(e["threads"])
        if t in merged:
            merged[t].add(h)
        else:
            merged[t] = h
    return [(f"T={t}", merged[t]) for t in sorted(merged)]


def _x_axis(r: "pd.Series[Any]") -> charts.XAxis:
    return charts.RATE if r["over"] == "rate" else charts.THREADS


def _against_threads(exps: pd.DataFrame, r: "pd.Series[Any]", page: Page, prefix: str) -> None:
    """The figures against T (against the arrival rate for a rating that searched it)."""
    x = _x_axis(r)
    page.figure(prefix + "throughput", charts.throughput(exps, r, x),
                f"Throughput of each experiment against {x.short}; bars: its interval; star "
                "and band: SoAR and its interval.")  # fmt: skip
    page.figure(prefix + "within", charts.within(exps, r["alpha"], r["beta_ms"], x),
                f"Share of actions within beta against {x.short}; the line is alpha.")  # fmt: skip
    page.figure(prefix + "latency", charts.latency(exps, r["beta_ms"], x),
                f"p50, p95 and p99 response time against {x.short} (merged HDR "
                "histograms).")  # fmt: skip
    page.figure(prefix + "unpredictable", charts.unpredictable(exps, r["tau"], x),
                f"Unpredictable reads against {x.short}; the line is tau.")  # fmt: skip


def rating_sections(frames: ResultFrames, rating_id: str, page: Page, prefix: str = "") -> None:
    """Everything about one rating (a search, a sweep, a study or a run)."""
    r = frames.rating(rating_id)
    exps = frames.of_rating(frames.experiments, rating_id)
    _headline(page, r)
    if str(r["objective"]).startswith(STUDY_PREFIX):
        _study(frames, rating_id, page, prefix)
        _settings(page, r)
        return
    _sla(page, r)
    page.heading("Figures")
    if r["objective"] != RUN_OBJECTIVE:  # one T: nothing to draw against T
        _against_threads(exps, r, page, prefix)
    standing = _final_or_last(exps)
    lags = _histograms(frames, rating_id, charts.rated(exps), lag_histogram)
    if lags:
        page.figure(prefix + "staleness", charts.histograms(lags, "Staleness lag", True),
                    "How stale the unpredictable reads were, per T.")  # fmt: skip
    responses = _histograms(frames, rating_id, standing, response_histogram)
    if responses:
        page.figure(prefix + "latency-histogram",
                    charts.histograms(responses, "Response time distribution", True),
                    "Response times from the stored HDR histograms, per T (finals where "
                    "the rating ran them).")  # fmt: skip
    if r["objective"] == RUN_OBJECTIVE and not exps.empty:
        last = frames.result(rating_id, int(exps["seq"].iloc[-1]))
        page.figure(prefix + "progress", charts.progress(last), "Throughput over the run.")
    visibility_section(frames, rating_id, standing, page, prefix)
    page.heading("Search path" if r["objective"] != RUN_OBJECTIVE else "Experiment")
    page.text("Every experiment, in the order it ran: phase, T, verdict and its reasons.")
    # a closed-loop rating has no arrival rate; a classic search no intervals
    page.table(_columns(exps, SEARCH_PATH).dropna(axis=1, how="all"))
    scenario_sections(frames, rating_id, page, prefix, r["beta_ms"])
    _breakdowns(frames, rating_id, exps, page, prefix)
    resource_sections(frames, rating_id, page, prefix, _x_axis(r))
    sweep = frames.of_rating(frames.sweep, rating_id)
    if not sweep.empty:
        page.heading("Thread sweep")
        page.figure(prefix + "sweep", charts.sweep(sweep),
                    "Mean latency of each operation per thread count, averaged over the "
                    "repeats.")  # fmt: skip
        page.table(sweep.drop(columns=["rating_id"]))
    _settings(page, r)


def _breakdowns(
    frames: ResultFrames, rating_id: str, exps: pd.DataFrame, page: Page, prefix: str
) -> None:
    """Per agent and per action: drawn against T over every rated experiment, tabled for
    the experiments that stand for each T (its finals where it has any)."""
    every = set(charts.rated(exps)["seq"])
    standing = set(_final_or_last(exps)["seq"])
    agents = frames.of_rating(frames.per_agent, rating_id)
    actions = frames.of_rating(frames.per_action, rating_id)
    valid = frames.of_rating(frames.validation, rating_id)
    several = charts.rated(exps)["threads"].nunique() > 1  # else the tables say it all
    page.heading("Per agent")
    if several:
        page.figure(prefix + "agents", charts.per_agent(agents[agents["seq"].isin(every)]),
                    "Throughput of each agent per T (mean of its experiments).")  # fmt: skip
    page.table(_columns(agents[agents["seq"].isin(standing)], AGENT_TABLE))
    page.heading("Per action")
    if several:
        page.figure(prefix + "actions", charts.per_action(actions[actions["seq"].isin(every)]),
                    "95th percentile response time of each action per T.")  # fmt: skip
    actions = actions[actions["seq"].isin(standing)]
    if not actions.empty:
        pooled = actions.groupby(["threads", "action", "title"], sort=False, as_index=False).agg(
            count=("count", "sum"), errors=("errors", "sum"),
            within_percent=("within_percent", "mean"), mean_ms=("mean_ms", "mean"),
            p50_ms=("p50_ms", "mean"), p95_ms=("p95_ms", "mean"), p99_ms=("p99_ms", "mean"),
        )  # fmt: skip
        page.text("Counts summed, percentiles averaged over the experiments at each T.")
        page.table(_columns(pooled, ACTION_TABLE))
    else:
        page.table(actions)
    transaction_section(actions, page, prefix)
    page.heading("Validation")
    valid = valid[valid["seq"].isin(standing)]
    if not valid.empty:
        valid = valid.groupby(["threads", "kind", "name"], sort=False, as_index=False)[
            ["reads", "unpredictable"]
        ].sum()
    page.table(valid)


def _study(frames: ResultFrames, rating_id: str, page: Page, prefix: str) -> None:
    rows = frames.of_rating(frames.measurements, rating_id)
    page.heading("Measurements")
    for name, part in rows.groupby("name", sort=False):
        part = part.dropna(axis=1, how="all")
        page.heading(str(name), level=3)
        for i, (x, fig) in enumerate(charts.study(part, str(name))):
            ident = f"{prefix}study-{name}" + (f"-{i + 1}" if i else "")
            page.figure(ident, fig, f"The study's {name} measurements against {x}, mean of "
                        "the runs.")  # fmt: skip
        page.table(part.drop(columns=["rating_id"]))


# -- a campaign ----------------------------------------------------------------------------

JOB_TABLE = {
    "seq": "#", "label": "job", "status": "status", "rating_id": "rating", "soar": "SoAR",
    "soar_low": "CI low", "soar_high": "CI high", "soar_threads": "at T",
    "socialites": "Socialites", "bottleneck": "bottleneck", "message": "message",
}  # fmt: skip


def campaign_jobs(frames: ResultFrames, campaign_id: str) -> pd.DataFrame:
    """A campaign's jobs with their ratings' outcome (SoAR, its interval, Socialites, the
    bottleneck)."""
    jobs = frames.campaign_jobs[frames.campaign_jobs["campaign_id"] == campaign_id]
    outcome = frames.ratings[["id", "soar", "soar_low", "soar_high", "soar_threads",
                              "socialites", "bottleneck_kind", "bottleneck",
                              "client_bound"]].rename(columns={"id": "rating_id"})  # fmt: skip
    return jobs.merge(outcome, on="rating_id", how="left").reset_index(drop=True)


def campaign_sections(frames: ResultFrames, campaign_id: str, page: Page) -> None:
    c = frames.campaigns[frames.campaigns["id"] == campaign_id].iloc[0]
    jobs = campaign_jobs(frames, campaign_id)
    variables = list(dict.fromkeys(k for v in jobs["vars"] for k in v))
    page.text(f"{c['status']}; file {c['file']}; bgbench {c['version']}; created {c['created']}")
    if c["message"]:
        page.text(str(c["message"]), "failed")
    page.heading("Ratings compared")
    chart = charts.campaign(jobs, variables)
    page.figure("campaign-soar", chart, "SoAR of each job, grouped by the foreach values; "
                "error bars its interval, where the rating has one.")  # fmt: skip
    overlay_section(frames, campaign_curves(jobs), page)
    page.heading("Jobs")
    bound = [bottleneck_text(j) for _, j in jobs.iterrows()]
    page.table(_columns(jobs.assign(bottleneck=bound), JOB_TABLE))
    campaign_scenario(frames, jobs, page)
    page.heading("Campaign file", level=3)
    page.pre(str(c["file_text"]))
    for _, job in jobs.iterrows():
        rid = job["rating_id"]
        if not isinstance(rid, str) or rid not in set(frames.ratings["id"]):
            continue
        page.heading(f"Job {job['seq']}: {job['label']} (rating {rid})", anchor=f"rating-{rid}")
        rating_sections(frames, rid, page, prefix=f"{rid}-")


# -- the command's work --------------------------------------------------------------------


@dataclass(frozen=True)
class Written:
    html: Path
    figures: list[str]  # the ids of the figures in it
    files: list[Path]  # figures written beside it (--format)


def report(frames: ResultFrames, ident: str, out: Path, fmt: str | None = None) -> Written:
    """Write the report of a rating, run, study or campaign id to `out`."""
    if fmt not in (None, "png", "svg"):
        raise UserError(f"--format {fmt}: use png or svg")
    _check_writable(out)
    page = Page(out.with_suffix(""), fmt)
    if ident in set(frames.campaigns["id"]):
        name = frames.campaigns.loc[frames.campaigns["id"] == ident, "name"].iloc[0]
        title = f"Campaign {ident}: {name}"
        campaign_sections(frames, ident, page)
    elif ident in set(frames.ratings["id"]):
        r = frames.rating(ident)
        kind = "Run" if r["objective"] == RUN_OBJECTIVE else "Rating"
        title = f"{kind} {ident} of {r['store']}"
        rating_sections(frames, ident, page)
    else:
        raise UserError(
            f"no rating, run or campaign {ident!r} in {frames.path}: see `bgbench results`"
        )
    _writing(out, lambda: out.write_text(page.html(title), encoding="utf-8"))
    return Written(out, page.figures, page.files)


def comparison_page(c: Comparison, out: Path, frames: ResultFrames | None = None) -> Path:
    """A comparison (coordinator/reports/compare.py) as HTML; with the results store's
    frames, its ratings overlaid against T as well."""
    page = Page(out.with_suffix(""), None)
    shown = c.ratings.assign(
        soar_ci=[soar_text(r) for _, r in c.ratings.iterrows()],
        socialites_range=[socialites_text(r) for _, r in c.ratings.iterrows()],
        bound_by=[bottleneck_text(r) for _, r in c.ratings.iterrows()],
    )
    page.heading("Ratings")
    page.table(shown[["id", "store", "store_description", "objective", "soar_ci",
                      "soar_threads", "socialites_range", "bound_by", "created"]])  # fmt: skip
    page.heading("SoAR, pair by pair")
    page.table(c.pairs)
    page.heading("Settings that differ")
    page.table(c.settings.astype(str))
    if frames is not None:
        overlay_section(frames, comparison_curves(frames, list(c.ratings["id"])), page)
    ids = ", ".join(map(str, c.ratings["id"]))
    _writing(out, lambda: out.write_text(page.html(f"Comparison of {ids}"), encoding="utf-8"))
    return out
