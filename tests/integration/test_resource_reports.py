"""Resources through the real CLI on SQLite: a `bgbench rate` and a `bgbench run` through
local agents record their hosts; the events file carries each agent's host and each
verdict's bottleneck; `bgbench.results.load` gives the figures and the time series;
`bgbench report` draws them and names the bottleneck; `bgbench compare` sets the two
bottlenecks side by side. Nothing here asserts a utilisation: the machine may be busy."""

import json
import re
from pathlib import Path

import pytest

from bgbench import results
from tests.helpers import bgbench

KINDS = {"server_cpu", "server_disk", "network", "client", "setup", "none"}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> tuple[Path, dict, dict, Path]:
    """(results directory, the rating's --json, the run's --json, the events file)."""
    where = tmp_path_factory.mktemp("resources")
    common = ["--store", "sqlite", "--users", "300", "--agents", "2", "--processes", "1",
              "--results", str(where / "results"), "--json",
              "-p", f"store.options.path={where / 'bg.sqlite'}",
              "-p", "agents.heartbeat_timeout=60"]  # fmt: skip
    events = where / "events.jsonl"
    search = ["--max-threads", "4", "--delta-search", "1.5", "--delta", "2"]
    proc = bgbench("rate", *common, *search, "-p", "rating.final_runs=1", "--events", str(events))
    assert proc.returncode == 0, proc.stderr[-3000:]
    rating = json.loads(proc.stdout)
    proc = bgbench("run", *common, "--threads", "2", "--duration", "3")
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = json.loads(proc.stdout)
    ratings = results.load(where / "results").ratings
    [run["rating_id"]] = ratings.loc[ratings["objective"] == "run", "id"]
    return where / "results", rating, run, events


def test_the_events_carry_each_agents_host_and_each_verdicts_bottleneck(recorded):
    _, _, _, events = recorded
    lines = [json.loads(x) for x in events.read_text().splitlines()]
    hosts = [a["host"] for e in lines if e["kind"] == "progress" for a in e["agents"] if a["host"]]
    assert hosts, "no progress tick carried an agent's host"
    assert all(h["cores"] >= 1 and h["memory_total_bytes"] > 0 for h in hosts)
    assert all(h["load_cpu_cores"] is not None for h in hosts)  # each agent's own load
    verdicts = [e for e in lines if e["kind"] == "verdict" and e["verdict"] != "fault"]
    assert verdicts and all(v["bottleneck_kind"] in KINDS and v["bottleneck"] for v in verdicts)


def test_the_frames_hold_every_experiments_hosts_and_the_ratings_bottleneck(recorded):
    where, rating, run, _ = recorded
    r = results.load(where)
    rid = rating["rating_id"]
    exps = r.of_rating(r.experiments, rid)
    measured = exps[exps["status"] != "fault"]
    assert measured["bottleneck_kind"].isin(KINDS).all()
    hosts = r.of_rating(r.resources, rid)
    assert set(hosts["seq"]) == set(measured["seq"])  # every experiment measured its host
    assert (hosts["samples"] > 0).all() and (hosts["cores"] >= 1).all()
    assert (hosts["load_processes"] == 2).all()  # two agents on one host, added up
    assert (hosts["store_found_by"] == "").all()  # SQLite: inside the load processes
    row = r.rating(rid)
    assert row["bottleneck"] == rating["bottleneck"]["text"]  # the headline's, as --json
    assert row["client_bound"] == rating["bottleneck"]["client_bound"]
    series = r.resource_series(rid, int(measured["seq"].iloc[-1]))
    assert series["stream"].nunique() == 2 and series["rated"].any()
    assert (series["cpu_cores"] >= 0).all() and series["load_cpu_cores"].notna().all()
    [run_row] = r.of_rating(r.experiments, run["rating_id"]).itertuples()
    assert run_row.bottleneck == run["resources"]["bottleneck"]["text"]


def test_the_report_draws_the_resources_and_names_the_bottleneck(recorded, tmp_path):
    where, rating, _, _ = recorded
    out = tmp_path / "rating.html"
    proc = bgbench("report", rating["rating_id"], "--results", str(where), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    figures = re.findall(r'<figure class="chart" id="([\w-]+)">', text)
    assert {"utilisation", "resources-timeline"} <= set(figures)
    said = "CLIENT-BOUND: " if rating["bottleneck"]["client_bound"] else "Bottleneck: "
    assert said + rating["bottleneck"]["text"] in text.replace("&#x27;", "'")


def test_compare_sets_the_bottlenecks_side_by_side(recorded):
    where, rating, run, _ = recorded
    proc = bgbench("compare", rating["rating_id"], run["rating_id"], "--results", str(where))
    assert proc.returncode == 0, proc.stderr
    (line,) = [x for x in proc.stdout.splitlines() if x.startswith("│ bottleneck")]
    cells = [c.strip() for c in line.strip("│").split("│")]
    assert cells[0] == "bottleneck" and all(c and c != "-" for c in cells[1:]), line
