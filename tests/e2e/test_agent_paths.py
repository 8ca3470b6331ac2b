"""An agent writes only inside its work dir: experiment ids are plain names, and the files a
store option names (SQLite's path) stay inside it unless the agent was started with
--allow-store-paths (as the coordinator starts its local agents)."""

import json
import os
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path

import grpc
import pytest
from rich.console import Console

from bgbench.coordinator.configuration.config import load_settings, parse_override
from bgbench.coordinator.execution.session import bring_up
from bgbench.protos import AGENT_READY_LINE, bearer
from bgbench.protos import worker_pb2 as pb
from bgbench.protos import worker_pb2_grpc as pb_grpc
from bgbench.workloads.bg.config import BGConfig

TOKEN = "paths-test-token-0123456789"
CONFIG = BGConfig.model_validate({"database": {"usercount": 200}}).model_dump_json()


def start_agent(work_dir: Path, cwd: Path) -> tuple[subprocess.Popen, str]:
    """A remote-style agent: the token from the environment, no store path allowance."""
    env = {**os.environ, "BGBENCH_TOKEN": TOKEN}
    env.pop("BGBENCH_AGENT_ALLOW_STORE_PATHS", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "bgbench", "agent", "--listen", "127.0.0.1:0",
         "--work-dir", str(work_dir)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd,
    )  # fmt: skip
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith(AGENT_READY_LINE):
        proc.kill()
        proc.wait(10)
        raise AssertionError(f"agent did not start: {line!r}")
    return proc, line[len(AGENT_READY_LINE) :].strip()


@pytest.fixture
def agent(tmp_path):
    """(stub, work dir, the agent's cwd); the agent is killed whatever happens."""
    cwd = tmp_path / "cwd"
    work = tmp_path / "box" / "work"
    cwd.mkdir()
    proc, address = start_agent(work, cwd)
    channel = grpc.insecure_channel(address)
    try:
        yield pb_grpc.WorkerStub(channel), work, cwd
    finally:
        channel.close()
        proc.kill()
        proc.wait(10)


def prepare(stub, store: str, options: dict) -> pb.PrepareReply:
    request = pb.PrepareRequest(
        workload="bg", workload_config_json=CONFIG, store=store,
        store_options_json=json.dumps(options), capacities=[1.0], fragments=[0],
    )  # fmt: skip
    return stub.Prepare(request, timeout=120, metadata=bearer(TOKEN))


def run(stub, experiment_id: str) -> list[pb.RunEvent]:
    request = pb.RunRequest(experiment_id=experiment_id, threads=1, duration_seconds=0.5)
    return list(stub.Run(request, timeout=120, metadata=bearer(TOKEN)))


def files_outside(root: Path, inside: Path) -> set[Path]:
    return {p for p in root.rglob("*") if not p.is_relative_to(inside)}


def test_run_and_validate_refuse_ids_that_are_not_plain_names(agent, tmp_path):
    stub, work, _ = agent
    assert not prepare(stub, "null", {}).error.message
    before = files_outside(tmp_path, work)
    absolute = tmp_path / "elsewhere" / "x"
    for bad in ("../../x", "../x", str(absolute), "", "..", "a/../../x", "x/y", ".hidden"):
        events = run(stub, bad)
        assert len(events) == 1 and events[0].HasField("error"), bad
        error = events[0].error
        assert error.kind == "user" and error.field == "experiment_id", bad
        assert "experiment_id" in error.message, bad
        reply = stub.Validate(
            pb.ValidateRequest(experiment_id=bad), timeout=60, metadata=bearer(TOKEN)
        )
        assert reply.error.kind == "user" and "experiment_id" in reply.error.message, bad
    assert files_outside(tmp_path, work) == before  # nothing written, no directory made
    assert not (tmp_path / "box" / "x").exists() and not absolute.parent.exists()
    # a plain id still runs, inside the work dir, and validates
    events = run(stub, "R20250101-120000-ab12-T1-0.5s-retry1")
    assert events[-1].HasField("result"), events[-1]
    logs = work / "experiments" / "R20250101-120000-ab12-T1-0.5s-retry1"
    assert (logs / "log-f0.bglog").is_file() and (logs / "actions-f0.npy").is_file()
    reply = stub.Validate(
        pb.ValidateRequest(experiment_id=logs.name), timeout=60, metadata=bearer(TOKEN)
    )
    assert not reply.error.message and reply.reads > 0


def test_a_remote_agent_keeps_store_files_in_its_work_dir(agent, tmp_path):
    stub, work, cwd = agent
    elsewhere = Path("/tmp") / f"elsewhere-{uuid.uuid4().hex}.sqlite"
    for path in (str(elsewhere), "../escape.sqlite", "data/../../escape.sqlite"):
        reply = prepare(stub, "sqlite", {"path": path})
        assert reply.error.kind == "user", path
        assert "store.options.path" in reply.error.message, reply.error.message
        assert "--allow-store-paths" in reply.error.message
    assert not elsewhere.exists()
    assert not list(tmp_path.rglob("escape.sqlite"))
    # a relative path lands inside the work dir, not in the agent's current directory
    assert not prepare(stub, "sqlite", {"path": "data/bg.sqlite"}).error.message
    assert (work / "data" / "bg.sqlite").is_file()
    assert not (cwd / "data").exists()
    # and so does the default
    assert not prepare(stub, "sqlite", {}).error.message
    assert (work / "bgbench-data" / "bg.sqlite").is_file()
    assert not (cwd / "bgbench-data").exists()


def test_local_agents_share_one_database_at_a_path_relative_to_the_coordinator(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    settings = load_settings(
        None,
        [
            parse_override(p)
            for p in (
                "store.name=sqlite", "store.options.path=shared/bg.sqlite", "usercount=300",
                "agents.local=2", f"results_dir={tmp_path / 'results'}",
            )
        ],
    )  # fmt: skip
    with bring_up(settings, tmp_path / "work", Console(stderr=True).print) as target:
        assert target.cluster is not None and len(target.cluster.clients) == 2
    files = list(tmp_path.rglob("bg.sqlite"))
    assert files == [tmp_path / "shared" / "bg.sqlite"]  # one file, where the user said
    with sqlite3.connect(files[0]) as db:
        assert db.execute("SELECT count(*) FROM users").fetchone()[0] == 300  # both fragments
