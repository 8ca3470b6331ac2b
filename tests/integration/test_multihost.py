"""Agents on three distinct hosts (network namespaces with their own addresses): a full
rating through them, and one host's agent killed mid-experiment."""

import json
import sqlite3
import subprocess
import sys
import threading
import time

import pytest
from rich.console import Console

from bgbench.coordinator.configuration.config import load_settings, parse_override
from bgbench.coordinator.execution.agents import AgentClient, Credentials
from bgbench.coordinator.execution.experiment import run_experiment
from bgbench.coordinator.execution.session import bring_up
from tests.integration.netns import network_hosts

TOKEN = "multi-host-token"


@pytest.fixture(scope="module")
def hosts(tmp_path_factory):
    work = tmp_path_factory.mktemp("hosts")
    with network_hosts(3) as hs:
        for h in hs:
            h.start_agent(work, TOKEN)
        yield hs


def test_each_host_is_reached_at_its_own_address(hosts):
    for h in hosts:
        facts = AgentClient(h.agent_address, Credentials(token=TOKEN)).handshake()
        assert facts.load_processes == 1
    # and the root namespace's loopback is not where they listen
    assert len({h.address for h in hosts}) == 3


def test_a_rating_through_three_hosts(hosts, tmp_path):
    addresses = json.dumps([h.agent_address for h in hosts])
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "bgbench",
            "rate",
            "--store",
            "sqlite",
            "--users",
            "600",
            "--delta-search",
            "1",
            "--delta",
            "1.5",
            "-p",
            "rating.final_runs=2",
            "--max-threads",
            "24",
            "--results",
            str(tmp_path),
            "--json",
            "-p",
            f"agents.addresses={addresses}",
            "-p",
            f"agents.token={TOKEN}",
            "-p",
            f"store.options.path={tmp_path / 'bg.sqlite'}",
            "-p",
            "sla.beta_ms=5",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["socialites"] is not None and summary["soar"] is not None
    assert summary["experiments_unique"] >= 5
    db = sqlite3.connect(tmp_path / "bgbench.sqlite")
    rows = db.execute("SELECT result_json FROM experiments").fetchall()
    hosts_json = db.execute("SELECT hosts_json FROM ratings").fetchone()[0]
    db.close()
    assert {h["address"] for h in json.loads(hosts_json)} == {h.agent_address for h in hosts}
    for (result_json,) in rows:
        result = json.loads(result_json)
        assert [a["address"] for a in result["agents"]] == [h.agent_address for h in hosts]
        assert result["unpredictable_reads"] == 0
    # the agents keep running for the next rating: the coordinator only stops its own
    assert all(h.agent.poll() is None for h in hosts)


def test_killing_one_host_is_an_infrastructure_failure(tmp_path):
    # hosts of its own: this test kills one
    with network_hosts(3) as hs:
        for h in hs:
            h.start_agent(tmp_path, TOKEN)
        s = load_settings(
            None,
            [
                parse_override(p)
                for p in (
                    "store.name=sqlite", f"store.options.path={tmp_path / 'db.sqlite'}",
                    "usercount=600", f"results_dir={tmp_path}", f"agents.token={TOKEN}",
                    f"agents.addresses={json.dumps([h.agent_address for h in hs])}",
                )
            ],
        )  # fmt: skip
        with bring_up(s, tmp_path, Console(stderr=True).print) as target:
            seen: set[int] = set()
            ready = threading.Event()

            def progress(i, _p):
                seen.add(i)
                if len(seen) == 3:
                    ready.set()

            out = {}
            runner = threading.Thread(
                target=lambda: out.setdefault(
                    "r", run_experiment(target.cluster, s, 6, 60.0, "kill", progress)
                )
            )
            runner.start()
            assert ready.wait(30)
            killed = time.monotonic()
            hs[1].agent.kill()
            runner.join(60)
            detected = time.monotonic() - killed
            assert not runner.is_alive()
        result = out["r"]
        assert result.fault and hs[1].agent_address in result.fault
        assert not result.passed
        assert detected < 5.0
        print(f"detection after kill: {detected:.2f} s")
