"""The bottleneck named end to end (issue 26): real servers, the real CLI, one short
experiment each (`bgbench run`), asserted through `--json`, the results store
(`bgbench.results.load`) and the CLI's own lines.

The loads were chosen by measurement on a 2-core machine shared with other test suites
(load average 6 to 8), with and without `stress-ng --cpu 2` beside it: a PostgreSQL
confined to one core had a demand (CPU + run-queue wait) of 3.6 cores at T=8 and 5.2-5.9
at T=16 over 4 load processes beside stress-ng, against 0.6-0.9 of a core for the busiest
load process, so "server CPU" wins by 3 times or more whatever else runs; SQLite at T=64
kept its busiest load process at 4-6.6 cores of demand (5.0 beside stress-ng), so the
client is named. Demand, not CPU used alone: a busy host gives the store less CPU than it
asks for (0.3-0.6 of its core here), but its threads then wait for a core, and an idle
host gives it the whole core."""

import json
import re
from pathlib import Path

import psutil

from bgbench import results
from tests.conftest import fresh_database
from tests.helpers import bgbench

FIGURE = re.compile(r"\d+\.\d\d of \d+ cores?|\d+% of (its core|their \d+ cores?)")


def run(tmp: Path, store: str, threads: int, duration: float, *params: str) -> dict:
    """`bgbench run --json` of one experiment through one local agent; its result."""
    proc = bgbench(
        "run", "--store", store, "--threads", str(threads), "--duration", str(duration),
        "--agents", "1", "--users", "500", "--results", str(tmp / "results"), "--json",
        "-p", "agents.heartbeat_timeout=60",  # a busy machine may load slowly
        *params,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    result["_stderr"] = proc.stderr
    return result


def store_host(resources: dict) -> dict:
    """The one host whose figures watch the store's processes."""
    (host,) = [h for h in resources["hosts"] if h["store_found_by"]]
    return host


def stored(tmp: Path, experiment_id: str) -> tuple[dict, list[dict]]:
    """The experiment's row and its hosts' rows as `bgbench.results.load` gives them."""
    frames = results.load(tmp / "results")
    (row,) = frames.experiments[frames.experiments["rating_id"] == experiment_id].to_dict("records")
    hosts = frames.resources[frames.resources["rating_id"] == experiment_id].to_dict("records")
    return row, hosts


def test_postgres_on_loopback_names_the_server_cpu_or_the_client_with_figures(
    tmp_path, postgres_server
):
    port = postgres_server["port"]
    r = run(
        tmp_path, "postgres", 8, 4, "--processes", "2",
        "-p", f"store.options.dsn={fresh_database(postgres_server)}",
    )  # fmt: skip
    res = r["resources"]
    bound = res["bottleneck"]
    # Loopback, both on 2 cores: either side may give out first, nothing else can.
    assert bound["kind"] in ("server_cpu", "client"), bound
    assert bound["utilisation"] >= 0.9 and FIGURE.search(bound["text"]), bound
    assert bound["client_bound"] == (bound["kind"] == "client")
    host = store_host(res)
    # Discovered without settings: the server the load processes are connected to.
    assert f"port {port}" in host["store_found_by"], host
    # The postmaster, its helpers and a backend per socialite, summed.
    assert host["store_processes"] >= 8 + 1, host
    assert host["store_cpu_cores"] > 0 and host["store_rss_bytes"] > 0, host
    assert host["store_busiest_cores"] <= host["store_cpu_cores"] + host["store_runqueue_cores"]
    assert host["cores"] == len(host["cpu_per_core"]) == psutil.cpu_count(), host
    assert 0 < host["store_cores_allowed"] <= host["cores"], host  # a CI cgroup may cap it
    assert host["load_processes"] == 2 and host["load_cpu_cores"] > 0, host
    assert host["samples"] >= 4, host  # every 0.5 s over 4 s
    # The time series: every sample of the agent's stream, the store seen in some.
    (samples,) = res["series"].values()
    assert any(s["store"] and f"port {port}" in s["store"]["found_by"] for s in samples)
    # The same in the results store.
    row, hosts = stored(tmp_path, r["experiment_id"])
    assert row["bottleneck_kind"] == bound["kind"] and row["bottleneck"] == bound["text"]
    assert [h["store_found_by"] for h in hosts if h["store_found_by"]] == [host["store_found_by"]]


def test_postgres_confined_to_one_core_names_the_server_cpu_at_about_one_core(
    tmp_path, postgres_one_core
):
    # 16 socialites over 4 load processes: the server's backends queue for their one core,
    # the client's work is spread (measured: demand 3.6-5.9 cores against 0.6-0.9).
    port = postgres_one_core["port"]
    r = run(
        tmp_path, "postgres", 16, 4, "--processes", "4", "--mix", "VP",
        "-p", f"store.options.dsn={fresh_database(postgres_one_core)}",
    )  # fmt: skip
    bound = r["resources"]["bottleneck"]
    assert bound["kind"] == "server_cpu" and bound["resource"] == "server CPU", bound
    assert bound["capacity"] == 1.0 and bound["used"] >= 0.9, bound
    assert "of 1 core" in bound["text"] and f"port {port}" in bound["text"], bound
    if psutil.cpu_count() > 1:
        assert "confined to 1 of the host's" in bound["text"], bound
    assert not bound["client_bound"]
    host = store_host(r["resources"])
    assert host["store_cores_allowed"] == 1.0, host
    assert host["store_cpu_cores"] + host["store_runqueue_cores"] >= 0.9, host
    assert host["store_cpu_cores"] <= 1.1, host  # one core's worth at most: it is confined
    row, _ = stored(tmp_path, r["experiment_id"])
    assert row["bottleneck_kind"] == "server_cpu" and not row["client_bound"]


def test_sqlite_at_high_t_names_the_client_and_client_bound_fail_fails_it(tmp_path):
    # sla.client_bound = "warn" (the default) only says so; "fail" fails the experiment.
    r = run(
        tmp_path, "sqlite", 64, 2, "-p", f"store.options.path={tmp_path / 'bg.sqlite'}",
        "-p", "sla.client_bound=fail",
    )  # fmt: skip
    bound = r["resources"]["bottleneck"]
    assert bound["kind"] == "client" and bound["client_bound"], bound
    assert "inside them" in bound["text"], bound  # the store runs inside the load processes
    assert bound["utilisation"] >= 0.9 and FIGURE.search(bound["text"]), bound
    (host,) = r["resources"]["hosts"]
    assert host["store_found_by"] == "" and host["load_processes"] >= 1, host  # embedded
    assert "bound by the client, not the store" in r["_stderr"], r["_stderr"]
    assert not r["passed"]
    reasons = [why for a in r["agents"] for why in a["reasons"]]
    assert f"client-bound: {bound['text']}" in reasons, reasons
    row, _ = stored(tmp_path, r["experiment_id"])
    assert row["client_bound"] and row["bottleneck_kind"] == "client"
    assert row["status"] == "failed" and "client-bound: " in row["reasons"], row
