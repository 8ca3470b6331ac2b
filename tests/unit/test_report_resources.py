"""Resources in the results: the frames (per experiment and host, one experiment's time
series, the bottleneck of each experiment and rating), the HTML report's Resources
section and headline, compare and the campaign report. Real model-store ratings whose
experiments are given hand-built figures (tests/unit/resource_figures.py) as an
experiment's result keeps them."""

import json
import math
import sqlite3

import pandas as pd
import pytest

from bgbench import results
from bgbench.coordinator.campaign.records import job_bottleneck
from bgbench.coordinator.rating.ratings import RatingSummary
from bgbench.coordinator.reports import html_report
from bgbench.coordinator.reports.compare import compare, render
from bgbench.coordinator.storage.frames_resources import RESOURCE_COLUMNS, SERIES_COLUMNS
from bgbench.errors import UserError
from bgbench.resources.model import Bottleneck
from tests.unit.report_ratings import model_rating
from tests.unit.resource_figures import HOSTILE, client_bound, record_resources, server_bound
from tests.unit.test_report_html import figures_of


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """RS: the server's CPU binds from T=8 on (host name hostile); RC: the client binds
    every experiment; RN: no experiment measured its resources."""
    where = tmp_path_factory.mktemp("resources")
    for rid in ("RS", "RC", "RN"):
        model_rating(where, rid, "model.peak=1e4")
    record_resources(where, "RS", lambda e: server_bound(e["threads"], HOSTILE))
    record_resources(where, "RC", lambda e: client_bound(e["threads"]))
    return where


def test_one_row_per_experiment_and_host_with_its_shares(store):
    r = results.load(store)
    assert list(r.resources.columns) == list(RESOURCE_COLUMNS)
    rs = r.of_rating(r.resources, "RS")
    exps = r.of_rating(r.experiments, "RS")
    assert len(rs) == 2 * len(exps)  # the store's host and the client's, each experiment
    assert r.of_rating(r.resources, "RN").empty  # nothing measured: no rows
    db = rs[(rs["host"] == HOSTILE) & (rs["threads"] == 8)].iloc[0]
    figures = server_bound(8, HOSTILE).hosts[0]
    assert db["store_found_by"] == "port 5432" and db["store_processes"] == 23
    demand = figures.store_cpu_cores + figures.store_runqueue_cores
    assert db["store_share"] == pytest.approx(demand / 2)
    assert db["cpu_share"] == pytest.approx(figures.cpu_cores / 2)
    assert db["net_share"] == pytest.approx(5e6 / 125e6)  # the busier direction
    assert db["bottleneck_kind"] == "server_cpu" and "of 2 cores" in db["bottleneck"]
    client = rs[(rs["host"] == "client1") & (rs["threads"] == 8)].iloc[0]
    assert client["load_share"] == pytest.approx(0.7 / 4)
    assert math.isnan(client["store_share"]) and math.isnan(client["net_share"])  # unknown


def test_each_experiment_and_rating_carries_its_bottleneck(store):
    r = results.load(store)
    exps = r.of_rating(r.experiments, "RS").set_index("threads")
    assert exps.loc[[1, 2], "bottleneck_kind"].eq("none").all()
    assert exps.loc[[16, 32], "bottleneck_kind"].eq("server_cpu").all()
    assert not exps["client_bound"].any()
    assert r.of_rating(r.experiments, "RC")["client_bound"].all()
    assert r.of_rating(r.experiments, "RN")["bottleneck"].isna().all()
    rating = r.rating("RS")
    assert rating["bottleneck_kind"] == "server_cpu"  # its finals at SoAR's T bind the server
    assert r.rating("RC")["client_bound"] == True  # noqa: E712 (numpy's bool or Python's)
    assert pd.isna(r.rating("RN")["bottleneck"])


def test_an_experiments_time_series_has_every_sample_of_every_stream(store):
    r = results.load(store)
    series = r.resource_series("RS", 1)
    assert list(series.columns) == list(SERIES_COLUMNS)
    assert len(series) == 20 and series["stream"].nunique() == 2
    db = series[series["host"] == HOSTILE]
    assert db["elapsed_s"].is_monotonic_increasing
    assert (
        db["store_cpu_cores"].iloc[-1] == pytest.approx(0.9) and db["load_cpu_cores"].isna().all()
    )
    assert db["cpu_cores"].iloc[2] == pytest.approx(0.2)  # the cores' shares summed
    assert list(db["rated"]) == [False] + [True] * 7 + [False] * 2  # window 1..4 s
    assert r.resource_series("RN", 1).empty


def test_a_record_whose_resources_are_not_an_object_is_a_user_error(store, tmp_path):
    copy = tmp_path / "bgbench.sqlite"
    copy.write_bytes((store / "bgbench.sqlite").read_bytes())
    with sqlite3.connect(copy) as db:
        (text,) = db.execute("SELECT result_json FROM experiments WHERE rating_id = 'RS'"
                             " AND seq = 1").fetchone()  # fmt: skip
        result = json.loads(text)
        result["resources"] = ["not", "figures"]
        db.execute("UPDATE experiments SET result_json = ? WHERE rating_id = 'RS' AND seq = 1",
                   (json.dumps(result),))  # fmt: skip
    with pytest.raises(UserError, match="seq 1"):
        results.load(tmp_path)


@pytest.mark.slow
def test_the_report_draws_utilisation_and_the_standing_experiments_hosts(store, tmp_path):
    out = tmp_path / "rs.html"
    written = html_report.report(results.load(store), "RS", out)
    text = out.read_text()
    found = figures_of(text)
    for ident in ("utilisation", "resources-timeline"):
        assert ident in written.figures and found.paths.get(ident, 0) > 5, ident
    assert "Bottleneck: server CPU" in text  # the headline
    assert "<th>bottleneck</th>" in text  # the search path's column
    assert "port 5432" in text and "Note: node_exporter 127.0.0.1:1 did not answer" in text
    # the host's name as the network gave it is escaped wherever it shows: table and SVG
    assert "<script>" not in text and "db&lt;script&gt;alert(1)&lt;/script&gt;" in text


@pytest.mark.slow
def test_a_client_bound_rating_says_so_loudly_and_one_unmeasured_says_nothing(store, tmp_path):
    frames = results.load(store)
    html_report.report(frames, "RC", tmp_path / "rc.html")
    text = (tmp_path / "rc.html").read_text()
    assert '<p class="failed">CLIENT-BOUND: load processes at 97% of their 2 cores' in text
    written = html_report.report(frames, "RN", tmp_path / "rn.html")
    text = (tmp_path / "rn.html").read_text()
    assert "utilisation" not in written.figures and "Resources</h2>" not in text
    assert "Bottleneck" not in text


def test_compare_shows_each_ratings_bottleneck_side_by_side(store, tmp_path):
    c = compare(results.load(store), ["RS", "RC", "RN"])
    assert list(c.ratings["bottleneck_kind"][:2]) == ["server_cpu", "client"]
    from rich.console import Console

    console = Console(width=400, record=True)
    console.print(render(c))
    shown = console.export_text()
    (line,) = [x for x in shown.splitlines() if x.startswith("│ bottleneck")]
    assert "server CPU" in line and "CLIENT-BOUND: load processes" in line and "│ -" in line
    page = html_report.comparison_page(c, tmp_path / "c.html").read_text()
    assert "CLIENT-BOUND: load processes at 97%" in page and "<script>" not in page


@pytest.mark.slow
def test_the_campaign_report_shows_each_jobs_bottleneck(store, tmp_path):
    db_path = tmp_path / "bgbench.sqlite"
    db_path.write_bytes((store / "bgbench.sqlite").read_bytes())
    with sqlite3.connect(db_path) as db:
        db.execute("INSERT INTO campaigns VALUES ('C1', 'two', 't', 't', 'done', 'c.yaml', "
                   "'jobs', '0.1.0', '/', '')")  # fmt: skip
        for seq, rid in enumerate(["RS", "RC"], start=1):
            db.execute(
                "INSERT INTO campaign_jobs (campaign_id, seq, label, vars_json, settings_json, "
                "servers_json, rating_id, status, message) "
                "VALUES ('C1', ?, ?, '{}', '{}', '[]', ?, 'done', '')",
                (seq, f"job {rid}", rid),
            )
    frames = results.load(tmp_path)
    jobs = html_report.campaign_jobs(frames, "C1")
    assert list(jobs["bottleneck_kind"]) == ["server_cpu", "client"]
    html_report.report(frames, "C1", tmp_path / "c1.html")
    text = (tmp_path / "c1.html").read_text()
    jobs_table = text[text.index("<h2>Jobs</h2>") : text.index("Campaign file")]
    assert "server CPU" in jobs_table and "CLIENT-BOUND: load processes" in jobs_table


def test_secrets_in_a_samples_text_are_redacted_as_it_loads(tmp_path):
    model_rating(tmp_path, "RX", "model.peak=1e4")
    leaky = "node_exporter http://scraper:hunter2@10.0.0.5:9100"
    record_resources(tmp_path, "RX", lambda e: server_bound(e["threads"], leaky))
    r = results.load(tmp_path)
    series = r.resource_series("RX", 1)
    assert "hunter2" not in " ".join(series["host"]) and "scraper:***@" in series["host"].iloc[0]
    assert "hunter2" not in " ".join(r.resources["host"])


def test_campaign_show_names_each_done_jobs_bottleneck():
    server = Bottleneck("server_cpu", "server CPU", "db", 1.9, 2, 0.95, "server CPU 1.90 of 2")
    client = Bottleneck(kind="client", text="load processes at 97%", client_bound=True)
    summary = RatingSummary("R1", "both", "sqlite", 1.0, 2.0, soar=10.0, bottleneck=server)
    assert job_bottleneck(summary) == "server CPU 1.90 of 2"
    summary.bottleneck = client
    assert job_bottleneck(summary) == "CLIENT-BOUND: load processes at 97%"
    summary.bottleneck = None
    assert job_bottleneck(summary) == job_bottleneck(None) == "-"
