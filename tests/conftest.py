"""Real servers for the tests, started once per session on loopback through deploy/local/."""

import fcntl
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

# No deadline on a property's examples: a test asserts what is computed, never how fast (a
# busy CI machine took over hypothesis's default 200 ms on a scipy call and failed).
settings.register_profile("bgbench", deadline=None)
settings.load_profile("bgbench")

ROOT = Path(__file__).resolve().parents[1]


def _servers_module():
    spec = importlib.util.spec_from_file_location("servers", ROOT / "deploy/local/servers.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


servers = _servers_module()

TESTS = Path(__file__).resolve().parent
LAYERS = ("unit", "integration", "e2e")  # each the name of its directory under tests/


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test with its directory's layer (tests/unit -> unit, ...), unless it names
    its layer itself (a test under tests/unit that starts a real server is integration).
    Then put the files in the order of their measured time, longest first."""
    for item in items:
        if any(item.get_closest_marker(layer) for layer in LAYERS):
            continue
        directory = item.path.relative_to(TESTS).parts[0]
        if directory in LAYERS:
            item.add_marker(directory)
    longest_files_first(items, json.loads(FILE_SECONDS.read_text()))


# Seconds each test file took in a whole run (setup, call and teardown of its tests; its
# module fixtures and the first use of a session fixture included), written by
# `pytest --file-seconds-out PATH`. pytest-xdist hands files to its workers in collection
# order (scripts/test turns off its reordering by test count): the longest first, so that
# no long file starts last and runs alone while the other workers are idle.
FILE_SECONDS = TESTS / "file_seconds.json"


def longest_files_first(items: list[pytest.Item], seconds: dict[str, float]) -> None:
    """Order `items` by their file's `seconds`, longest first, keeping each file's tests
    together and in their own order. A file not measured yet comes first: it may be long,
    and at the start it cannot be the tail."""
    first_index: dict[str, int] = {}
    for index, item in enumerate(items):
        first_index.setdefault(_file_of(item.nodeid), index)

    def key(item: pytest.Item) -> tuple[float, int]:
        file = _file_of(item.nodeid)
        return -seconds.get(file, float("inf")), first_index[file]

    items.sort(key=key)


def _file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--file-seconds-out", metavar="PATH", default=None,
        help="write each test file's seconds in this run to PATH (as tests/file_seconds.json)",
    )  # fmt: skip


# Each file's seconds so far (the controller of an xdist run gets every worker's reports).
file_times: dict[str, float] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Each phase's seconds, added to its file's (in the controller, from every worker)."""
    file = _file_of(report.nodeid)
    file_times[file] = file_times.get(file, 0.0) + report.duration


def pytest_sessionfinish(session: pytest.Session) -> None:
    out = session.config.getoption("--file-seconds-out")
    if out and not hasattr(session.config, "workerinput"):
        ranked = sorted(file_times.items(), key=lambda pair: -pair[1])
        Path(out).write_text(json.dumps({f: round(s, 1) for f, s in ranked}, indent=0) + "\n")


def _running(kind: str, tmp_path_factory, **options):
    directory = tmp_path_factory.mktemp(kind)
    try:
        yield servers.start(kind, directory, **options)
    finally:
        servers.stop(directory)


# The JVM servers (each ~40 s and 1-1.6 GB to start) are started once per run and shared by
# every pytest-xdist worker: each test takes a namespace of its own on them (a keyspace or a
# table prefix), as on any shared server. The controlling process makes the directory they
# live in, hands it to its workers, and stops them when the whole run ends.
SHARED_ROOT = pytest.StashKey[Path]()
SHARED_OPTION = "bgbench_shared_servers"


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # the controller (or a run without xdist)
        config.stash[SHARED_ROOT] = Path(tempfile.mkdtemp(prefix="bgbench-shared-servers-"))


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist's controller, before a worker starts: where the run's shared servers are."""
    node.workerinput[SHARED_OPTION] = str(node.config.stash[SHARED_ROOT])


def pytest_unconfigure(config: pytest.Config) -> None:
    """The controller, once every worker has finished: stop the shared servers."""
    root = config.stash.get(SHARED_ROOT, None)
    if root is None:
        return
    for record in root.glob(f"*/{servers.STATE}"):
        servers.stop(record.parent)
    shutil.rmtree(root, ignore_errors=True)


def _shared_root(config: pytest.Config) -> Path:
    workerinput = getattr(config, "workerinput", None)
    return Path(workerinput[SHARED_OPTION]) if workerinput else config.stash[SHARED_ROOT]


def _shared(kind: str, config: pytest.Config) -> Iterator[dict[str, Any]]:
    """The run's one server of `kind`: started by the first worker that asks, behind a lock
    the others wait on; stopped by the controller (pytest_unconfigure)."""
    yield made_once(config, kind, lambda directory: servers.start(kind, directory))[1]


def made_once(config: pytest.Config, name: str, make: Callable[[Path], Any]) -> tuple[Path, Any]:
    """A directory of this run's, and what `make(directory)` returned (JSON) when the first
    worker that asked for `name` made it there while the others waited on a lock."""
    root = _shared_root(config)
    directory, made = root / name, root / f"{name}.json"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not made.exists():
            shutil.rmtree(directory, ignore_errors=True)  # a failed attempt's leftovers
            directory.mkdir()
            made.write_text(json.dumps(make(directory)))
        return directory, json.loads(made.read_text())


@pytest.fixture(scope="session")
def postgres_server(tmp_path_factory):
    yield from _running("postgres", tmp_path_factory)


@pytest.fixture(scope="session")
def postgres_one_core(tmp_path_factory):
    """A PostgreSQL of its own confined to CPU 0 (taskset): its processes may use one core."""
    yield from _running("postgres", tmp_path_factory, cpus={0})


@pytest.fixture(scope="module")
def postgres_replica(tmp_path_factory):
    """A PostgreSQL primary with a streaming hot standby that applies each commit 300 ms
    after the primary (deploy/local's postgres-replica-delayed): reads from it under
    writes are stale for certain. Started once per module, both nodes stopped after it."""
    yield from _running("postgres-replica-delayed", tmp_path_factory)


@pytest.fixture(scope="session")
def node_exporter_server(tmp_path_factory):
    """Prometheus' node_exporter on loopback; its "endpoint" is 127.0.0.1:PORT."""
    yield from _running("node-exporter", tmp_path_factory)


@pytest.fixture(scope="session")
def memcached_server(tmp_path_factory):
    yield from _running("memcached", tmp_path_factory)


def fresh_database(postgres_server) -> str:
    """A new empty database on the session's server; its libpq connection string."""
    return servers.new_database(postgres_server)


@pytest.fixture(scope="session")
def mysql_server(tmp_path_factory):
    """MariaDB (Debian's) on loopback, once per session; its server.json record."""
    yield from _running("mysql", tmp_path_factory)


def fresh_mysql_database(mysql_server) -> dict:
    """Store options naming a new empty database on the session's MariaDB."""
    return servers.store_options(mysql_server)


@pytest.fixture(scope="session")
def mongo_wire_server(tmp_path_factory):
    yield from _running("mongo-wire", tmp_path_factory)


@pytest.fixture(scope="session")
def cassandra_server(pytestconfig):
    yield from _shared("cassandra", pytestconfig)


@pytest.fixture(scope="session")
def hbase_server(pytestconfig):
    yield from _shared("hbase", pytestconfig)


@pytest.fixture(scope="session")
def riak_url(request):
    """A real Riak's HTTP URL from BGBENCH_RIAK_URL, else the loopback Riak *emulator*:
    no Riak server can be installed on these machines."""
    if os.environ.get("BGBENCH_RIAK_URL"):
        return os.environ["BGBENCH_RIAK_URL"]
    return request.getfixturevalue("riak_emulator")


@pytest.fixture(scope="session")
def riak_emulator(tmp_path_factory):
    """tests/riak_emulator.py in a process of its own on loopback; its base URL."""
    port = servers.free_port()
    log = tmp_path_factory.mktemp("riak-emulator") / "emulator.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tests.riak_emulator", str(port)],
            cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        servers.wait_for(
            lambda: servers.tcp_answers(port, b"GET /ping HTTP/1.0\r\n\r\n", b"HTTP/1.1 200"),
            "the Riak emulator", 30, alive=lambda: proc.poll() is None,
        )  # fmt: skip
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)
