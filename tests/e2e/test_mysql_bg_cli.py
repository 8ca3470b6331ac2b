"""BG on MySQL end to end: `bgbench run` and `bgbench rate --store mysql` through real
agent processes against deploy/local's MariaDB, their logs validated."""

import json

from bgbench.coordinator.storage.results import ResultsStore
from tests.conftest import fresh_mysql_database
from tests.helpers import bgbench


def store_args(options: dict) -> list[str]:
    return [arg for key, value in options.items() for arg in ("-p", f"store.options.{key}={value}")]


def test_a_run_with_every_action_validates_clean(tmp_path, mysql_server):
    """The high-update mix, so each of BG's writes runs against the validator."""
    proc = bgbench(
        "run", "--workload", "bg", "--store", "mysql", "--agents", "1", "--threads", "4",
        "--duration", "3", "--mix", "high", "--users", "400", "--results", str(tmp_path),
        "--json", *store_args(fresh_mysql_database(mysql_server)),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout)
    assert r["store"].startswith("MariaDB 10.") and r["fault"] == ""
    assert r["errors"] == 0 and r["actions_per_s"] > 0
    per_action = {a["action"]: a["count"] for a in r["per_action"]}
    assert per_action.keys() >= {"VP", "LF", "VFR", "VTR", "IF", "TF"}  # reads and writes
    assert r["reads"] > 0 and r["unpredictable_reads"] == 0
    for agent in r["agents"]:
        assert agent["log_records_written"] == agent["log_records_read"] > 0


def test_a_rating_on_mysql_has_a_soar_and_every_experiment_validates(tmp_path, mysql_server):
    proc = bgbench(
        "rate", "--workload", "bg", "--store", "mysql", "--agents", "1", "--users", "400",
        "--delta-search", "1", "--delta", "1.5", "--max-threads", "16", "--results",
        str(tmp_path), "--json", "-p", "sla.beta_ms=20", "-p", "rating.final_runs=1",
        *store_args(fresh_mysql_database(mysql_server)),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    s = json.loads(proc.stdout)
    assert s["store"] == "mysql" and s["soar"] > 0 and 1 <= s["soar_threads"] <= 16
    rows = ResultsStore(tmp_path).experiments(s["rating_id"])
    assert rows and {r["phase"] for r in rows} == {"search", "final"}
    for row in rows:
        result = json.loads(row["result_json"])
        assert result["store"].startswith("MariaDB") and result["unpredictable_reads"] == 0
