"""bgbench.results.load: the results store as DataFrames, checked against what real ratings
recorded (a model-store rating with noise, and a SQLite rating through a local agent)."""

import json
import math
import sqlite3

import pytest

from bgbench import results
from bgbench.coordinator.storage.frames import (
    ACTION_COLUMNS,
    AGENT_COLUMNS,
    EXPERIMENT_COLUMNS,
    RATING_COLUMNS,
)
from bgbench.coordinator.storage.frames_campaigns import CAMPAIGN_COLUMNS, JOB_COLUMNS
from bgbench.coordinator.storage.results import ResultsStore
from bgbench.errors import UserError
from tests.unit.report_ratings import model_rating, sqlite_rating


@pytest.fixture(scope="module")
def model_store(tmp_path_factory):
    where = tmp_path_factory.mktemp("model")
    summary = model_rating(where, "R1", "model.peak=1e4", "store.options.password=hunter2")
    return where, summary


@pytest.fixture(scope="module")
def sqlite_store(tmp_path_factory):
    where = tmp_path_factory.mktemp("sqlite")
    record = sqlite_rating(where / "results", where)
    assert record.status == "done", record.fault
    return where / "results", record


def test_a_rating_loads_with_its_summary(model_store):
    where, summary = model_store
    r = results.load(where)
    assert list(r.ratings.columns) == list(RATING_COLUMNS)
    row = r.rating("R1")
    assert row["status"] == "done" and row["store"] == "model" and row["workload"] == "bg"
    assert row["soar"] == summary.soar and row["soar_threads"] == summary.soar_threads
    assert (row["soar_low"], row["soar_high"]) == (summary.soar_low, summary.soar_high)
    assert row["soar_low"] < row["soar"] < row["soar_high"]  # noise: a real interval
    assert row["socialites"] == summary.socialites
    assert (row["socialites_low"], row["socialites_high"]) == (
        summary.socialites_low,
        summary.socialites_high,
    )
    assert row["uncertain_threads"] == summary.uncertain_threads
    assert row["alpha"] == 95 and row["beta_ms"] == 100 and row["tau"] == 0.1
    assert row["experiments"] == len(ResultsStore(where).experiments("R1"))


def test_secrets_stay_redacted_when_loaded(model_store):
    where, _ = model_store
    row = results.load(where).rating("R1")
    assert row["config"]["store"]["options"]["password"] == "***"
    assert "hunter2" not in repr(results.load(where).ratings.to_dict())


def test_experiments_match_the_recorded_rows(model_store):
    where, summary = model_store
    r = results.load(where)
    recorded = ResultsStore(where).experiments("R1")
    exps = r.of_rating(r.experiments, "R1")
    assert list(exps.columns) == list(EXPERIMENT_COLUMNS)
    assert list(exps["seq"]) == [e["seq"] for e in recorded]
    assert list(exps["phase"]) == [e["phase"] for e in recorded]
    assert list(exps["threads"]) == [e["threads"] for e in recorded]
    assert list(exps["actions_per_s"]) == [e["actions_per_s"] for e in recorded]
    assert list(exps["passed"]) == [e["status"] == "passed" for e in recorded]
    finals = exps[exps["phase"] == "final"]
    assert set(finals["threads"]) >= {summary.soar_threads}
    with_ci = exps.dropna(subset=["actions_per_s_low"])
    assert not with_ci.empty  # the model store's runs are tested for steadiness
    assert (with_ci["actions_per_s_low"] <= with_ci["actions_per_s"]).all()
    assert (with_ci["actions_per_s"] <= with_ci["actions_per_s_high"]).all()


def test_per_agent_rows_add_up_to_their_experiment(model_store):
    where, _ = model_store
    r = results.load(where)
    assert list(r.per_agent.columns) == list(AGENT_COLUMNS)
    by_exp = r.per_agent.groupby("seq")["actions"].sum()
    for _, e in r.experiments.iterrows():
        assert by_exp[e["seq"]] == e["actions"]
    assert set(r.per_agent["agent"]) == {"model-worker-0", "model-worker-1"}


@pytest.mark.slow
def test_percentiles_come_from_the_merged_histograms(sqlite_store):
    where, record = sqlite_store
    r = results.load(where / "bgbench.sqlite")  # the file names the store too
    exps = r.of_rating(r.experiments, record.rating_id)
    assert len(exps) == len(record.experiments)
    for _, e in exps.iterrows():
        overall = r.result(record.rating_id, int(e["seq"]))["overall"]
        # the coordinator pooled the same agents' histograms: the same percentiles
        assert (e["p50_ms"], e["p95_ms"], e["p99_ms"]) == (
            overall["p50_ms"],
            overall["p95_ms"],
            overall["p99_ms"],
        )
        assert 0 < e["p50_ms"] <= e["p95_ms"] <= e["p99_ms"] <= e["max_ms"]


@pytest.mark.slow
def test_per_action_and_validation_rows_match_the_results(sqlite_store):
    where, record = sqlite_store
    r = results.load(where)
    assert list(r.per_action.columns) == list(ACTION_COLUMNS)
    last = int(r.experiments["seq"].max())
    result = r.result(record.rating_id, last)
    assert r.result(record.rating_id, r.experiments["seq"].max()) == result  # numpy's int too
    actions = r.per_action[r.per_action["seq"] == last]
    assert dict(zip(actions["action"], actions["count"], strict=True)) == {
        a["action"]: a["count"] for a in result["per_action"]
    }
    assert "View Profile" in set(actions["title"])  # the workload's titles, by registry
    valid = r.validation[(r.validation["seq"] == last) & (r.validation["kind"] == "action")]
    assert valid["reads"].sum() == result["reads"]
    agents = r.per_agent[r.per_agent["seq"] == last]
    assert len(agents) == 1 and agents["p95_ms"].iloc[0] > 0


def test_a_store_without_campaign_tables_loads_them_empty(model_store, tmp_path):
    where, _ = model_store
    older = tmp_path / "bgbench.sqlite"  # as written before campaigns existed
    older.write_bytes((where / "bgbench.sqlite").read_bytes())
    with sqlite3.connect(older) as db:
        db.execute("DROP TABLE campaign_jobs")
        db.execute("DROP TABLE campaigns")
    r = results.load(older)
    assert r.campaigns.empty and list(r.campaigns.columns) == list(CAMPAIGN_COLUMNS)
    assert r.campaign_jobs.empty and list(r.campaign_jobs.columns) == list(JOB_COLUMNS)
    assert r.sweep.empty and r.measurements.empty


def test_campaign_rows_load_with_their_foreach_values(tmp_path):
    # Rows written here by hand in the campaign tables' schema (a real campaign is
    # reported in tests/e2e/test_report_browser.py), with a secret in its file's text.
    model_rating(tmp_path, "R1", "model.peak=1e4")
    with sqlite3.connect(tmp_path / "bgbench.sqlite") as db:
        text = 'password = "hunter2"\ndsn = "postgresql://u:hunter2@h/db"\n[foreach]\npeak = [1e4]'
        db.execute(
            "INSERT INTO campaigns VALUES ('C1', 'peaks', 't', 't', 'done', 'c.toml', "
            "?, '0.1.0', '/', '')",
            (text,),
        )
        settings = {"store": {"options": {"password": "hunter2"}}}
        db.execute(
            "INSERT INTO campaign_jobs (campaign_id, seq, label, vars_json, settings_json, "
            "servers_json, rating_id, status, message) "
            "VALUES ('C1', 1, 'peak=1e4', ?, ?, '[]', 'R1', 'done', '')",
            (json.dumps({"peak": 1e4}), json.dumps(settings)),
        )
    r = results.load(tmp_path)
    assert list(r.campaigns["id"]) == ["C1"]
    job = r.campaign_jobs.iloc[0]
    assert job["vars"] == {"peak": 1e4} and job["var.peak"] == 1e4
    assert job["rating_id"] == "R1"
    assert job["settings"]["store"]["options"]["password"] == "***"
    assert r.campaigns["file_text"].iloc[0].splitlines() == [
        'password = "***"',
        'dsn = "postgresql://u:***@h/db"',
        "[foreach]",
        "peak = [1e4]",
    ]


def test_loading_never_creates_a_store(tmp_path):
    with pytest.raises(UserError, match="no results store"):
        results.load(tmp_path / "nowhere")
    assert not (tmp_path / "nowhere").exists()
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match="no results store"):
        results.load(tmp_path / "empty")
    assert list((tmp_path / "empty").iterdir()) == []


def test_an_unknown_rating_is_a_user_error(model_store):
    where, _ = model_store
    with pytest.raises(UserError, match="no rating 'R9'"):
        results.load(where).rating("R9")


def test_a_model_rating_has_no_histograms_and_says_so_with_nan(model_store):
    where, _ = model_store
    r = results.load(where)
    # the model store records a latency summary, no HDR histogram: the summary is used
    e = r.experiments.iloc[-1]
    overall = r.result("R1", int(e["seq"]))["overall"]
    assert math.isclose(e["p95_ms"], overall["p95_ms"])
    assert r.per_agent["p95_ms"].isna().all()
