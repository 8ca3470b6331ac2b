"""The example plugin (examples/bank), installed as a distribution the way its README says,
runs end to end on real SQLite and PostgreSQL, validates clean, and its validation
catches a binding that lies.

The distribution is installed into this module's own directory (pip --target) and put on
the PYTHONPATH of the processes started here only: the shared environment, whose
workloads other tests list, never sees it. Beside it, a second distribution registers
broken bindings (subclasses of the example's) under other store names.
"""

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import fresh_database
from tests.fixtures.registration import register

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "bank"
LINE_BUDGET = 350  # every .py line of the example, its bindings included


def allowed(module: str) -> bool:
    """All the example may import of bgbench: the SDK."""
    return module == "bgbench.sdk" or module.startswith("bgbench.sdk.")


# Broken bindings. "sqlite-boasting" answers that it moved the money also when it refused
# to: the workload logs the transfer, the store never made it. "postgres-forgetful"
# acknowledges a new limit and keeps the old one.
BROKEN = """
from bgbench_bank.stores import PostgresBinding, SQLConnection, SQLiteBinding


class Boasting(SQLConnection):
    def transfer(self, source, target, amount):
        super().transfer(source, target, amount)
        return True


class Forgetful(SQLConnection):
    def set_limit(self, account, limit):
        pass


class BoastingSQLite(SQLiteBinding):
    name = "sqlite-boasting"

    def connect(self):
        conn = super().connect()
        return Boasting(conn.conn, conn.parameter)


class ForgetfulPostgres(PostgresBinding):
    name = "postgres-forgetful"

    def connect(self):
        conn = super().connect()
        return Forgetful(conn.conn, conn.parameter)
"""
BROKEN_ENTRY_POINTS = {
    "bgbench.bank_stores": {
        "sqlite-boasting": "bank_broken:BoastingSQLite",
        "postgres-forgetful": "bank_broken:ForgetfulPostgres",
    }
}


def example_sources() -> list[Path]:
    return sorted(p for p in EXAMPLE.rglob("*.py") if not {"build", "__pycache__"} & set(p.parts))


@pytest.fixture(scope="module")
def bank_env(tmp_path_factory) -> dict[str, str]:
    """The environment of a process that sees the installed example (and the broken
    bindings): `pip install` of a copy of examples/bank (so no build files land in the
    repository) into a directory of its own."""
    where = tmp_path_factory.mktemp("bank")
    source, target = where / "source", where / "site"
    shutil.copytree(EXAMPLE, source, ignore=shutil.ignore_patterns("build", "*.egg-info"))
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation"]
    proc = subprocess.run(
        [*pip, "--target", str(target), str(source)], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    (target / "bank_broken.py").write_text(BROKEN)
    register(target, "bankbroken", BROKEN_ENTRY_POINTS)
    paths = [str(target), os.environ.get("PYTHONPATH", "")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}


def bgbench(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bgbench", *args],
        capture_output=True, text=True, timeout=300, env=env, check=False,
    )  # fmt: skip


def bank_run(env: dict[str, str], tmp: Path, store: str, *options: str) -> dict:
    proc = bgbench(
        env, "run", "--workload", "bank", "--store", store, "--agents", "2", "--threads", "4",
        "--duration", "3", "--users", "40", "--results", str(tmp / "results"), "--json",
        *options,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    result: dict = json.loads(proc.stdout)
    assert result["fault"] == "" and result["errors"] == 0, result["fault"]
    return result


def sqlite_options(tmp: Path) -> list[str]:
    return ["-p", f"store.options.path={tmp / 'bank.sqlite'}"]


def postgres_options(request: pytest.FixtureRequest) -> list[str]:
    return ["-p", f"store.options.dsn={fresh_database(request.getfixturevalue('postgres_server'))}"]


def assert_clean(r: dict) -> None:
    """Every action and the session played, every read explained by the logged writes."""
    assert {a["action"] for a in r["per_action"]} == {"VB", "DEP", "XFER", "LIMIT"}
    assert set(r["per_unit"]) == {"VB", "DEP", "XFER", "LIMIT", "PAY"}
    assert r["reads"] > 0 and r["unpredictable_reads"] == 0
    assert set(r["by_item"]) == {"account balance", "transfer limit"}


def bgbench_imports(source: str) -> list[tuple[int, str]]:
    """(line, module) of every import of bgbench in Python source."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            bare = node.module == "bgbench"  # from bgbench import sdk
            names = [f"bgbench.{a.name}" if bare else node.module for a in node.names]
        else:
            continue
        found += [(node.lineno, n) for n in names if n == "bgbench" or n.startswith("bgbench.")]
    return found


def test_the_import_check_sees_every_form_of_import():
    source = (
        "import bgbench.worker\nfrom bgbench import sdk, errors\nfrom bgbench.sdk import Timer\n"
    )
    assert [name for _, name in bgbench_imports(source)] == [
        "bgbench.worker", "bgbench.sdk", "bgbench.errors", "bgbench.sdk"
    ]  # fmt: skip


def test_the_example_is_small_and_imports_only_the_sdk():
    sources = example_sources()
    assert {p.name for p in sources} >= {"workload.py", "stores.py"}
    lines = sum(len(p.read_text().splitlines()) for p in sources)
    assert lines <= LINE_BUDGET, f"the example has {lines} lines"
    forbidden = [
        f"{p.name}:{line} imports {name}"
        for p in sources
        for line, name in bgbench_imports(p.read_text())
        if not allowed(name)
    ]
    assert forbidden == []


def test_the_installed_example_is_listed_with_its_bindings(bank_env):
    proc = bgbench(bank_env, "stores", "--workload", "bank")
    assert proc.returncode == 0, proc.stderr
    assert "sqlite" in proc.stdout and "postgres" in proc.stdout


def test_a_run_on_sqlite_validates_clean_and_again_from_its_logs(bank_env, tmp_path):
    r = bank_run(bank_env, tmp_path, "sqlite", *sqlite_options(tmp_path))
    assert "SQLite" in r["store"]
    assert_clean(r)
    proc = bgbench(bank_env, "validate", str(tmp_path / "results"), "--json")
    assert proc.returncode == 0, proc.stderr
    again = json.loads(proc.stdout)
    assert again["reads"] == r["reads"] and again["unpredictable_reads"] == 0


def test_a_rating_on_postgres_carries_its_picture_and_validates_clean(bank_env, tmp_path, request):
    """Every experiment of a rating after the first starts from the picture the fragments
    carried over (rating.state carry): their reads validate against it."""
    proc = bgbench(
        bank_env, "rate", "--workload", "bank", "--store", "postgres", "--agents", "2",
        "--delta-search", "1", "--delta", "1", "--max-threads", "16", "--users", "50",
        "--results", str(tmp_path / "results"), "--json", "-p", "rating.final_runs=2",
        *postgres_options(request),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["experiments_run_now"] >= 3
    proc = bgbench(bank_env, "validate", str(tmp_path / "results"), "--json")
    assert proc.returncode == 0, proc.stderr
    v = json.loads(proc.stdout)
    assert v["experiments_validated"] >= 3 and v["reads"] > 0 and v["unpredictable_reads"] == 0
    assert {item: n["unpredictable"] for item, n in v["by_item"].items()} == {
        "account balance": 0,
        "transfer limit": 0,
    }


def test_validation_catches_a_store_that_boasts_of_refused_transfers(bank_env, tmp_path):
    r = bank_run(bank_env, tmp_path, "sqlite-boasting", *sqlite_options(tmp_path))
    assert r["by_item"]["account balance"]["unpredictable"] > 0
    assert r["by_item"]["transfer limit"]["unpredictable"] == 0


def test_validation_catches_a_store_that_forgets_limits(bank_env, tmp_path, request):
    r = bank_run(bank_env, tmp_path, "postgres-forgetful", *postgres_options(request))
    assert r["by_item"]["transfer limit"]["unpredictable"] > 0


def test_too_few_groups_for_the_threads_is_one_clear_line(bank_env, tmp_path):
    proc = bgbench(
        bank_env, "run", "--workload", "bank", "--store", "sqlite", "--agents", "2",
        "--threads", "2", "--users", "1", "--results", str(tmp_path / "results"),
        *sqlite_options(tmp_path),
    )  # fmt: skip
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "raise bank.groups" in lines[0], proc.stderr
