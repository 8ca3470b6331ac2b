"""Overlay charts through the CLI: a real campaign of three tiny ratings (the model store,
one per mix) whose `bgbench report` carries throughput, share within beta, p95 and
unpredictable reads against T with one curve per rating named by its foreach values, and
`bgbench compare -o` of the same three ratings with the same four charts."""

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.helpers import bgbench

CAMPAIGN = """
campaign: overlay
templates:
  tiny:
    sla: {delta_search_s: 1, delta_s: 1}
    rating: {objective: soar, max_threads: 4, final_runs: 2, repeats: 1}
    store: {name: model}
    model: {noise: 0.05}
jobs:
  - extends: tiny
    foreach: {mix: [verylow, low, high]}
    params: {mix: "${mix}", usercount: 400}
"""
OVERLAY = ["overlay-throughput", "overlay-within", "overlay-p95", "overlay-unpredictable"]
LABELS = ["mix=verylow", "mix=low", "mix=high"]


class Charts(HTMLParser):
    """Per <figure class="chart">: its svg's aria-label and the texts drawn in it."""

    def __init__(self) -> None:
        super().__init__()
        self.alt: dict[str, str] = {}
        self.texts: dict[str, list[str]] = {}
        self.current: str | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "figure" and "chart" in (a.get("class") or "").split():
            self.current = a["id"] or ""
            self.texts[self.current] = []
        elif tag == "svg" and self.current is not None:
            self.alt[self.current] = a.get("aria-label") or ""

    def handle_data(self, data):
        if self.current is not None and data.strip():
            self.texts[self.current].append(data.strip())

    def handle_endtag(self, tag):
        if tag == "figure":
            self.current = None


def charts_of(page: Path) -> Charts:
    parser = Charts()
    parser.feed(page.read_text())
    return parser


@pytest.fixture(scope="module")
def campaign(tmp_path_factory) -> tuple[Path, dict]:
    where = tmp_path_factory.mktemp("overlay")
    spec = where / "overlay.yaml"
    spec.write_text(CAMPAIGN)
    proc = bgbench("campaign", "run", str(spec), "--results", str(where / "results"), "--json",
                   timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    outcome = json.loads(proc.stdout)
    assert [j["status"] for j in outcome["jobs"]] == ["done"] * 3, outcome
    return where / "results", outcome


def assert_one_curve_per_rating(page: Path) -> None:
    charts = charts_of(page)
    text = page.read_text()
    for ident in OVERLAY:
        curves = re.findall(rf'<g id="{ident}-curve-(\d+)">', text)
        assert curves == ["1", "2", "3"], (ident, curves)
        assert ident in charts.alt, sorted(charts.alt)
        alt = charts.alt[ident]
        assert alt.endswith("one curve per rating: " + "; ".join(LABELS)), alt
        legend = [t for t in charts.texts[ident] if t.startswith("mix=")]
        assert legend == LABELS, (ident, charts.texts[ident])  # each rating once, by its values
    assert "T (threads)" in charts.texts["overlay-throughput"]
    assert "alpha 95%" in charts.texts["overlay-within"]
    assert "beta 100 ms" in charts.texts["overlay-p95"]


def test_a_campaign_report_overlays_its_ratings_against_t(campaign, tmp_path):
    results, outcome = campaign
    page = tmp_path / "campaign.html"
    proc = bgbench("report", outcome["campaign_id"], "--results", str(results), "-o", str(page))
    assert proc.returncode == 0, proc.stderr
    assert_one_curve_per_rating(page)
    charts = charts_of(page)
    text = page.read_text()
    # the overlay comes with the comparison, before the jobs and each rating's own section
    assert text.index("Ratings overlaid") < text.index("<h2>Jobs</h2>")
    assert [i for i in charts.alt if i.startswith("overlay-")] == OVERLAY


def test_compare_overlays_the_ratings_it_compares(campaign, tmp_path):
    results, outcome = campaign
    ids = [j["rating_id"] for j in outcome["jobs"]]
    page = tmp_path / "compare.html"
    proc = bgbench("compare", *ids, "--results", str(results), "-o", str(page))
    assert proc.returncode == 0, proc.stderr
    assert_one_curve_per_rating(page)
    assert re.search(r'<figure class="chart" id="overlay-throughput">', page.read_text())
