"""Liveness in every phase, not only while an experiment runs: an agent frozen (SIGSTOP)
while loading, readying or validating, and a load stuck in a store call, are found within
agents.heartbeat_timeout, recorded as infrastructure failures (exit 3), and leave no
process behind.

The stuck load is tests/fixtures/hangstore: a SQLite binding whose load_fragment never
returns, registered as the real entry point `hang` of bgbench.bg_stores by the setup here
(a dist-info directory on the PYTHONPATH of the processes started).
"""

import contextlib
import json
import os
import signal
import subprocess
import time
from functools import partial
from pathlib import Path

import psutil
import pytest

from bgbench.coordinator.configuration.config import load_settings, parse_override
from bgbench.coordinator.execution.agents import spawn_local_agents
from bgbench.coordinator.execution.experiment import Cluster, run_experiment
from bgbench.coordinator.records.faults import Liveness, ending, should_retry
from bgbench.coordinator.storage.results import ResultsStore
from bgbench.errors import SystemFault, UserError
from bgbench.protos import worker_pb2 as pb
from tests import helpers
from tests.fixtures.hangstore import ENTRY_POINTS, MARKER_ENV
from tests.fixtures.registration import environment, register
from tests.helpers import BGBENCH

# The requirement is detection within the heartbeat timeout plus 2 s; a busy machine gets
# more for what follows it (stopping the agents, recording, exiting).
DETECTION_MARGIN_S = 2.0
END_BOUND_S = 120.0


@pytest.fixture(scope="module")
def hang_env(tmp_path_factory) -> dict[str, str]:
    return environment(register(tmp_path_factory.mktemp("dist"), "hangstore", ENTRY_POINTS))


wait_until = partial(helpers.wait_until, timeout=120.0, poll_s=0.02)


class Bgbench:
    """`bgbench` in the background; it and every process it started are killed (after a
    SIGCONT, in case one was stopped) on the way out."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [*BGBENCH, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        )
        self.seen: list[psutil.Process] = []

    def descendants(self) -> list[psutil.Process]:
        with contextlib.suppress(psutil.Error):
            found = psutil.Process(self.proc.pid).children(recursive=True)
            self.seen = list({*self.seen, *found})
        return list(self.seen)

    def finish(self, timeout: float = END_BOUND_S) -> tuple[int, str, str]:
        out, err = self.proc.communicate(timeout=timeout)
        return self.proc.returncode, out, err

    def __enter__(self) -> "Bgbench":
        return self

    def __exit__(self, *exc: object) -> None:
        for p in [psutil.Process(self.proc.pid), *self.seen] if self.proc.poll() is None else []:
            with contextlib.suppress(psutil.Error):
                p.send_signal(signal.SIGCONT)
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate(timeout=30)
        for p in self.seen:
            with contextlib.suppress(psutil.Error):
                p.send_signal(signal.SIGCONT)
                p.kill()


def hang_run(tmp: Path, timeout: float) -> list[str]:
    return [
        "run", "--store", "hang", "--agents", "1", "--threads", "1", "--users", "400",
        "--duration", "5", "--results", str(tmp / "res"), "--json",
        "-p", "agents.processes=1", "-p", f"store.options.path={tmp / 'hang.sqlite'}",
        "-p", f"agents.heartbeat_timeout={timeout}",
    ]  # fmt: skip


def load_began(prefix: Path, run: "Bgbench") -> tuple[int, float] | None:
    """(load process id, Unix time its load began) once the hanging load has begun."""
    if run.proc.poll() is not None:
        _, err = run.proc.communicate()
        raise AssertionError(f"bgbench ended before the load began: {err}")
    for path in prefix.parent.glob(f"{prefix.name}.*"):
        if path.suffix != ".partial":
            return int(path.suffix[1:]), float(path.read_text())
    return None


def fault_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("bgbench:")]


def recorded_fault(results: Path) -> tuple[dict, dict]:
    """The one record of a run in the results store, and its experiment."""
    store = ResultsStore(results)
    (record,) = store.ratings()
    (experiment,) = store.experiments(record["id"])
    return record, experiment


def test_a_load_that_hangs_ends_the_run_within_the_heartbeat_timeout(hang_env, tmp_path):
    timeout = 3.0
    marker = tmp_path / "load-began"
    env = {**hang_env, MARKER_ENV: str(marker)}
    with Bgbench(hang_run(tmp_path, timeout), env) as run:
        pid, began = wait_until(lambda: load_began(marker, run), "the load")
        stuck = psutil.Process(pid)
        spawned = [*run.descendants(), stuck]
        code, out, err = run.finish()
        _, alive = psutil.wait_procs(spawned, timeout=30)
    assert not alive, f"left running: {[p.pid for p in alive]}"  # the stuck one too
    assert code == 3, err
    assert "Traceback" not in err
    (line,) = fault_lines(err)
    assert "no load progress" in line and "fragment 0" in line and "heartbeat_timeout" in line
    result = json.loads(out)
    assert "no load progress" in result["fault"] and not result["passed"]
    found_after = result["fault_at"] - began
    print(f"\nno progress found {found_after:.2f} s after the load began (timeout {timeout:g} s)")
    assert timeout - 0.5 < found_after <= timeout + DETECTION_MARGIN_S
    record, experiment = recorded_fault(tmp_path / "res")
    assert record["status"] == "failed" and "infrastructure" in record["message"]
    assert experiment["status"] == "fault" and "no load progress" in experiment["reasons"]
    assert json.loads(experiment["result_json"])["fault"] == result["fault"]


def test_an_agent_frozen_while_loading_is_found_silent(hang_env, tmp_path):
    timeout = 4.0
    marker = tmp_path / "load-began"
    env = {**hang_env, MARKER_ENV: str(marker)}
    with Bgbench(hang_run(tmp_path, timeout), env) as run:
        pid, _ = wait_until(lambda: load_began(marker, run), "the load")
        agent = psutil.Process(pid).parent()
        assert agent is not None and "bgbench.worker.agent" in " ".join(agent.cmdline())
        spawned = run.descendants()
        agent.send_signal(signal.SIGSTOP)
        frozen = time.time()
        code, out, err = run.finish()
        _, alive = psutil.wait_procs(spawned, timeout=30)
    assert not alive, f"left running: {[p.pid for p in alive]}"
    assert code == 3, err
    (line,) = fault_lines(err)
    assert "silent" in line and "while loading" in line, line
    result = json.loads(out)
    found_after = result["fault_at"] - frozen
    print(f"\nfrozen agent found {found_after:.2f} s after SIGSTOP (timeout {timeout:g} s)")
    assert found_after <= timeout + DETECTION_MARGIN_S
    record, experiment = recorded_fault(tmp_path / "res")
    assert record["status"] == "failed" and experiment["status"] == "fault"
    assert "silent" in experiment["reasons"]


@pytest.fixture
def frozen_cluster(tmp_path):
    """One local agent over SQLite, loaded and run once; the test freezes it. It is
    thawed and stopped on the way out."""
    agents = spawn_local_agents(1, 1, tmp_path / "agents", timeout=60)
    cluster = None
    try:
        settings = load_settings(
            None,
            [
                parse_override(p)
                for p in (
                    "store.name=sqlite", f"store.options.path={tmp_path / 'db.sqlite'}",
                    "usercount=400", f"results_dir={tmp_path}",
                )
            ],
        )  # fmt: skip
        # Loading and the first run under a generous bound (a busy host's load processes
        # import for seconds); the tests then judge the frozen agent by the 2 s one.
        cluster = Cluster.connect(agents.addresses, None, heartbeat_timeout=60.0)
        cluster.prepare(settings)
        ran = run_experiment(cluster, settings, 2, 1.0, "before-the-freeze", heartbeat_timeout=60.0)
        assert not ran.fault, ran.fault
        for client in cluster.clients:
            client.heartbeat_timeout = 2.0
        yield cluster, settings, psutil.Process(agents.processes[0].pid)
    finally:
        for p in agents.processes:
            with contextlib.suppress(OSError):
                os.kill(p.pid, signal.SIGCONT)
        if cluster is not None:
            cluster.close()
        agents.close()


def test_an_agent_frozen_before_validation_fails_it_within_the_timeout(frozen_cluster):
    cluster, _, agent = frozen_cluster
    agent.send_signal(signal.SIGSTOP)
    wait_until(lambda: agent.status() == psutil.STATUS_STOPPED, "the agent stopping", timeout=30)
    started = time.monotonic()
    with pytest.raises(SystemFault, match=r"silent for .* while validating"):
        cluster.clients[0].validate("before-the-freeze")
    took = time.monotonic() - started
    assert 1.5 < took <= 2.0 + DETECTION_MARGIN_S, took
    started = time.monotonic()  # and a coordinator that comes to it now: the handshake
    with pytest.raises(SystemFault, match=r"did not answer: .* silent for .* while handshaking"):
        Cluster.connect([cluster.clients[0].address], None, heartbeat_timeout=2.0)
    took = time.monotonic() - started
    assert took <= 2.0 + DETECTION_MARGIN_S, took


def test_an_agent_frozen_before_a_run_faults_the_experiment(frozen_cluster):
    cluster, settings, agent = frozen_cluster
    agent.send_signal(signal.SIGSTOP)
    wait_until(lambda: agent.status() == psutil.STATUS_STOPPED, "the agent stopping", timeout=30)
    result = run_experiment(cluster, settings, 2, 60.0, "frozen")
    assert "silent" in result.fault and "readying" in result.fault
    assert not result.passed and result.fault_at > 0


# -- the judgement itself, without agents ---------------------------------------------------


def status(*processes: tuple[str, float]) -> pb.StatusReply:
    return pb.StatusReply(
        processes=[
            pb.LoadProcessStatus(pid=10 + i, alive=True, fragment=i, phase=phase, quiet_seconds=q)
            for i, (phase, q) in enumerate(processes)
        ]
    )


def test_a_quiet_load_fails_once_quiet_for_the_timeout():
    watch = Liveness("a:1", "loading", 5.0, now=100.0)
    assert watch.answered(status(("load", 1.0), ("load", 4.5)), now=101.0) is None
    assert watch.wait(101.0) == pytest.approx(0.5)  # asks again when the quieter one crosses
    problem = watch.answered(status(("load", 1.0), ("load", 5.1)), now=101.6)
    assert problem is not None
    assert "no load progress for 5.1 s on agent a:1 (fragment 1, loading" in problem
    assert "agents.heartbeat_timeout" in problem


def test_idle_processes_are_not_judged_by_beats():
    watch = Liveness("a:1", "loading", 5.0, now=0.0)
    assert watch.answered(status(("", 60.0)), now=1.0) is None


def test_a_running_or_validating_process_without_beats_is_named_not_the_store():
    """Runs and validations beat from a thread of the load process whatever the store
    does: quiet beats there mean the process itself stopped."""
    for phase, doing in (("run", "running"), ("validate", "validating")):
        watch = Liveness("a:1", "running", 5.0, now=0.0)
        problem = watch.answered(status(("", 60.0), (phase, 5.2)), now=1.0)
        assert problem is not None
        assert "load process 1 (pid 11) on agent a:1 stopped responding" in problem
        assert f"fragment 1, {doing}" in problem and "store" not in problem


def test_a_silent_agent_fails_after_the_timeout_not_before():
    watch = Liveness("a:1", "validating", 2.0, now=0.0)
    assert watch.status_deadline(0.5) == pytest.approx(1.5)  # no later than the timeout
    assert watch.unanswered(1.9) is None
    problem = watch.unanswered(2.0)
    assert problem is not None and "agent a:1 silent for 2.0 s while validating" in problem
    assert "heartbeat timeout 2 s" in problem


def test_how_failures_end_and_which_are_retried():
    assert ending(UserError("bad"))[0] == 2
    assert ending(SystemFault("gone")) == (3, "bgbench: fault: gone")
    assert ending(KeyboardInterrupt())[0] == 130
    assert should_retry("retry", 0, "agent x silent")
    assert not should_retry("retry", 2, "agent x silent")  # retries are bounded
    assert not should_retry("stop", 0, "agent x silent")
    assert not should_retry("retry", 0, "client overloaded: ...")  # it would overload again
    assert not should_retry("retry", 0, "")
