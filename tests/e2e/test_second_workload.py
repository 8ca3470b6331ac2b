"""A second workload, registered by the test setup only, runs end to end through real
agents with validation, and through a rating recorded in the results store.

The workload (tests/fixtures/kvworkload: counters read by GET, incremented by PUT, with
a SQLite binding) is installed as real entry points (a dist-info directory on the
PYTHONPATH of the processes started here): bgbench itself names it nowhere.
"""

import json
import subprocess
from pathlib import Path

import pytest

from bgbench.coordinator.storage.results import ResultsStore
from tests.fixtures.registration import KV_ENTRY_POINTS, environment, register
from tests.helpers import bgbench


@pytest.fixture(scope="module")
def kv_env(tmp_path_factory) -> dict[str, str]:
    return environment(register(tmp_path_factory.mktemp("dist"), "kvfixture", KV_ENTRY_POINTS))


def kv_run(env: dict[str, str], tmp: Path, *extra: str) -> subprocess.CompletedProcess:
    return bgbench(
        "run", "--workload", "kv", "--store", "sqlite", "--agents", "2", "--threads", "4",
        "--duration", "2", "--results", str(tmp), "--json", "-p", "kv.keys=2000",
        "-p", f"store.options.path={tmp / 'kv.sqlite'}", *extra, env=env,
    )  # fmt: skip


def test_the_key_value_workload_runs_through_real_agents_and_is_validated(kv_env, tmp_path):
    proc = kv_run(kv_env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout)
    assert r["fault"] == "", r["fault"]
    assert len(r["agents"]) == 2
    assert {a["action"] for a in r["per_action"]} == {"GET", "PUT"}
    assert r["reads"] > 0 and r["unpredictable_reads"] == 0 and r["errors"] == 0
    assert r["by_item"]["counter value"]["reads"] == r["reads"]
    assert set(r["per_unit"]) == {"GET", "PUT"}
    assert all(a["log_records_written"] == a["log_records_read"] for a in r["agents"])
    [rating] = ResultsStore(tmp_path).ratings()
    assert rating["workload"] == "kv"
    assert json.loads(rating["workload_config_json"])["keys"] == 2000
    assert {e["workload"] for e in ResultsStore(tmp_path).experiments(rating["id"])} == {"kv"}


def test_the_validator_catches_a_store_that_answers_wrong_values(kv_env, tmp_path):
    proc = kv_run(kv_env, tmp_path, "-p", "store.options.lie_every=10")
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout)
    assert r["reads"] > 0
    # Every tenth GET answered one more than stored: a value no read could legitimately see.
    assert r["unpredictable_reads"] >= r["reads"] // 20, (r["reads"], r["unpredictable_reads"])


def test_a_rating_of_the_key_value_workload(kv_env, tmp_path):
    proc = bgbench(
        "rate", "--workload", "kv", "--store", "sqlite", "--agents", "2",
        "--delta-search", "1", "--delta", "1", "--max-threads", "16", "--results", str(tmp_path),
        "--json", "-p", "kv.keys=500", "-p", f"store.options.path={tmp_path / 'kv.sqlite'}",
        "-p", "rating.final_runs=2", env=kv_env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    s = json.loads(proc.stdout)
    rows = ResultsStore(tmp_path).experiments(s["rating_id"])
    assert rows and {e["workload"] for e in rows} == {"kv"}
    for e in rows:
        result = json.loads(e["result_json"])
        assert {a["action"] for a in result["per_action"]} <= {"GET", "PUT"}
        assert result["unpredictable_reads"] == 0


def test_an_unknown_workload_is_one_clear_line(kv_env, tmp_path):
    proc = bgbench("run", "--workload", "nosuch", "--results", str(tmp_path), env=kv_env)
    assert proc.returncode == 2
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "unknown workload 'nosuch'" in lines[0], proc.stderr
    assert "kv" in lines[0] and "bg" in lines[0]  # it lists what is installed


def test_bindings_are_listed_by_workload(kv_env):
    proc = bgbench("stores", env=kv_env)
    assert proc.returncode == 0, proc.stderr
    assert "kv" in proc.stdout and "bg" in proc.stdout
