"""Packaging (issue 31): `python -m build` makes an sdist and, from it, a wheel; the wheel
installed with no extras into a clean venv rates SQLite and writes a report; a store or a
command whose extra is missing there is one line naming the extra (exit 2), on the
coordinator before anything starts and on an agent of that venv that a coordinator with
every extra drives.

Real: the build and the clean venv's installs come from PyPI (pip's cache makes a second
run quick). About 2-4 minutes on 2 cores with a warm pip cache, most of it pip.
"""

import json
import os
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

import pytest

from bgbench.extras import EXTRA_MODULES
from bgbench.protos import AGENT_READY_LINE

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]

REPO = Path(__file__).resolve().parents[2]
TOKEN = "packaging-test-token-0123456789"
# What the sdist must hold for its wheel to work: the generated gRPC code and its source,
# the deck's static files, the launchers' Maven files, the project's metadata.
SDIST_NEEDS = (
    "pyproject.toml",
    "README.md",
    "protos/worker.proto",
    "protos/worker_pb2.py",
    "protos/worker_pb2_grpc.py",
    "coordinator/interfaces/deck_static/deck.js",
    "coordinator/interfaces/deck_static/deck.css",
    "bgbench/launchers/jars/cassandra/pom.xml",
    "bgbench/launchers/jars/hbase/pom.xml",
    "bgbench/extras.py",
)
WHEEL_NEEDS = (
    "bgbench/protos/worker_pb2.py",
    "bgbench/protos/worker.proto",
    "bgbench/coordinator/interfaces/deck_static/deck.js",
    "bgbench/launchers/jars/cassandra/pom.xml",
    "bgbench/workloads/bg/stores/sqlite.py",
)


def _run(cmd: list[str], timeout: float, **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)  # type: ignore[call-overload, no-any-return]


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> dict[str, Path]:
    """The sdist, and the wheel built from it (build's default), in a temporary directory."""
    out = tmp_path_factory.mktemp("dist")
    started = time.monotonic()
    proc = _run([sys.executable, "-m", "build", "--outdir", str(out), str(REPO)], 900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    print(f"python -m build: {time.monotonic() - started:.1f} s")
    (sdist,) = out.glob("bgbench-*.tar.gz")
    (wheel,) = out.glob("bgbench-*.whl")
    return {"sdist": sdist, "wheel": wheel}


@pytest.fixture(scope="module")
def venv(dist, tmp_path_factory) -> Path:
    """A clean venv (no site packages) with the wheel installed, no extras."""
    where = tmp_path_factory.mktemp("clean") / "venv"
    started = time.monotonic()
    made = _run([sys.executable, "-m", "venv", str(where)], 300)
    assert made.returncode == 0, made.stderr
    pip = [
        str(where / "bin" / "python"),
        "-m",
        "pip",
        "install",
        "-q",
        "--disable-pip-version-check",
    ]
    installed = _run([*pip, str(dist["wheel"])], 900)
    assert installed.returncode == 0, installed.stderr[-3000:]
    print(f"clean venv and `pip install WHEEL`: {time.monotonic() - started:.1f} s")
    return where


def _clean_env(**extra: str) -> dict[str, str]:
    """The environment without anything pointing at the development venv."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.pop("BGBENCH_TOKEN", None)
    return {**env, **extra}


def _bgbench(
    venv: Path, *args: str, cwd: Path, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    return _run([str(venv / "bin" / "bgbench"), *args], timeout, cwd=cwd, env=_clean_env())


def test_the_sdist_holds_what_the_wheel_needs_and_the_wheel_was_built_from_it(dist):
    with tarfile.open(dist["sdist"]) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    assert not [f for f in SDIST_NEEDS if f not in names], sorted(names)
    with zipfile.ZipFile(dist["wheel"]) as wheel:
        files = set(wheel.namelist())
        (metadata,) = [n for n in files if n.endswith(".dist-info/METADATA")]
        text = wheel.read(metadata).decode()
    assert not [f for f in WHEEL_NEEDS if f not in files]
    extras = {
        line.split(":", 1)[1].strip()
        for line in text.splitlines()
        if line.startswith("Provides-Extra:")
    }
    assert {
        "postgres",
        "casql",
        "mongodb",
        "cassandra",
        "hbase",
        "riak",
        "mysql",
        "deck",
        "all",
        "test",
    } <= extras


def test_no_extra_brings_no_driver_and_no_web_stack(venv):
    probe = (
        "import importlib.util, json, sys; "
        "print(json.dumps([m for m in sys.argv[1:] if importlib.util.find_spec(m)]))"
    )
    modules = sorted({m for ms in EXTRA_MODULES.values() for m in ms})
    proc = _run([str(venv / "bin" / "python"), "-c", probe, *modules], 120, env=_clean_env())
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == []


def test_a_sqlite_rating_and_its_report_with_no_extra(venv, tmp_path):
    rated = _bgbench(
        venv, "rate", "--store", "sqlite", "--delta-search", "1", "--delta", "1",
        "--max-threads", "4", "--users", "200", "--results", "results",
        "-p", "rating.final_runs=2", "-p", "agents.local=1", "-p", "agents.processes=1",
        "-p", "agents.heartbeat_timeout=60", "--json", cwd=tmp_path,
    )  # fmt: skip
    assert rated.returncode == 0, rated.stderr[-3000:]
    rating_id = json.loads(rated.stdout)["rating_id"]
    reported = _bgbench(venv, "report", rating_id, "-o", "r.html", cwd=tmp_path)
    assert reported.returncode == 0, reported.stderr[-3000:]
    html = (tmp_path / "r.html").read_text()
    assert "<svg" in html and rating_id in html


def _one_line_naming(proc: subprocess.CompletedProcess[str], extra: str) -> str:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert f"pip install 'bgbench[{extra}]'" in lines[0]
    return lines[0]


@pytest.mark.parametrize(
    ("store", "extra"), [("cassandra", "cassandra"), ("casql", "casql"), ("riak", "riak")]
)
def test_a_store_without_its_extra_is_one_line_before_anything_starts(venv, tmp_path, store, extra):
    proc = _bgbench(
        venv, "run", "--store", store, "--threads", "2", "--duration", "1",
        "--users", "200", "--results", "results", cwd=tmp_path, timeout=120,
    )  # fmt: skip
    line = _one_line_naming(proc, extra)
    assert f"store {store}" in line
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").iterdir())
    assert not list(tmp_path.rglob("agent-*"))  # no agent was spawned


def test_the_deck_without_its_extra_is_one_line(venv, tmp_path):
    proc = _bgbench(venv, "deck", "--port", "1", cwd=tmp_path, timeout=120)
    _one_line_naming(proc, "deck")


@pytest.fixture
def bare_agent(venv, tmp_path):
    """An agent of the clean venv (no extras) on loopback; killed by its PID after the test."""
    proc = subprocess.Popen(
        [str(venv / "bin" / "bgbench"), "agent", "--listen", "127.0.0.1:0", "--processes", "1",
         "--work-dir", str(tmp_path / "agent")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=_clean_env(BGBENCH_TOKEN=TOKEN),
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # the agent's first line, once it serves
        assert line.startswith(AGENT_READY_LINE), line + (proc.stderr.read() if proc.stderr else "")
        yield line[len(AGENT_READY_LINE) :].strip()
    finally:
        proc.kill()
        proc.wait(30)


def test_an_agent_without_the_extra_is_named_by_the_coordinator_in_one_line(bare_agent, tmp_path):
    """The coordinator (this venv: every extra) drives an agent that lacks the store's."""
    proc = _run(
        [sys.executable, "-m", "bgbench", "run", "--store", "mongodb", "--threads", "2",
         "--duration", "1", "--users", "200", "--results", str(tmp_path / "results"),
         "-p", f'agents.addresses=["{bare_agent}"]', "-p", "agents.heartbeat_timeout=60"],
        300, env={**_clean_env(), "BGBENCH_TOKEN": TOKEN},
    )  # fmt: skip
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    (line,) = [x for x in proc.stderr.splitlines() if x.startswith("bgbench: error")]
    assert line == (
        f"bgbench: error: agent {bare_agent}: store mongodb needs the 'mongodb' extra, not "
        "installed on this agent (missing: pymongo): pip install 'bgbench[mongodb]'"
    )


def test_stores_lists_every_store_and_names_those_without_their_extra(venv, tmp_path):
    proc = _bgbench(venv, "stores", cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert any(line.startswith("bg: ") and "cassandra" in line for line in lines)
    assert lines[-1] == (
        "without their extra here: postgres casql mongodb cassandra hbase riak mysql; "
        "pip install 'bgbench[casql,cassandra,hbase,mongodb,mysql,postgres,riak]'"
    )


def test_a_study_of_a_store_without_its_extra_is_one_line_and_records_nothing(venv, tmp_path):
    proc = _bgbench(
        venv, "study", "load", "--workload", "sensorlog", "--store", "mongodb",
        "--results", "results", cwd=tmp_path, timeout=120,
    )  # fmt: skip
    line = _one_line_naming(proc, "mongodb")
    assert "store mongodb" in line
    assert not (tmp_path / "results").exists()
