"""A results store as untrusted input, through the real CLI (issue 24, items 11 and 13):
a store from a newer bgbench is refused before anything in it changes; a damaged store,
a row that is not JSON, a file that is not SQLite, a FIFO, a results directory that is a
file: one line naming the file (and the row), exit 2, no traceback, nothing hangs."""

import hashlib
import os
import shutil
import sqlite3
from functools import partial
from pathlib import Path

import pytest

from tests import helpers
from tests.unit.report_ratings import model_rating

DB = "bgbench.sqlite"
NEWER = 1000  # a schema version no bgbench has written yet


bgbench = partial(helpers.bgbench, timeout=120)


def refused(*args: str) -> str:
    """The one line a refused command prints (exit 2, no traceback)."""
    proc = bgbench(*args)
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    line = proc.stderr.strip()
    assert "\n" not in line and "Traceback" not in line, proc.stderr
    return line


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    """A results directory holding one real (model-store) rating, R1."""
    where = tmp_path_factory.mktemp("recorded") / "results"
    model_rating(where, "R1", "model.peak=1e4")
    return where


@pytest.fixture
def store(recorded, tmp_path) -> Path:
    """A copy of the recorded results directory to damage."""
    copy = tmp_path / "results"
    shutil.copytree(recorded, copy)
    return copy


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_store_from_a_newer_bgbench_is_refused_untouched(store):
    # What a newer bgbench might write: a later schema marker, and a table whose columns
    # this one would "migrate" (before: ALTER TABLE, then "duplicate column name").
    with sqlite3.connect(store / DB) as db:
        db.execute("ALTER TABLE ratings RENAME COLUMN workload TO workload_name")
        db.execute(f"PRAGMA user_version = {NEWER}")
    db.close()
    before = digest(store / DB)
    newer = f"made by a newer bgbench (schema {NEWER} > "
    for args in (
        ["results"],
        ["results", "show", "R1"],
        ["results", "export", "R1", "--format", "json", "-o", str(store.parent / "R1.json")],
        ["report", "R1", "-o", str(store.parent / "R1.html")],
        ["rate", "--store", "model", "--max-threads", "2"],
    ):
        line = refused(*args, "--results", str(store))
        assert newer in line and str(store / DB) in line, line
    assert digest(store / DB) == before
    assert sorted(p.name for p in store.iterdir()) == [DB]  # no journal, nothing new


def test_a_store_this_bgbench_wrote_is_marked_with_its_schema(recorded):
    from bgbench.coordinator.storage.store_file import SCHEMA_VERSION

    with sqlite3.connect(f"file:{recorded / DB}?mode=ro", uri=True) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    db.close()


def test_damaged_pages_are_one_line(store):
    page = 4096
    with sqlite3.connect(store / DB) as db:
        page = db.execute("PRAGMA page_size").fetchone()[0]
    db.close()
    data = bytearray((store / DB).read_bytes())
    assert len(data) > 4 * page
    data[page : len(data)] = bytes((i * 37 + 11) % 256 for i in range(len(data) - page))
    (store / DB).write_bytes(bytes(data))
    for args in (
        ["results"],
        ["results", "show", "R1"],
        ["report", "R1", "-o", str(store.parent / "x.html")],
    ):
        line = refused(*args, "--results", str(store))
        assert str(store / DB) in line and "damaged" in line, line


@pytest.mark.parametrize(
    ("table", "column", "where"),
    [
        ("ratings", "config_json", "id = 'R1'"),
        ("ratings", "summary_json", "id = 'R1'"),
        ("experiments", "result_json", "rating_id = 'R1' AND seq = 2"),
    ],
)
def test_a_row_that_is_not_json_is_one_line_naming_it(store, tmp_path, table, column, where):
    with sqlite3.connect(store / DB) as db:
        db.execute(f"UPDATE {table} SET {column} = '{{not json' WHERE {where}")
    db.close()
    for args in (
        ["results", "show", "R1"],
        ["report", "R1", "-o", str(tmp_path / "R1.html")],
        ["results", "export", "R1", "--format", "json", "-o", str(tmp_path / "R1.json")],
    ):
        line = refused(*args, "--results", str(store))
        assert str(store / DB) in line and "R1" in line and table in line, line
        assert column in line or "not JSON" in line or "does not hold" in line, line


def test_a_file_that_is_not_sqlite_is_one_line(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    (results / DB).write_bytes(b"not a database at all\n" * 500)
    before = digest(results / DB)
    for args in (["results"], ["report", "R1", "-o", str(tmp_path / "R1.html")]):
        line = refused(*args, "--results", str(results))
        assert str(results / DB) in line and "not a bgbench results store" in line, line
    assert digest(results / DB) == before


def test_a_fifo_as_the_store_is_refused_not_waited_on(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    os.mkfifo(results / DB)
    for args in (
        ["results"],
        ["results", "show", "R1"],
        ["report", "R1", "-o", str(tmp_path / "R1.html")],
        ["rate", "--store", "model", "--max-threads", "2"],
    ):
        line = refused(*args, "--results", str(results))  # a hang would time out
        assert f"results store {results / DB} is a FIFO" in line, line


def test_a_results_directory_that_is_a_file_is_one_line(tmp_path):
    file = tmp_path / "results"
    file.write_text("a file\n")
    for args in (
        ["results"],
        ["results", "show", "R1"],
        ["report", "R1", "-o", str(tmp_path / "x.html")],
    ):
        line = refused(*args, "--results", str(file))
        assert str(file) in line and "is a file" in line, line
