"""bgbench report's HTML, from real model-store ratings (a search, a sweep) and a run: every
expected figure inline and non-empty, nothing fetched, secrets never written, figures
beside it with --format, bad input as one-line user errors."""

import json
import re
import sqlite3
from html.parser import HTMLParser

import pytest

from bgbench import results
from bgbench.coordinator.rating import api
from bgbench.coordinator.reports import html_report
from bgbench.errors import UserError
from tests.unit.report_ratings import model_rating, model_settings

RATING_FIGURES = ["throughput", "within", "latency", "unpredictable"]


class Figures(HTMLParser):
    """The ids of <figure class="chart"> elements and how many svg paths each holds."""

    def __init__(self) -> None:
        super().__init__()
        self.paths: dict[str, int] = {}
        self.current: str | None = None
        self.external: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "figure" and "chart" in (a.get("class") or "").split():
            self.current = a["id"]
            self.paths[self.current] = 0
        elif tag in ("path", "use") and self.current is not None:
            self.paths[self.current] += 1
        for key in ("src", "href"):
            value = a.get(key) or ""
            if value.startswith(("http:", "https:", "//")):
                self.external.append(value)

    def handle_endtag(self, tag):
        if tag == "figure":
            self.current = None


def figures_of(text: str) -> Figures:
    parser = Figures()
    parser.feed(text)
    return parser


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    where = tmp_path_factory.mktemp("report")
    model_rating(where, "R1", "model.peak=1e4", "store.options.password=hunter2")
    model_rating(where, "R2", "model.peak=2e4")
    sweep = model_settings(where, "rating.objective=sweep", "rating.sweep_threads=[1,4,16]",
                           "rating.sweep_repeats=2", "sla.delta_s=1")  # fmt: skip
    sweep_id = api.rate(sweep, where).rating_id
    run = model_settings(where, "run.threadcount=8", "run.maxexecutiontime=2")
    api.run(run)
    open_loop = model_settings(where, "rating.over=rate", "run.target_rate=1000")
    api.rate(open_loop, where)
    return where, sweep_id


@pytest.mark.slow
def test_a_rating_report_holds_every_figure_inline(store, tmp_path):
    where, _ = store
    out = tmp_path / "r1.html"
    written = html_report.report(results.load(where), "R1", out)
    text = out.read_text()
    found = figures_of(text)
    assert written.figures == list(found.paths)
    for ident in RATING_FIGURES:
        assert found.paths.get(ident, 0) > 5, ident  # an svg that draws something
    assert found.external == [] and "<script" not in text  # self-contained
    rating = results.load(where).rating("R1")
    assert f"{rating['soar']:,.1f}" in text  # the headline's SoAR
    assert "Search path" in text and "alpha: % within beta" in text


@pytest.mark.slow
def test_the_search_path_lists_every_experiment_in_order(store, tmp_path):
    where, _ = store
    out = tmp_path / "r1.html"
    html_report.report(results.load(where), "R1", out)
    tables = re.findall(r"<table.*?</table>", out.read_text(), re.S)
    path = next(t for t in tables if "<th>phase</th>" in t and "<th>verdict</th>" in t)
    rows = re.findall(r"<tr>\s*<td>(\d+)</td>\s*<td>(\w+)</td>\s*<td>(\d+)</td>", path)
    with sqlite3.connect(where / "bgbench.sqlite") as db:
        recorded = db.execute(
            "SELECT seq, phase, threads FROM experiments WHERE rating_id = 'R1' ORDER BY seq"
        ).fetchall()
    assert [(int(s), p, int(t)) for s, p, t in rows] == recorded


@pytest.mark.slow
def test_secrets_are_never_written(store, tmp_path):
    where, _ = store
    out = tmp_path / "r1.html"
    html_report.report(results.load(where), "R1", out)
    text = out.read_text()
    assert "hunter2" not in text and "store.options.password" in text


@pytest.mark.slow
def test_format_writes_each_figure_beside_the_report(store, tmp_path):
    where, _ = store
    written = html_report.report(results.load(where), "R1", tmp_path / "r1.html", "svg")
    assert [p.name for p in written.files] == [f"r1-{f}.svg" for f in written.figures]
    for p in written.files:
        assert p.read_text().lstrip().startswith("<?xml") and "<svg" in p.read_text()
    png = html_report.report(results.load(where), "R1", tmp_path / "p.html", "png")
    assert all(p.read_bytes().startswith(b"\x89PNG") for p in png.files)


@pytest.mark.slow
def test_a_sweep_report_draws_latency_per_thread_count(store, tmp_path):
    where, sweep_id = store
    out = tmp_path / "sweep.html"
    html_report.report(results.load(where), sweep_id, out)
    found = figures_of(out.read_text())
    assert found.paths.get("sweep", 0) > 5
    assert "Thread sweep" in out.read_text()


@pytest.mark.slow
def test_a_rate_search_is_drawn_against_the_arrival_rate(store, tmp_path):
    where, _ = store
    frames = results.load(where)
    (rating_id,) = frames.ratings.loc[frames.ratings["over"] == "rate", "id"]
    rating = frames.rating(rating_id)
    out = tmp_path / "open.html"
    html_report.report(frames, rating_id, out)
    text = out.read_text()
    assert figures_of(text).paths.get("throughput", 0) > 5
    assert "Throughput of each experiment against the arrival rate" in text
    assert f"SoAR {rating['soar']:,.0f} at {rating['soar_rate']:,.0f} arrivals/s" in text


def test_a_run_report_shows_its_progress(store, tmp_path):
    where, _ = store
    frames = results.load(where)
    (run_id,) = frames.ratings.loc[frames.ratings["objective"] == "run", "id"]
    out = tmp_path / "run.html"
    html_report.report(frames, run_id, out)
    found = figures_of(out.read_text())
    assert found.paths.get("progress", 0) > 5
    assert "throughput" not in found.paths  # one T: nothing is drawn against T


@pytest.mark.slow
def test_a_campaign_report_compares_its_ratings(store, tmp_path):
    # The campaign tables' rows are written here by hand around two real ratings, so this
    # test needs no campaign run (tests/e2e/test_report_browser.py reports a real one).
    where, _ = store
    db_path = tmp_path / "bgbench.sqlite"
    db_path.write_bytes((where / "bgbench.sqlite").read_bytes())
    with sqlite3.connect(db_path) as db:
        db.execute(
            "INSERT INTO campaigns VALUES ('C1', 'peaks', 't', 't', 'done', 'peaks.toml', "
            "'[foreach]\npeak = [1e4, 2e4]', '0.1.0', '/', '')"
        )
        for seq, (rid, peak) in enumerate([("R1", 1e4), ("R2", 2e4)], start=1):
            db.execute(
                "INSERT INTO campaign_jobs (campaign_id, seq, label, vars_json, settings_json, "
                "servers_json, rating_id, status, message) "
                "VALUES ('C1', ?, ?, ?, '{}', '[]', ?, 'done', '')",
                (seq, f"peak={peak:g}", json.dumps({"peak": peak}), rid),
            )
    out = tmp_path / "c1.html"
    html_report.report(results.load(tmp_path), "C1", out)
    text = out.read_text()
    found = figures_of(text)
    assert found.paths.get("campaign-soar", 0) > 5
    for rid in ("R1", "R2"):  # a section per rating, its figures named apart
        assert f'id="rating-{rid}"' in text
        assert found.paths.get(f"{rid}-throughput", 0) > 5
    assert "peak=10000" in text and "[foreach]" in text
    assert "hunter2" not in text


@pytest.mark.parametrize(
    ("ident", "out", "fmt", "message"),
    [
        ("R9", "r.html", None, "no rating, run or campaign 'R9'"),
        ("R1", "missing/r.html", None, "cannot write"),
        ("R1", ".", None, "cannot write"),
        ("R1", "r.html", "gif", "use png or svg"),
    ],
)
def test_bad_input_is_a_user_error_before_any_file(store, tmp_path, ident, out, fmt, message):
    where, _ = store
    with pytest.raises(UserError, match=message):
        html_report.report(results.load(where), ident, tmp_path / out, fmt)
    assert list(tmp_path.iterdir()) == []
