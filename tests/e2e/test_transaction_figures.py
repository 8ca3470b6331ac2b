"""A transaction's figures end to end: the key-value fixture's TXN (a read-modify-write of
a counter through ctx.transaction, tests/fixtures/kvworkload) runs through a real agent on
SQLite whose binding refuses every second attempt of a connection as a conflict. Its
commits, aborts, retries and back-off reach `bgbench run --json`, the results store and
the HTML report, per interaction; and the retry policy, a setting, changes what is
measured: with one attempt the refused transactions give up, with five they retry."""

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from bgbench import results
from bgbench.coordinator.storage.results import ResultsStore
from tests.fixtures.registration import KV_ENTRY_POINTS, environment, register
from tests.helpers import bgbench

BACKOFF_MS = 0.5  # the policy's fixed wait before every retry (no jitter)


@pytest.fixture(scope="module")
def kv_env(tmp_path_factory) -> dict[str, str]:
    return environment(register(tmp_path_factory.mktemp("dist"), "kvfixture", KV_ENTRY_POINTS))


def txn_run(env: dict[str, str], tmp: Path, attempts: int) -> subprocess.CompletedProcess[str]:
    policy = {"attempts": attempts, "base_ms": BACKOFF_MS, "jitter": "none"}
    return bgbench(
        "run", "--workload", "kv", "--store", "sqlite", "--agents", "1", "--threads", "2",
        "--duration", "2", "--results", str(tmp), "--json", "-p", "kv.keys=200",
        "-p", 'kv.mix={"GET": 1, "TXN": 3}', "-p", f"kv.retry={json.dumps(policy)}",
        "-p", f"store.options.path={tmp / 'kv.sqlite'}", "-p", "store.options.conflict_every=2",
        env=env,
    )  # fmt: skip


def per_action(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {a["action"]: a for a in result["per_action"]}


@pytest.fixture(scope="module")
def retried(kv_env, tmp_path_factory) -> tuple[Path, dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("retried")
    proc = txn_run(kv_env, tmp, attempts=5)
    assert proc.returncode == 0, proc.stderr
    return tmp, json.loads(proc.stdout)


def test_commits_aborts_retries_and_back_off_reach_the_json(retried):
    _, r = retried
    assert r["fault"] == "" and r["unpredictable_reads"] == 0 and r["reads"] > 0
    actions = per_action(r)
    assert actions["GET"]["counts"] == {} and actions["GET"]["transactions"] is None
    txn = actions["TXN"]
    counts = txn["counts"]
    # Each connection refuses its every second attempt: a refused transaction retries once
    # and commits (but one the run's end cut short in its back-off, per runner).
    assert counts["commits"] > 0 and counts["retries"] > 0
    assert counts["retries"] <= counts["aborts_conflict"] <= counts["retries"] + 2
    assert "gave_up" not in counts and "unknown" not in counts and txn["errors"] == 0
    assert counts["backoff_us"] >= 1000 * BACKOFF_MS * counts["retries"]
    figures = txn["transactions"]
    assert figures["commits"] == counts["commits"] and figures["gave_up"] == 0
    assert figures["retries_per_commit"] == pytest.approx(counts["retries"] / counts["commits"])
    assert figures["backoff_ms_per_commit"] >= BACKOFF_MS * figures["retries_per_commit"]


def test_the_results_store_keeps_them_per_interaction(retried):
    tmp, r = retried
    [rating] = ResultsStore(tmp).ratings()
    [row] = ResultsStore(tmp).experiments(rating["id"])
    stored = per_action(json.loads(row["result_json"]))
    assert stored["TXN"]["counts"] == per_action(r)["TXN"]["counts"]
    frame = results.load(tmp).per_action.set_index("action")
    assert frame.loc["TXN", "commits"] == per_action(r)["TXN"]["counts"]["commits"]
    assert frame.loc["TXN", "aborts_conflict"] > 0 and frame.loc["TXN", "gave_up"] == 0
    assert pd.isna(frame.loc["GET", "commits"])  # no transaction


def test_the_html_report_has_a_transactions_table(retried, tmp_path):
    tmp, r = retried
    [rating] = ResultsStore(tmp).ratings()
    page = tmp_path / "run.html"
    proc = bgbench("report", rating["id"], "--results", str(tmp), "-o", str(page))
    assert proc.returncode == 0, proc.stderr
    text = page.read_text()
    section = re.search(r'<h2 id="transactions">Transactions</h2>(.*?)</table>', text, re.S)
    assert section, "no Transactions section"
    table = section.group(1)
    for header in ("commits", "aborts: conflict", "retries per commit", "back-off ms per commit",
                   "gave up", "unknown"):  # fmt: skip
        assert f"<th>{header}</th>" in table, header
    commits = per_action(r)["TXN"]["counts"]["commits"]
    assert f"<td>{commits}</td>" in table
    assert "<td>GET</td>" not in table  # only interactions that ran transactions


def test_one_attempt_gives_up_where_five_retry(kv_env, retried, tmp_path):
    proc = txn_run(kv_env, tmp_path, attempts=1)
    assert proc.returncode == 0, proc.stderr
    once = per_action(json.loads(proc.stdout))["TXN"]
    counts = once["counts"]
    assert "retries" not in counts and "backoff_us" not in counts  # nothing is tried again
    assert counts["gave_up"] == counts["aborts_conflict"] > 0
    assert once["errors"] == counts["gave_up"]  # a transaction that gave up failed
    assert once["transactions"]["retries_per_commit"] == 0
    five = per_action(retried[1])["TXN"]
    assert five["transactions"]["retries_per_commit"] > 0 and five["transactions"]["gave_up"] == 0
