"""bgbench in containers, for real: the image built on a local base (deploy/docker/build.sh,
no image registry), and the Compose example (deploy/compose/) rating PostgreSQL through two
agent containers the coordinator finds by one name, PostgreSQL in a container of its own
limited to one CPU, on a network in 198.18.0.0/15. Everything the test starts (containers,
their network and volume) is removed in its finalizer; the images stay for the run.

scripts/test starts dockerd and the build early, in the background; build.sh holds a lock,
so the build here waits for that one and then finds every layer made. Without a Docker
engine the tests are skipped, unless BGBENCH_REQUIRE_DOCKER=1 (scripts/test sets it)."""

import ipaddress
import json
import os
import secrets
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from bgbench.coordinator.storage.results import ResultsStore
from tests.helpers import wait_until

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = ROOT / "deploy" / "compose" / "compose.yaml"
IMAGE = "bgbench:local"
SUBNET = ipaddress.ip_network("198.19.100.0/24")
BUILD_TIMEOUT_S = 2400.0  # a cold base, image and PostgreSQL image on a busy two-core host


def _docker_answers() -> bool:
    if shutil.which("docker") is None:
        return False
    info = subprocess.run(["docker", "info"], capture_output=True, timeout=60, check=False)
    return info.returncode == 0


if not _docker_answers():
    if os.environ.get("BGBENCH_REQUIRE_DOCKER") == "1":
        raise RuntimeError("BGBENCH_REQUIRE_DOCKER=1 but no Docker engine answers `docker info`")
    pytest.skip("no Docker engine answers (scripts/test starts one)", allow_module_level=True)


def _run(*args: str, timeout: float = 300, env=None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(args), capture_output=True, text=True, timeout=timeout, env=env, check=False
    )


@pytest.fixture(scope="module")
def images() -> str:
    """The base, bgbench's image and the PostgreSQL image, built (or found built)."""
    built = _run("bash", str(ROOT / "deploy" / "docker" / "build.sh"), timeout=BUILD_TIMEOUT_S)
    assert built.returncode == 0, built.stdout + built.stderr[-4000:]
    return IMAGE


@pytest.mark.timeout(BUILD_TIMEOUT_S + 300)  # the first test waits for the images' build
def test_the_image_runs_agent_and_rate_as_a_non_root_user(images, tmp_path):
    who = _run("docker", "run", "--rm", "--entrypoint", "id", IMAGE)
    assert who.returncode == 0, who.stderr
    assert who.stdout.startswith("uid=10001(bgbench)"), who.stdout
    # `docker run IMAGE agent ...`: beyond loopback without a token, the agent's own refusal
    refused = _run("docker", "run", "--rm", IMAGE, "agent", "--listen", "0.0.0.0:7100")
    assert refused.returncode == 2, refused.stderr
    assert "refusing to listen on 0.0.0.0:7100 without --token" in refused.stderr
    # `docker run IMAGE rate ...`: a whole (model) rating, its results in a mounted directory
    out = tmp_path / "out"
    out.mkdir(mode=0o777)
    out.chmod(0o777)  # the image's user writes here
    rated = _run(
        "docker", "run", "--rm", "-v", f"{out}:/out", IMAGE, "rate", "--store", "model",
        "-p", "model.peak=1e6", "--results", "/out", "--json",
    )  # fmt: skip
    assert rated.returncode == 0, rated.stderr
    summary = json.loads(rated.stdout)
    assert summary["soar"] == pytest.approx(1e6)
    assert ResultsStore(out).rating(summary["rating_id"])["status"] == "done"


@pytest.fixture
def compose(images, tmp_path) -> Iterator[tuple[list[str], dict[str, str], Path]]:
    """The Compose example's command line and environment, a project of this test's own;
    its containers, network and volume removed after the test, however it ends."""
    project = f"bgbtest{os.getpid()}"
    results = tmp_path / "results"
    results.mkdir()
    results.chmod(0o777)  # the coordinator runs as the image's user
    env = {
        **os.environ,
        "BGBENCH_TOKEN": secrets.token_hex(16),
        "PGPASSWORD": secrets.token_hex(12),
        "BGBENCH_RESULTS": str(results),
        "BGBENCH_SUBNET": str(SUBNET),
    }
    command = ["docker-compose", "-p", project, "-f", str(COMPOSE_FILE)]
    try:
        yield command, env, results
    finally:
        down = _run(*command, "down", "-v", "--remove-orphans", "--timeout", "10", env=env)
        assert down.returncode == 0, down.stderr
        for kind in ("container", "network", "volume"):
            left = _run(
                "docker", kind, "ls", "-q", *(["-a"] if kind == "container" else []),
                "--filter", f"label=com.docker.compose.project={project}",
            )  # fmt: skip
            assert left.stdout.strip() == "", f"{kind}s left by {project}: {left.stdout}"


def _healthy(command: list[str], env: dict[str, str]) -> bool:
    """Whether PostgreSQL and both agents are healthy; one that exited fails the test at
    once, with its log."""
    ids = _run(*command, "ps", "-q", env=env).stdout.split()
    states = _run(
        "docker", "inspect", "--format", "{{.Name}} {{.State.Status}} {{.State.Health.Status}}",
        *ids,
    )  # fmt: skip
    rows = [line.split() for line in states.stdout.splitlines()]
    for name, status, _ in rows:
        if status == "exited":
            log = _run("docker", "logs", "--tail", "20", name.lstrip("/"))
            raise AssertionError(f"{name} exited: {log.stdout}{log.stderr}")
    return len(rows) == 3 and all(health == "healthy" for *_, health in rows)


@pytest.mark.timeout(BUILD_TIMEOUT_S + 1200)
def test_the_compose_example_rates_postgres_through_two_agent_containers(compose):
    command, env, results = compose
    up = _run(*command, "up", "-d", "postgres", "agent", env=env, timeout=300)
    assert up.returncode == 0, up.stderr
    wait_until(lambda: _healthy(command, env), "postgres and two agents healthy", 300, poll_s=1)
    postgres = _run(*command, "ps", "-q", "postgres", env=env).stdout.strip()
    limits = _run("docker", "inspect", "--format", "{{.HostConfig.NanoCpus}}", postgres)
    assert limits.stdout.strip() == "1000000000"  # one CPU
    rated = _run(*command, "run", "--rm", "-T", "coordinator", env=env, timeout=900)
    assert rated.returncode == 0, rated.stdout[-3000:] + rated.stderr[-3000:]
    assert "connecting to 2 agents (agent:7100 is 2 agents); store postgres" in rated.stderr
    assert env["BGBENCH_TOKEN"] not in rated.stdout + rated.stderr
    assert env["PGPASSWORD"] not in rated.stdout + rated.stderr
    summary = json.loads(rated.stdout)
    assert summary["store"] == "postgres"
    assert summary["soar"] is not None and summary["soar"] > 0
    store = ResultsStore(results)
    rows = store.experiments(summary["rating_id"])
    assert rows and {r["phase"] for r in rows} == {"search", "final"}
    agents = set()
    for r in rows:
        result = json.loads(r["result_json"])
        assert len(result["agents"]) == 2
        assert all(a["log_records_written"] == a["log_records_read"] for a in result["agents"])
        agents |= {a["address"] for a in result["agents"]}
    hosts = {ipaddress.ip_address(a.rpartition(":")[0]) for a in agents}
    assert len(hosts) == 2 and all(h in SUBNET for h in hosts), agents
    record = store.rating(summary["rating_id"])
    assert record["status"] == "done"
    assert env["PGPASSWORD"] not in json.dumps(record)
