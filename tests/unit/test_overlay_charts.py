"""The overlay charts' data (coordinator/reports/charts_overlay.py points): repeated
experiments averaged with their t interval, one experiment's own interval, warm-ups and
faults left out, rate-searched ratings against the rate; the curves' names from a
campaign's foreach values; the figures (one line per rating, SLA lines only when shared)
and the section a report writes (html_overlay.py)."""

import dataclasses
import math

import pandas as pd
import pytest
from scipy import stats

from bgbench import results
from bgbench.coordinator.reports import charts
from bgbench.coordinator.reports import charts_overlay as overlay
from bgbench.coordinator.reports.html_overlay import (
    campaign_curves,
    comparison_curves,
    overlay_section,
)
from bgbench.coordinator.reports.html_report import Page
from bgbench.coordinator.storage.results import ResultsStore

EXPERIMENT = {"phase": "search", "status": "passed", "target_rate": math.nan,
              "actions_per_s_low": math.nan, "actions_per_s_high": math.nan,
              "within_percent": 99.0, "p95_ms": 10.0, "unpredictable_percent": 0.0}  # fmt: skip


def experiments(*rows: dict) -> pd.DataFrame:
    return pd.DataFrame([{**EXPERIMENT, "seq": i + 1, **r} for i, r in enumerate(rows)])


def ratings(*rows: dict) -> pd.DataFrame:
    base = {"over": "threads", "confidence": 0.95, "alpha": 95.0, "beta_ms": 100.0,
            "tau": 0.1, "store": "model"}  # fmt: skip
    return pd.DataFrame([{**base, **r} for r in rows])


def point(data: pd.DataFrame, rid: str, metric: str, x: float) -> "pd.Series":
    (row,) = [r for _, r in data.iterrows() if (r["rating_id"], r["metric"], r["x"]) ==
              (rid, metric, x)]  # fmt: skip
    return row


def test_repeated_experiments_at_one_t_average_with_their_t_interval():
    exps = experiments(
        {"rating_id": "A", "threads": 4, "actions_per_s": 100.0, "within_percent": 97.0},
        {"rating_id": "A", "threads": 4, "actions_per_s": 110.0, "phase": "final",
         "within_percent": 99.0},
        {"rating_id": "A", "threads": 4, "actions_per_s": 120.0, "phase": "final",
         "within_percent": 100.0},
        {"rating_id": "A", "threads": 8, "actions_per_s": 150.0, "actions_per_s_low": 140.0,
         "actions_per_s_high": 161.0},
    )  # fmt: skip
    data = overlay.points(exps, ratings({"id": "A"}), [overlay.Curve("A", "mix=low")])
    at4 = point(data, "A", "throughput", 4)
    half = stats.t.ppf(0.975, 2) * 10.0 / math.sqrt(3)
    assert (at4["n"], at4["mean"], at4["axis"]) == (3, 110.0, "threads")
    assert at4["low"] == pytest.approx(110 - half) and at4["high"] == pytest.approx(110 + half)
    within = point(data, "A", "within", 4)  # cut to what a share can take
    assert within["mean"] == pytest.approx(98.6667, abs=1e-3) and within["high"] == 100.0
    at8 = point(data, "A", "throughput", 8)  # one experiment: its own interval
    assert (at8["n"], at8["low"], at8["high"]) == (1, 140.0, 161.0)
    assert math.isnan(point(data, "A", "p95", 8)["low"])  # and none for the others
    assert set(data["metric"]) == {"throughput", "within", "p95", "unpredictable"}
    assert set(data["label"]) == {"mix=low"}


def test_the_ratings_own_confidence_sets_the_width():
    rows = [{"rating_id": r, "threads": 2, "actions_per_s": v} for r in ("A", "B")
            for v in (10.0, 14.0, 12.0)]  # fmt: skip
    known = ratings({"id": "A", "confidence": 0.8}, {"id": "B", "confidence": None})
    data = overlay.points(experiments(*rows), known, [overlay.Curve("A", "a"),
                                                      overlay.Curve("B", "b")])  # fmt: skip
    a, b = (point(data, r, "throughput", 2) for r in ("A", "B"))
    assert a["high"] - a["low"] == pytest.approx(2 * stats.t.ppf(0.9, 2) * 2 / math.sqrt(3))
    assert b["high"] - b["low"] == pytest.approx(2 * stats.t.ppf(0.975, 2) * 2 / math.sqrt(3))


def test_warm_ups_faults_and_retried_attempts_are_left_out():
    exps = experiments(
        {"rating_id": "A", "threads": 2, "actions_per_s": 50.0},
        {"rating_id": "A", "threads": 2, "actions_per_s": 1.0, "phase": "warmup"},
        {"rating_id": "A", "threads": 2, "actions_per_s": 2.0, "phase": "retried"},
        {"rating_id": "A", "threads": 2, "actions_per_s": 3.0, "status": "fault"},
        {"rating_id": "A", "threads": 4, "actions_per_s": 90.0, "p95_ms": math.nan},
    )  # fmt: skip
    data = overlay.points(exps, ratings({"id": "A"}), [overlay.Curve("A", "a")])
    assert point(data, "A", "throughput", 2)[["n", "mean"]].tolist() == [1, 50.0]
    p95 = data[data["metric"] == "p95"]
    assert p95["x"].tolist() == [2.0]  # a T without the figure has no point
    # a rating not in the store, or without experiments, draws nothing
    assert overlay.points(exps, ratings({"id": "A"}), [overlay.Curve("Z", "z")]).empty


def test_a_rate_searched_rating_is_drawn_against_its_arrival_rate():
    exps = experiments(
        {"rating_id": "R", "threads": 16, "target_rate": 500.0, "actions_per_s": 480.0},
        {"rating_id": "R", "threads": 16, "target_rate": 1000.0, "actions_per_s": 900.0},
        {"rating_id": "T", "threads": 4, "actions_per_s": 300.0},
    )  # fmt: skip
    data = overlay.points(exps, ratings({"id": "R", "over": "rate"}, {"id": "T"}),
                          [overlay.Curve("R", "r"), overlay.Curve("T", "t")])  # fmt: skip
    assert sorted(set(data.loc[data["rating_id"] == "R", "x"])) == [500.0, 1000.0]
    assert set(data.loc[data["rating_id"] == "R", "axis"]) == {"rate"}
    assert set(data.loc[data["rating_id"] == "T", "axis"]) == {"threads"}


def test_a_campaigns_curves_are_named_and_grouped_by_its_foreach_values():
    jobs = pd.DataFrame([
        {"seq": 1, "label": "", "vars": {"ttl": 0, "store": "casql"}, "study": "",
         "rating_id": "R1"},
        {"seq": 2, "label": "", "vars": {"ttl": 5, "store": "casql"}, "study": "",
         "rating_id": "R2"},
        {"seq": 3, "label": "", "vars": {"ttl": 0, "store": "postgres"}, "study": "",
         "rating_id": "R3"},
        {"seq": 4, "label": "", "vars": {"ttl": 5, "store": "postgres"}, "study": "",
         "rating_id": "R4"},
        {"seq": 5, "label": "", "vars": {"ttl": 5, "store": "postgres"}, "study": "",
         "rating_id": "R5"},
        {"seq": 6, "label": "", "vars": {"ttl": 9, "store": "x"}, "study": "scan",
         "rating_id": "R6"},
        {"seq": 7, "label": "", "vars": {"ttl": 9, "store": "x"}, "study": "", "rating_id": None},
        {"seq": 8, "label": "a long job", "vars": {}, "study": "", "rating_id": "R8"},
    ])  # fmt: skip
    curves = campaign_curves(jobs)
    assert [c.rating_id for c in curves] == ["R1", "R2", "R3", "R4", "R5", "R8"]
    assert [c.label for c in curves] == [
        "ttl=0 store=casql", "ttl=5 store=casql", "ttl=0 store=postgres",
        "ttl=5 store=postgres (job 4)", "ttl=5 store=postgres (job 5)", "a long job",
    ]  # fmt: skip
    assert [c.colour_by for c in curves[:4]] == ["ttl=0", "ttl=5", "ttl=0", "ttl=5"]
    assert [c.style_by for c in curves[:4]] == ["store=casql"] * 2 + ["store=postgres"] * 2


def figure_lines(fig) -> list[str]:
    return [line.get_label() for line in fig.axes[0].get_lines()]


def test_a_figure_draws_one_line_per_rating_and_shared_sla_lines():
    rows = [{"rating_id": r, "threads": t, "actions_per_s": 10.0 * t, "within_percent": w}
            for r, w in (("A", 99.0), ("B", 96.0), ("C", 90.0)) for t in (1, 2, 4)]  # fmt: skip
    curves = [overlay.Curve(r, f"mix={m}", f"mix={m}") for r, m in
              (("A", "verylow"), ("B", "low"), ("C", "high"))]  # fmt: skip
    data = overlay.points(experiments(*rows), ratings(*({"id": r} for r in "ABC")), curves)
    lines = overlay.Lines(alpha=95.0, beta_ms=100.0, tau=None)
    fig = overlay.figure(data, curves, overlay.METRICS[1], "threads", lines)
    assert fig is not None
    assert figure_lines(fig) == ["mix=verylow", "mix=low", "mix=high", "alpha 95%"]
    assert "within 100 ms" in fig.axes[0].get_title(loc="left")
    colours = {line.get_color() for line in fig.axes[0].get_lines()[:3]}
    assert len(colours) == 3  # a colour per value of the first foreach variable
    fig = overlay.figure(data, curves, overlay.METRICS[3], "threads", lines)
    assert figure_lines(fig) == ["mix=verylow", "mix=low", "mix=high"]  # no shared tau
    # labels are the user's: drawn as written, not as mathematics nor hidden
    odd = [overlay.Curve("A", "cost=$x^{$"), overlay.Curve("B", "_b"), overlay.Curve("C", "c")]
    fig = overlay.figure(data, odd, overlay.METRICS[0], "threads", lines)
    assert figure_lines(fig) == [r"cost=\$x^{\$", " _b", "c"]
    assert "cost=$x^{$" in charts.svg(fig)
    assert overlay.figure(data, curves, overlay.METRICS[0], "rate", lines) is None


@pytest.fixture
def empty_store(tmp_path):
    ResultsStore(tmp_path)
    return results.load(tmp_path)


@pytest.mark.slow  # eight SVG figures drawn
def test_the_section_writes_four_figures_per_axis_named_for_assistive_technology(
    empty_store, tmp_path
):
    exps = experiments(
        {"rating_id": "A", "threads": 1, "actions_per_s": 10.0},
        {"rating_id": "A", "threads": 2, "actions_per_s": 20.0},
        {"rating_id": "B", "threads": 1, "actions_per_s": 12.0, "target_rate": 15.0},
    )  # fmt: skip
    frames = dataclasses.replace(
        empty_store, experiments=exps,
        ratings=ratings({"id": "A", "store": "sqlite"}, {"id": "B", "over": "rate"}),
    )  # fmt: skip
    page = Page(tmp_path / "c", None)
    curves = [overlay.Curve("A", "<b>x</b>=1"), overlay.Curve("B", "x=2")]
    overlay_section(frames, curves, page)
    assert page.figures == [
        *(f"overlay-{m}" for m in ("throughput", "within", "p95", "unpredictable")),
        *(f"overlay-rate-{m}" for m in ("throughput", "within", "p95", "unpredictable")),
    ]
    text = "\n".join(page.parts)
    assert text.count('<g id="overlay-throughput-curve-1">') == 1  # each curve findable
    assert text.count('<g id="overlay-rate-throughput-curve-1">') == 1
    assert "<b>x</b>" not in text and 'aria-label="Throughput against T, one curve per ' \
        'rating: &lt;b&gt;x&lt;/b&gt;=1"' in text  # fmt: skip
    assert comparison_curves(frames, ["A", "B"]) == [
        overlay.Curve("A", "sqlite A", "sqlite"), overlay.Curve("B", "model B", "model")
    ]  # fmt: skip
    nothing = Page(tmp_path / "n", None)
    overlay_section(frames, [overlay.Curve("Z", "z")], nothing)
    assert nothing.parts == [] and nothing.figures == []
