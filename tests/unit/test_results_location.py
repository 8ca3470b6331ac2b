"""What --results names (coordinator/storage/location.py): a directory, or a PostgreSQL
store's URL checked and shown with its password redacted; a URL handed to a subprocess
without its password on the command line; a missing psycopg named by its extra."""

import subprocess
import sys
from pathlib import Path

import pytest

from bgbench.coordinator.configuration.redaction import redact_config
from bgbench.coordinator.storage.location import (
    ResultsURL,
    for_child,
    location,
    results_url,
)
from bgbench.coordinator.storage.pg import PG_SCHEMA
from bgbench.errors import UserError


def test_a_directory_stays_a_path_and_a_url_becomes_a_store():
    assert location(None) == Path("results")
    assert location("some/dir") == Path("some/dir")
    url = location("postgresql://bench@db.example:5432/bgbench?sslmode=require")
    assert isinstance(url, ResultsURL) and url.dsn.endswith("?sslmode=require")
    assert isinstance(location("postgres://bench@db/x"), ResultsURL)


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("mysql://u@h/db", "scheme 'mysql' is not a results store"),
        ("sqlite:///tmp/x.sqlite", "scheme 'sqlite'"),
        ("postgresql:///db", "no host"),
        ("postgresql://u@h", "name one database"),
        ("postgresql://u@h/a/b", "name one database"),
        ("postgresql://u@h:notaport/db", "not a URL"),
        ("postgresql://u@h:0/db", "port 0"),
        ("postgresql://u@h/d b", "white space"),
    ],
)
def test_a_bad_url_is_one_line_naming_what_is_wrong(value, reason):
    with pytest.raises(UserError, match=reason) as bad:
        results_url(value)
    assert "\n" not in str(bad.value) and str(bad.value).startswith(f"--results {value[:5]}")


def test_the_password_is_redacted_wherever_the_url_is_shown():
    url = results_url("postgresql://bench:pa%40ss@db:5432/bgbench")
    assert "pa%40ss" not in str(url) and "pa%40ss" not in repr(url) and "***" in str(url)
    with pytest.raises(UserError) as bad:
        results_url("ftp://bench:hunter2@db/x")
    assert "hunter2" not in str(bad.value)
    recorded = redact_config({"results": {"url": url.dsn}, "agents": {}, "store": {}})
    assert recorded["results"]["url"] == "postgresql://bench:***@db:5432/bgbench"


def test_a_subprocess_gets_the_password_in_its_environment_not_its_argv():
    arg, env = for_child(results_url("postgresql://bench:pa%40ss@db:5432/bgbench?x=1"))
    assert arg == "postgresql://bench@db:5432/bgbench?x=1" and env == {"PGPASSWORD": "pa@ss"}
    assert for_child(results_url("postgresql://bench@db/b")) == ("postgresql://bench@db/b", {})
    assert for_child(Path("/r")) == ("/r", {})


def test_postgres_tables_hold_what_sqlite_ones_do():
    assert " REAL" not in PG_SCHEMA and "DOUBLE PRECISION" in PG_SCHEMA
    assert "REFERENCES" not in PG_SCHEMA  # SQLite does not enforce them either
    assert 'TEXT COLLATE "C"' in PG_SCHEMA  # listed in the same order as from SQLite


def test_without_psycopg_a_url_names_the_extra_to_install(tmp_path):
    code = (
        "import sys, runpy; sys.modules['psycopg'] = None; "
        "sys.argv = ['bgbench', 'results', '--results', 'postgresql://u@127.0.0.1:9/db']; "
        "runpy.run_module('bgbench', run_name='__main__')"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        "bgbench: error: a postgresql:// results store needs the 'postgres' extra, not "
        "installed here (missing: psycopg): pip install 'bgbench[postgres]'"
    ]
