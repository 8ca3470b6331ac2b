"""Resources beyond the agents' own hosts, and in reports (issue 26), end to end: a store
host watched through a real Prometheus node_exporter on loopback, a rating's HTML report
with its utilisation figures, a campaign whose report names each job's bottleneck (one
job on a PostgreSQL the campaign starts, found with no settings)."""

import html
import json
import re
import sys
from pathlib import Path

import psutil
import pytest

from bgbench import results
from tests.helpers import bgbench


def test_a_node_exporter_on_loopback_reports_the_store_hosts_cpu_and_disk(
    tmp_path, node_exporter_server
):
    endpoint = node_exporter_server["endpoint"]
    proc = bgbench(
        "run", "--store", "sqlite", "--threads", "4", "--duration", "2", "--agents", "1",
        "--users", "300", "--results", str(tmp_path / "results"), "--json",
        "-p", f"store.options.path={tmp_path / 'bg.sqlite'}",
        "-p", f'resources.node_exporters=["{endpoint}"]',
        "-p", "agents.heartbeat_timeout=60",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout)["resources"]
    # a scrape slower than its timeout on a busy machine is noted, naming the endpoint
    assert all(endpoint in note for note in res["notes"]), res["notes"]
    (scraped,) = [h for h in res["hosts"] if h["source"] == "node_exporter"]
    (agent,) = [h for h in res["hosts"] if h["source"] == "agent"]
    assert scraped["host"] == endpoint and scraped["samples"] >= 2, scraped
    # This machine seen from outside: its cores, busy while the load ran, and its memory.
    assert scraped["cores"] == psutil.cpu_count() == len(scraped["cpu_per_core"]), scraped
    assert scraped["cpu_cores"] > 0 and all(0 <= c <= 1 for c in scraped["cpu_per_core"])
    assert scraped["memory_total_bytes"] == psutil.virtual_memory().total, scraped
    assert 0 < scraped["memory_used_bytes"] < scraped["memory_total_bytes"]
    # Its disks: the busiest named (a real block device here), its share and bytes.
    assert Path("/sys/block", scraped["busiest_disk"]).exists(), scraped
    assert 0 <= scraped["disk_busy"] <= 1, scraped
    assert scraped["disk_read_bytes_per_s"] >= 0 and scraped["disk_write_bytes_per_s"] >= 0
    assert scraped["load_processes"] == 0 and not scraped["store_found_by"]  # no processes
    assert agent["cores"] == scraped["cores"]
    samples = res["series"][f"node_exporter {endpoint}"]
    assert len(samples) >= scraped["samples"] and all(
        s["source"] == "node_exporter" for s in samples
    )
    # A host watched for the store: its CPU is a candidate, on the server's side.
    bound = res["bottleneck"]
    named = [bound["text"], *bound["others"]]
    if scraped["cpu_cores"] >= 0.9 * scraped["cores"]:
        assert any(endpoint in t for t in named), bound
    frames = results.load(tmp_path / "results")
    rows = frames.resources[frames.resources["source"] == "node_exporter"]
    assert list(rows["host"]) == [endpoint] and rows["cpu_cores"].iloc[0] > 0


def test_a_rating_report_shows_the_utilisation_figures(sqlite_rating, tmp_path):
    where, rating_id = sqlite_rating
    page = tmp_path / "rating.html"
    proc = bgbench("report", rating_id, "--results", str(where), "-o", str(page))
    assert proc.returncode == 0, proc.stderr
    text = page.read_text()
    for figure in ("utilisation", "resources-timeline"):  # against T; the final's series
        match = re.search(rf'<figure class="chart" id="{figure}">(.*?)</figure>', text, re.S)
        assert match and "<svg" in match.group(1), figure
    assert "<h2>Resources</h2>" in text
    frames = results.load(where)
    rating = frames.rating(rating_id)
    # "setup": the other test worker's servers (a Cassandra cluster) took the host's cores,
    # which the rating rightly names rather than blaming the store or the client
    kinds = ("server_cpu", "client", "none", "setup")
    assert rating["bottleneck_kind"] in kinds, rating["bottleneck"]
    assert html.escape(rating["bottleneck"], quote=False) in text  # the headline's line
    exps = frames.of_rating(frames.experiments, rating_id)
    assert exps["bottleneck"].notna().all()
    # sla.client_bound = "warn" (the default): a client-bound experiment is said, not failed
    assert not exps["reasons"].fillna("").str.contains("client-bound").any()
    for line in exps["bottleneck"]:  # each experiment's, in the Resources table
        assert html.escape(line, quote=False) in text, line
    hosts = frames.of_rating(frames.resources, rating_id)
    assert (hosts["samples"] > 0).all() and (hosts["load_cpu_cores"] > 0).all()


CAMPAIGN = """
campaign: bottlenecks
templates:
  postgres:
    server: {{kind: postgres}}
    store: {{name: postgres}}
  sqlite:
    store: {{name: sqlite, options: {{path: "{data}/bg.sqlite"}}}}
jobs:
  - extends: ${{store}}
    foreach: {{store: [sqlite, postgres]}}
    sla: {{delta_search_s: 1, delta_s: 1}}
    rating: {{objective: soar, max_threads: 1, final_runs: 1, repeats: 1}}
    agents: {{local: 1, processes: 1}}
    params: {{usercount: 200}}
"""


@pytest.fixture
def stops_servers(tmp_path):
    """Whatever happens, the servers a campaign under tmp_path started are stopped."""
    yield
    sys.path.insert(0, str(Path(__file__).parents[2] / "deploy" / "local"))
    from servers import stop  # type: ignore[import-not-found]

    for state in tmp_path.glob("**/servers/*/server.json"):
        stop(state.parent)


def test_a_campaign_report_shows_each_jobs_bottleneck(tmp_path, stops_servers):
    spec = tmp_path / "campaign.yaml"
    spec.write_text(CAMPAIGN.format(data=tmp_path))
    where = tmp_path / "results"
    proc = bgbench("campaign", "run", str(spec), "--results", str(where), "--json", timeout=600)
    assert proc.returncode == 0, proc.stderr
    outcome = json.loads(proc.stdout)
    jobs = {j["vars"]["store"]: j for j in outcome["jobs"]}
    assert [j["status"] for j in jobs.values()] == ["done", "done"], outcome
    frames = results.load(where)
    # The PostgreSQL the campaign started was watched with no settings: found by its port.
    (server,) = jobs["postgres"]["servers"]
    pg = frames.of_rating(frames.resources, jobs["postgres"]["rating_id"])
    assert (pg["store_found_by"] == f"port {server['port']}").any(), pg["store_found_by"]
    assert pg.loc[pg["store_found_by"] != "", "store_processes"].min() >= 2
    sq = frames.of_rating(frames.resources, jobs["sqlite"]["rating_id"])
    assert (sq["store_found_by"] == "").all()  # embedded: no process of its own

    page = tmp_path / "campaign.html"
    proc = bgbench("report", outcome["campaign_id"], "--results", str(where), "-o", str(page))
    assert proc.returncode == 0, proc.stderr
    text = page.read_text()
    table = re.search(r"<table.*?</table>", text, re.S)  # the jobs' table comes first
    assert table and ">bottleneck<" in table.group(0), table
    for job in jobs.values():
        rating = frames.rating(job["rating_id"])
        assert rating["bottleneck_kind"] not in ("unmeasured", None), rating["bottleneck"]
        bound = job["summary"]["bottleneck"]  # the rating's --json, as the campaign keeps it
        assert (bound["kind"], bound["text"]) == (rating["bottleneck_kind"], rating["bottleneck"])
        assert bound["client_bound"] == bool(rating["client_bound"])
        # the job's row names its bottleneck (a client-bound one said loudly)
        row = re.search(rf"<tr>(?:(?!</tr>).)*{job['rating_id']}.*?</tr>", table.group(0), re.S)
        assert row and html.escape(rating["bottleneck"], quote=False) in row.group(0), job["label"]
        assert ("CLIENT-BOUND" in row.group(0)) == bool(rating["client_bound"]), row.group(0)
