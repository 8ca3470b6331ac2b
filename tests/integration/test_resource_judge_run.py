"""A real `bgbench run` keeps its resources: every agent's samples of its host, a remote
host's through node_exporter, their figures over the rated window and the bottleneck
named; sla.client_bound = fail fails a client-bound experiment; an endpoint that does not
answer costs a note, not the run."""

import json
import socket
from pathlib import Path

from bgbench.coordinator.rating.api import results_path
from bgbench.coordinator.storage.results import ResultsStore
from bgbench.run_result import ExperimentResult
from tests.conftest import servers
from tests.helpers import bgbench

KINDS = {"server_cpu", "server_disk", "network", "client", "setup", "none"}


def run_json(tmp_path: Path, *params: str) -> dict:
    proc = bgbench(
        "run", "--store", "sqlite", "--threads", "4", "--duration", "4", "--users", "300",
        "--agents", "2", "--processes", "1", "--results", str(tmp_path / "results"), "--json",
        "-p", f"store.options.path={tmp_path / 'bg.sqlite'}",
        *[arg for p in params for arg in ("-p", p)],
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def test_a_sqlite_run_measures_its_hosts_and_names_the_bottleneck(tmp_path):
    result = run_json(tmp_path)
    resources = result["resources"]
    streams = {name: samples for name, samples in resources["series"].items()}
    assert sorted(streams) == sorted(f"agent {a['address']}" for a in result["agents"])
    assert all(len(samples) >= 2 for samples in streams.values()), "a sample every 0.5 s"
    [host] = resources["hosts"]  # both local agents sample the same host: merged
    assert host["samples"] >= 2 and host["cores"] >= 1 and host["memory_total_bytes"] > 0
    assert host["load_processes"] == 2  # one per agent, added up
    assert host["load_cpu_cores"] > 0
    assert host["store_found_by"] == ""  # SQLite runs inside the load processes
    low, high = resources["window_s"]
    assert 0 <= low < high
    bottleneck = resources["bottleneck"]
    assert bottleneck["kind"] in KINDS and bottleneck["text"]
    assert bottleneck["client_bound"] == (bottleneck["kind"] == "client")
    if bottleneck["client_bound"]:
        assert "embedded" in bottleneck["text"]  # the store runs inside the load processes
    # kept in the results store with the experiment, and read back
    store = ResultsStore.existing(results_path(tmp_path / "results"))
    [run] = store.ratings()
    [row] = store.experiments(run["id"])
    kept = ExperimentResult.from_record(json.loads(row["result_json"]))
    assert kept.resources is not None and kept.resources.hosts[0].samples == host["samples"]
    assert kept.bottleneck is not None and kept.bottleneck.text == bottleneck["text"]


def test_client_bound_fails_the_experiment_when_the_settings_say_so(tmp_path):
    # Saturated at 1% of their cores, the load processes are surely the bottleneck (a
    # threshold, not a busy machine, decides it); the host's CPU never counts at 100%.
    bound = ["resources.client_saturation=0.01", "resources.cpu_saturation=1"]
    warned = run_json(tmp_path / "warn", *bound)
    assert warned["resources"]["bottleneck"]["client_bound"]
    assert not any("client-bound" in r for a in warned["agents"] for r in a["reasons"])
    failed = run_json(tmp_path / "fail", *bound, "sla.client_bound=fail")
    assert failed["resources"]["bottleneck"]["client_bound"]
    assert failed["passed"] is False
    reasons = [r for a in failed["agents"] for r in a["reasons"] if r.startswith("client-bound")]
    assert len(reasons) == 1 and "load process" in reasons[0]


def test_a_node_exporter_host_is_watched_and_a_dead_endpoint_noted(tmp_path, node_exporter_server):
    with socket.socket() as s:  # a port nothing listens on (bound here, then closed)
        s.bind(("127.0.0.1", 0))
        dead = f"127.0.0.1:{s.getsockname()[1]}"
    live = f"127.0.0.1:{node_exporter_server['port']}"
    result = run_json(tmp_path, f'resources.node_exporters=["{live}", "{dead}"]')
    resources = result["resources"]
    hosts = {h["host_id"]: h for h in resources["hosts"]}
    remote = hosts[f"node_exporter {live}"]
    assert remote["source"] == "node_exporter" and remote["samples"] >= 2
    assert remote["cores"] >= 1 and remote["memory_total_bytes"] > 0
    assert f"node_exporter {dead}" not in hosts
    assert any(dead in note and "scrapes failed" in note for note in resources["notes"])


def test_check_config_refuses_a_bad_resources_section_in_one_line(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[resources]\nnode_exporters = ["db1"]\n')
    proc = bgbench("check-config", str(bad))
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0
    assert "resources.node_exporters" in proc.stderr and "host:port" in proc.stderr
    good = tmp_path / "good.toml"
    good.write_text(
        '[resources]\nstore_process_names = ["postgres"]\n[sla]\nclient_bound = "fail"\n'
    )
    assert bgbench("check-config", str(good)).returncode == 0


def test_a_postgres_run_finds_the_servers_processes(tmp_path, postgres_server):
    dsn = servers.new_database(postgres_server)
    proc = bgbench(
        "run", "--store", "postgres", "--threads", "4", "--duration", "4", "--users", "300",
        "--agents", "1", "--processes", "2", "--results", str(tmp_path / "results"), "--json",
        "-p", f"store.options.dsn={dsn}",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    resources = json.loads(proc.stdout)["resources"]
    [host] = resources["hosts"]
    assert host["store_found_by"] == f"port {postgres_server['port']}"  # discovered
    assert host["store_processes"] >= 2  # the postmaster and the backends
    assert host["store_cpu_cores"] > 0 and host["store_cores_allowed"] >= 1
    bottleneck = resources["bottleneck"]
    assert bottleneck["kind"] in KINDS
    if bottleneck["kind"] == "none":  # names the busiest resource with its figures
        assert (
            bottleneck["text"].startswith("no resource saturated")
            and "busiest" in bottleneck["text"]
        )


def test_a_ratings_json_and_headline_carry_its_final_bottleneck(tmp_path):
    common = [
        "rate", "--store", "sqlite", "--users", "300", "--delta", "2", "--max-threads", "2",
        "--results", str(tmp_path / "results"), "-p", f"store.options.path={tmp_path / 'r.db'}",
        "-p", "rating.final_runs=1", "-p", "rating.objective=soar",
        "-p", "resources.client_saturation=0.01", "-p", "resources.cpu_saturation=1",
    ]  # fmt: skip
    proc = bgbench(*common, "--json")
    assert proc.returncode == 0, proc.stderr[-3000:]
    bottleneck = json.loads(proc.stdout)["bottleneck"]
    assert bottleneck["kind"] == "client" and bottleneck["client_bound"] is True
    assert "WARNING: T=" in proc.stderr  # each client-bound experiment said so as it ended
    shown = bgbench(*common)
    assert shown.returncode == 0, shown.stderr[-3000:]
    assert "Bottleneck: " in shown.stdout and "WARNING: client-bound" in shown.stdout
