"""The results store knows workloads: recorded with each rating and experiment, and a
store written before workloads had names is migrated in place when opened."""

import json
import sqlite3

from bgbench.coordinator.storage.results import DB_NAME, ResultsStore

OLD_SCHEMA = """
CREATE TABLE ratings (
    id TEXT PRIMARY KEY, created TEXT NOT NULL, updated TEXT NOT NULL, status TEXT NOT NULL,
    objective TEXT NOT NULL, store TEXT NOT NULL, config_json TEXT NOT NULL,
    hosts_json TEXT NOT NULL DEFAULT '[]', versions_json TEXT NOT NULL DEFAULT '{}',
    soar REAL, soar_threads INTEGER, socialites INTEGER, summary_json TEXT,
    message TEXT NOT NULL DEFAULT '');
CREATE TABLE experiments (
    rating_id TEXT NOT NULL REFERENCES ratings(id), seq INTEGER NOT NULL, phase TEXT NOT NULL,
    threads INTEGER NOT NULL, duration_s REAL NOT NULL, status TEXT NOT NULL,
    actions_per_s REAL NOT NULL, within_percent REAL NOT NULL,
    unpredictable_percent REAL NOT NULL, reasons TEXT NOT NULL, result_json TEXT NOT NULL,
    created TEXT NOT NULL, PRIMARY KEY (rating_id, seq));
"""
OLD_CONFIG = {"bg": {"database": {"usercount": 777}}, "store": {"name": "sqlite"}}


def test_an_old_results_store_is_migrated_in_place(tmp_path):
    db = sqlite3.connect(tmp_path / DB_NAME)
    db.executescript(OLD_SCHEMA)
    db.execute(
        "INSERT INTO ratings (id, created, updated, status, objective, store, config_json) "
        "VALUES ('r1', 'then', 'then', 'done', 'soar', 'sqlite', ?)",
        (json.dumps(OLD_CONFIG),),
    )
    db.execute(
        "INSERT INTO experiments VALUES ('r1', 1, 'search', 4, 2.0, 'passed', 100.0, 99.0, 0.0,"
        " '', '{}', 'then')"
    )
    db.commit()
    db.close()

    store = ResultsStore(tmp_path)

    rating = store.rating("r1")
    assert rating["workload"] == "bg"
    assert json.loads(rating["workload_config_json"]) == OLD_CONFIG["bg"]
    assert rating["cwd"] is None  # the earlier migration still runs
    [experiment] = store.experiments("r1")
    assert experiment["workload"] == "bg"
    assert json.loads(experiment["workload_config_json"])["database"]["usercount"] == 777
    assert experiment["actions_per_s"] == 100.0  # nothing recorded was lost
    ResultsStore(tmp_path)  # opening it again migrates nothing twice
    assert store.rating("r1")["workload"] == "bg"


def test_a_rating_records_the_workload_its_settings_name(tmp_path):
    store = ResultsStore(tmp_path)
    config = {"workload": {"name": "kv"}, "kv": {"keys": 50}, "store": {"name": "sqlite"}}
    store.start_rating("r2", "soar", "sqlite", json.dumps(config))
    rating = store.rating("r2")
    assert rating["workload"] == "kv"
    assert json.loads(rating["workload_config_json"]) == {"keys": 50}
