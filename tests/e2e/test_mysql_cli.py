"""`bgbench run` of EHR and sensor-log on MySQL (the session's MariaDB) end to end: real
agent processes over gRPC, the logs validated clean. The EHR run logs in as a user with a
password, which nothing printed or written holds."""

import json
from functools import partial
from pathlib import Path

from bgbench.coordinator.storage.results import ResultsStore
from bgbench.drivers import mysql
from tests import helpers
from tests.conftest import fresh_mysql_database

bgbench = partial(helpers.bgbench, timeout=300)
SECRET = "My5ql-Pw7x"


def options_args(options: dict) -> list[str]:
    return [arg for k, v in options.items() for arg in ("-p", f"store.options.{k}={v}")]


def test_ehr_runs_on_mysql_as_a_user_with_a_password_that_is_never_written(mysql_server, tmp_path):
    options = fresh_mysql_database(mysql_server)
    with mysql.connect(mysql.MySQLOptions(**options)) as conn:
        cursor = conn.cursor()
        cursor.execute("CREATE USER IF NOT EXISTS 'bench'@'127.0.0.1' IDENTIFIED BY %s", (SECRET,))
        cursor.execute(f"GRANT ALL ON `{options['database']}`.* TO 'bench'@'127.0.0.1'")
    options = {**options, "user": "bench", "password": SECRET}
    proc = bgbench(
        "run", "--workload", "ehr", "--store", "mysql", "--threads", "4", "--duration", "3",
        "--users", "1000", "--results", str(tmp_path), "--json", *options_args(options),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout)
    assert r["store"].startswith("MariaDB 10.") and r["errors"] == 0 and r["fault"] == ""
    per_action = {a["action"]: a["count"] for a in r["per_action"]}
    assert per_action["READ"] > 0 and per_action["WRITE"] > 0
    assert r["reads"] == per_action["READ"] and r["unpredictable_reads"] == 0
    assert SECRET not in proc.stdout + proc.stderr
    [rating] = ResultsStore(tmp_path).ratings()
    stored = json.loads(rating["config_json"])["store"]["options"]
    assert stored["user"] == "bench" and stored["password"] == "***"  # recorded, redacted
    written = [p for p in Path(tmp_path).rglob("*") if p.is_file()]
    assert written and not [p for p in written if SECRET.encode() in p.read_bytes()]


def test_sensorlog_runs_on_mysql_and_validates_clean(mysql_server, tmp_path):
    proc = bgbench(
        "run", "--workload", "sensorlog", "--store", "mysql", "--threads", "4",
        "--duration", "3", "--results", str(tmp_path), "--json",
        "-p", "sensorlog.database.machines=6", "-p", "sensorlog.database.readings=500",
        *options_args(fresh_mysql_database(mysql_server)),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout)
    assert "weak: InnoDB, READ UNCOMMITTED" in r["store"]
    assert r["errors"] == 0 and r["fault"] == ""
    per_action = {a["action"]: a["count"] for a in r["per_action"]}
    assert per_action["INGEST"] > 0 and per_action["Q1"] > 0 and per_action["Q3"] > 0
    assert r["reads"] == per_action["Q1"] + per_action["Q3"] and r["unpredictable_reads"] == 0
