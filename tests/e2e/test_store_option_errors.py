"""A store option that cannot work is bad input (issue 11, defect 7): `bgbench run` exits 2
with one line naming store.options.path or store.options.dsn and what to do, never 3 as a
fault with a traceback."""

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import servers

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
