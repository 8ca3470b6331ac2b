"""A store option that cannot work is bad input (issue 11, defect 7): `bgbench run` exits 2
with one line naming store.options.path or store.options.dsn and what to do, never 3 as a
fault with a traceback. An unreachable memcached (CASQL) and a MongoDB uri that is not one
are named too (issue 24, item 16)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from pymemcache.client.base import Client

from tests.conftest import fresh_database, servers
from tests.e2e.test_exit_codes import Running, wait_until

SECRET = "pw-" + "n0t-sh0wn" * 3


def run(tmp_path: Path, store: str, option: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable, "-m", "bgbench", "run", "--store", store, "--agents", "1",
            "--threads", "2", "--duration", "1", "--users", "200",
            "--results", str(tmp_path / "results"), "-p", option,
        ],
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip


def the_error_line(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("bgbench:")]
    assert len(lines) == 1, proc.stderr
    return lines[0]


def missing_directory(tmp: Path) -> Path:
    return tmp / "no-such-dir" / "below" / "bg.sqlite"


def under_a_file(tmp: Path) -> Path:
    (tmp / "a-file").write_text("x")
    return tmp / "a-file" / "bg.sqlite"


def not_a_database(tmp: Path) -> Path:
    path = tmp / "notes.txt"
    path.write_text("not a database " * 100)
    return path


@pytest.mark.parametrize(
    ("make_path", "says"),
    [
        (missing_directory, "No such file or directory"),
        (under_a_file, "is not a directory"),
        (lambda tmp: tmp, "unable to open"),
        (not_a_database, "not a database"),
    ],
    ids=["missing-directory", "under-a-file", "a-directory", "not-a-database"],
)
def test_a_bad_sqlite_path_is_named_with_exit_2(tmp_path, make_path, says):
    path = make_path(tmp_path)
    line = the_error_line(run(tmp_path, "sqlite", f"store.options.path={path}"))
    assert "store.options.path" in line and str(path) in line and says in line, line
    assert not (tmp_path / "no-such-dir").exists()  # no directory tree made for a typo


@pytest.mark.parametrize(
    ("dsn", "says"),
    [
        ("not a dsn", "not a libpq connection string"),
        (f"host=127.0.0.1 port={servers.free_port()} user=bg password={SECRET} dbname=bg",
         "cannot reach PostgreSQL"),
        (f"postgresql://bg:{SECRET}@127.0.0.1:{servers.free_port()}/bg", "cannot reach"),
    ],
    ids=["not-a-dsn", "nothing-listens", "url-nothing-listens"],
)  # fmt: skip
def test_a_bad_postgres_dsn_is_named_with_exit_2(tmp_path, dsn, says):
    proc = run(tmp_path, "postgres", f"store.options.dsn={dsn}")
    line = the_error_line(proc)
    assert "store.options.dsn" in line and says in line, line
    assert SECRET not in proc.stderr + proc.stdout  # the password is never printed


def test_a_database_that_does_not_exist_is_named_with_exit_2(tmp_path, postgres_server):
    dsn = f"host=127.0.0.1 port={postgres_server['port']} user=postgres dbname=no_such_db"
    line = the_error_line(run(tmp_path, "postgres", f"store.options.dsn={dsn}"))
    assert "store.options.dsn" in line and "no_such_db" in line, line


def casql_run(tmp_path: Path, postgres_server: dict, memcached: str, *extra: str) -> list[str]:
    return [
        "run", "--store", "casql", "--agents", "1", "--threads", "2", "--users", "200",
        "--results", str(tmp_path / "results"), "-p", "agents.heartbeat_timeout=60",
        "-p", f"store.options.dsn={fresh_database(postgres_server)}",
        "-p", f"store.options.memcached={memcached}", *extra,
    ]  # fmt: skip


def test_casql_with_memcached_unreachable_names_memcached_and_its_address(
    tmp_path, postgres_server
):
    """Issue 24, item 16: it said only "ConnectionRefusedError" (exit 3)."""
    address = f"127.0.0.1:{servers.free_port()}"
    args = casql_run(tmp_path, postgres_server, address, "--duration", "1")
    proc = subprocess.run(
        [sys.executable, "-m", "bgbench", *args], capture_output=True, text=True, timeout=300
    )
    line = the_error_line(proc)  # the user's setting, as PostgreSQL's dsn at first contact
    assert "store.options.memcached" in line and f"cannot reach memcached at {address}" in line


def test_casql_losing_memcached_mid_run_is_a_fault_naming_memcached(tmp_path, postgres_server):
    mc = servers.start("memcached", tmp_path / "mc")
    try:
        address = f"127.0.0.1:{mc['port']}"
        args = casql_run(tmp_path, postgres_server, address, "--duration", "300", "--json")
        with Running(args) as run:
            stats = Client(("127.0.0.1", mc["port"]), timeout=10)
            wait_until(lambda: int(stats.stats()[b"get_hits"]) > 100, "reads from the cache")
            stats.close()
            servers.stop(tmp_path / "mc")
            code, out, err = run.finish(timeout=240)
    finally:
        servers.stop(tmp_path / "mc")
    assert code == 3, err
    assert "Traceback" not in err
    assert f"memcached at {address}" in json.loads(out)["fault"]


def mongodb_run(tmp_path: Path, workload: str, uri: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable, "-m", "bgbench", "run", "--workload", workload, "--store", "mongodb",
            "--agents", "1", "--threads", "2", "--duration", "1",
            "--results", str(tmp_path / "results"), "-p", f"store.options.uri={uri}",
        ],
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip


@pytest.mark.parametrize("workload", ["bg", "ehr", "sensorlog"])
@pytest.mark.parametrize(
    ("uri", "says"),
    [
        ("notauri", "no mongodb:// or mongodb+srv:// scheme"),
        (f"mongodb://bg:{SECRET}@127.0.0.1:99999/", "Port must be an integer"),
        ("mongodb://127.0.0.1/?nosuchoption=1", "Unknown option"),
    ],
    ids=["no-scheme", "bad-port", "bad-option"],
)
def test_a_bad_mongodb_uri_is_named_with_exit_2(tmp_path, workload, uri, says):
    """Issue 24, item 16: `uri=notauri` was taken as a host name and the run ended on
    "no load progress ... creating the schema"."""
    proc = mongodb_run(tmp_path, workload, uri)
    line = the_error_line(proc)
    assert "store.options.uri: not a MongoDB URI" in line and says in line, line
    assert SECRET not in proc.stderr + proc.stdout


def test_mongodb_unreachable_names_its_servers_never_the_password(tmp_path):
    """The message named the whole uri, password included, and the selection's topology."""
    port = servers.free_port()
    proc = subprocess.run(
        [
            sys.executable, "-m", "bgbench", "run", "--store", "mongodb", "--agents", "1",
            "--threads", "2", "--duration", "1", "--users", "200", "--json",
            "--results", str(tmp_path / "results"), "-p", "agents.heartbeat_timeout=60",
            "-p", f"store.options.uri=mongodb://bg:{SECRET}@127.0.0.1:{port}/",
            "-p", "store.options.timeout_ms=1000",
        ],
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert proc.returncode == 3, proc.stderr
    fault = json.loads(proc.stdout)["fault"]
    assert f"cannot reach MongoDB at mongodb://127.0.0.1:{port}: " in fault, fault
    assert "Topology" not in fault
    assert SECRET not in proc.stderr + proc.stdout
