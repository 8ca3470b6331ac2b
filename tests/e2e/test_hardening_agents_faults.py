"""A load process that stops (SIGSTOP) mid-run or mid-validation is found within the
heartbeat timeout and named as the load process, not its agent (which still answers):
its beats come from a thread of its own whatever the store does, and the coordinator asks
the agent's Status about every second during a run too. Before, the agent hung in
multiprocessing's Event.set() on the stopped process and was found "silent" a minute
later (73 s with heartbeat_timeout=3)."""

import contextlib
import json
import os
import signal
import subprocess
import sys
import time

import grpc
import psutil
import pytest

from bgbench.protos import AGENT_READY_LINE, bearer
from bgbench.protos import worker_pb2 as pb
from bgbench.protos import worker_pb2_grpc as pb_grpc
from tests.conftest import servers
from tests.e2e.test_liveness import Bgbench, fault_lines, wait_until

TIMEOUT_S = 5.0  # the default: a shorter one can find a busy machine's load quiet
# Detection within the heartbeat timeout plus the Status interval; a busy machine gets
# generous slack (the old code took a minute).
FOUND_WITHIN_S = TIMEOUT_S + 1.0 + 6.0
TOKEN = "a-long-token-for-these-tests"


def load_processes(run: Bgbench) -> list[psutil.Process]:
    return [
        p for p in run.descendants()
        if "spawn_main" in " ".join(p.cmdline()) and p.is_running()
    ]  # fmt: skip


def running(run: Bgbench) -> bool:
    """True while bgbench runs; its stderr if it ended (before the test could act)."""
    if run.proc.poll() is not None:
        _, err = run.proc.communicate()
        raise AssertionError(f"bgbench ended before the test acted: {err}")
    return True


def run_args(tmp_path, duration: int, *extra: str) -> list[str]:
    return [
        "run", "--store", "sqlite", "--threads", "2", "--users", "400",
        "--duration", str(duration), "--results", str(tmp_path / "res"), "--json",
        "-p", f"store.options.path={tmp_path / 'db.sqlite'}",
        "-p", f"agents.heartbeat_timeout={TIMEOUT_S}", "-p", "rating.steady_state=false",
        *extra,
    ]  # fmt: skip


def test_a_load_process_stopped_mid_run_is_named_within_the_timeout(tmp_path):
    args = run_args(tmp_path, 60, "--agents", "1", "--processes", "2")
    with Bgbench(args, dict(os.environ)) as run:
        wait_until(
            lambda: running(run) and len(list(tmp_path.rglob("log-f*.bglog"))) >= 2, "the run"
        )
        victim = wait_until(lambda: load_processes(run)[:1], "the load processes")[0]
        victim.send_signal(signal.SIGSTOP)
        stopped = time.time()
        code, out, err = run.finish(timeout=120)
    ended = time.time() - stopped
    assert code == 3, err
    assert "Traceback" not in err
    (line,) = fault_lines(err)
    assert f"(pid {victim.pid})" in line and "stopped responding" in line, line
    assert "while running" not in line and "silent" not in line  # not the agent's fault
    found = json.loads(out)["fault_at"] - stopped
    print(f"\nstopped load process found after {found:.1f} s, run ended after {ended:.1f} s")
    assert found <= FOUND_WITHIN_S
    assert ended < 40  # the 60 s run was not waited out


def test_a_load_process_stopped_mid_validation_is_named_within_the_timeout(tmp_path):
    """A listed agent, so the test can watch its Status for the validation to begin."""
    env = {**os.environ, "BGBENCH_TOKEN": TOKEN}
    agent = subprocess.Popen(
        [sys.executable, "-m", "bgbench", "agent", "--listen", "127.0.0.1:0", "--work-dir",
         str(tmp_path / "agent"), "--allow-store-paths", "--processes", "2"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
    )  # fmt: skip
    children: list[psutil.Process] = []
    try:
        ready = agent.stdout.readline() if agent.stdout else ""
        assert ready.startswith(AGENT_READY_LINE), ready
        address = ready[len(AGENT_READY_LINE) :].strip()
        stub = pb_grpc.WorkerStub(grpc.insecure_channel(address))

        def validating() -> pb.LoadProcessStatus | None:
            reply = stub.Status(pb.StatusRequest(), timeout=10, metadata=bearer(TOKEN))
            ran.update(p.pid for p in reply.processes if p.phase == "run")
            for p in reply.processes:
                # validating, or between its run's end and the validation
                if p.phase == "validate" or (p.pid in ran and p.phase == ""):
                    return p
            return None

        ran: set[int] = set()
        args = run_args(tmp_path, 2, "-p", f'agents.addresses=["{address}"]')
        with Bgbench(args, env) as run:
            found = wait_until(validating, "the validation")
            victim = psutil.Process(found.pid)
            children = psutil.Process(agent.pid).children(recursive=True)
            victim.send_signal(signal.SIGSTOP)
            stopped = time.time()
            code, out, err = run.finish(timeout=120)
        assert code == 3, err
        (line,) = fault_lines(err)
        assert f"(pid {victim.pid})" in line and "stopped responding" in line, line
        assert "validating" in line, line
        took = json.loads(out)["fault_at"] - stopped
        print(f"\nload process stopped mid-validation found after {took:.1f} s")
        assert took <= FOUND_WITHIN_S
    finally:
        for p in children:
            with_suppressed(p.send_signal, signal.SIGCONT)
        agent.kill()
        agent.wait(10)
        for p in children:
            with_suppressed(p.kill)


def with_suppressed(action, *args) -> None:
    with contextlib.suppress(psutil.Error):
        action(*args)


# -- a store that stops answering ---------------------------------------------------------

STOP_GRACE_S = 30.0  # docs/guide/hosts.md: store calls still running 30 s after the end: the store
# What the bound allows beyond the grace: closing the run's connections (2 s) and a busy
# machine's slack. One by one, each close waited out the driver's 10 s: 56 s in all.
STORE_FOUND_WITHIN_S = STOP_GRACE_S + 2.0 + 6.0
STORE_RUN_ENDS_WITHIN_S = STOP_GRACE_S + 2.0 + 16.0


@pytest.fixture
def own_postgres(tmp_path):
    """A PostgreSQL of this test's own (the session's must not freeze), thawed and stopped
    on the way out; (server facts, libpq connection string)."""
    directory = tmp_path / "pg"
    server = servers.start("postgres", directory)
    try:
        yield server, servers.new_database(server)
    finally:
        for p in postgres_processes(server):
            with contextlib.suppress(psutil.Error):
                p.send_signal(signal.SIGCONT)
        servers.stop(directory)


def postgres_processes(server: dict) -> list[psutil.Process]:
    try:
        postmaster = psutil.Process(server["pid"])
        return [postmaster, *postmaster.children(recursive=True)]
    except psutil.Error:
        return []


def progressed(events) -> float | None:
    """The run's start (Unix time) once its progress shows actions done, else None."""
    if not events.exists():
        return None
    for line in events.read_text().splitlines():
        event = json.loads(line)
        if event.get("kind") == "progress" and event["actions"] > 0:
            return float(event["time"]) - float(event["elapsed_s"])
    return None


def test_a_store_that_stops_answering_is_named_within_the_documented_bound(own_postgres, tmp_path):
    server, dsn = own_postgres
    duration = 4.0
    events = tmp_path / "events.jsonl"
    args = [
        "run", "--store", "postgres", "--agents", "1", "--processes", "1", "--threads", "2",
        "--users", "400", "--duration", str(duration), "--results", str(tmp_path / "res"),
        "--json", "--events", str(events), "-p", f"store.options.dsn={dsn}",
        "-p", "rating.steady_state=false",
    ]  # fmt: skip
    with Bgbench(args, dict(os.environ)) as run:
        started = wait_until(lambda: progressed(events), "the run's progress")
        for p in postgres_processes(server):
            p.send_signal(signal.SIGSTOP)
        code, out, err = run.finish(timeout=180)
        exited = time.time()
    end = started + duration
    assert code == 3, err
    assert "Traceback" not in err
    (line,) = fault_lines(err)
    assert "the store stopped answering" in line, line
    found = json.loads(out)["fault_at"] - end
    print(f"\nfrozen store found {found:.1f} s after the run's end, exit {exited - end:.1f} s")
    assert STOP_GRACE_S - 1 <= found <= STORE_FOUND_WITHIN_S
    assert exited - end <= STORE_RUN_ENDS_WITHIN_S
