"""A real store that dies mid-experiment ends the experiment early, recorded as the
store failing; nothing hangs. Each test starts a server of its own to kill."""

import os
import signal
import threading

import pytest

from bgbench.run_result import RunResult
from bgbench.worker.engine import FragmentEngine, RunSpec
from bgbench.workloads.bg.config import BGConfig
from bgbench.workloads.bg.generator import FragmentPlan
from bgbench.workloads.bg.workload import WORKLOAD
from bgbench.workloads.registry import make_binding
from tests.conftest import servers

PLAN = FragmentPlan((1.0,), 0.27)
CONFIG = BGConfig.model_validate({"database": {"usercount": 200}, "workload": {"mix": "low"}})


def run_until_killed(engine: FragmentEngine, tmp, kill) -> RunResult:
    """Run for up to 60 s; kill the server once 300 actions are done."""
    killed = threading.Event()

    def publish(actions: int, *_: object) -> None:
        if actions >= 300 and not killed.is_set():
            killed.set()
            kill()

    spec = RunSpec("fault", 4, 60.0, 0, 7, tmp / "fault")
    summary = engine.run(spec, threading.Event(), publish)
    assert killed.is_set()
    return summary


@pytest.mark.timeout(240)
def test_cassandra_killed_mid_run_ends_the_experiment(tmp_path):
    server = servers.start("cassandra", tmp_path / "cassandra")
    try:
        options = {"hosts": server["hosts"], "port": server["port"], "timeout_s": 2}
        binding = make_binding("bg", "cassandra", options)
        engine = FragmentEngine(
            WORKLOAD, CONFIG, "cassandra", options, PLAN.capacities, 0, binding=binding
        )
        engine.prepare()
        summary = run_until_killed(
            engine, tmp_path, lambda: os.kill(server["pids"][0], signal.SIGKILL)
        )
        assert "store failing" in summary.aborted, summary.aborted
        assert summary.elapsed < 45  # ended by the failures, not by the clock
        assert summary.actions >= 300
        binding.close()
    finally:
        servers.stop(tmp_path / "cassandra")


@pytest.mark.timeout(240)
def test_hbase_gateway_killed_mid_run_ends_the_experiment(tmp_path):
    server = servers.start("hbase", tmp_path / "hbase")
    try:
        options = {"port": server["port"], "timeout_ms": 2000}
        binding = make_binding("bg", "hbase", options)
        engine = FragmentEngine(
            WORKLOAD, CONFIG, "hbase", options, PLAN.capacities, 0, binding=binding
        )
        engine.prepare()
        thrift = server["pids"][0]
        summary = run_until_killed(engine, tmp_path, lambda: os.kill(thrift, signal.SIGKILL))
        assert "store failing" in summary.aborted, summary.aborted
        assert summary.elapsed < 45
        assert summary.actions >= 300
    finally:
        servers.stop(tmp_path / "hbase")
