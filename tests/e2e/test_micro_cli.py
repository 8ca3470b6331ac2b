"""`bgbench run --workload micro` end to end: real agent processes over gRPC on loopback,
SQLite underneath, the logs validated. The honest binding validates clean under both
concurrency controls; a binding that tears transactions and one that loses concurrent
updates (tests/fixtures/brokenmicro) are caught; a rating gives SoAR with its interval;
per-interaction transaction figures reach --json and follow the retry policy."""

import json
from functools import partial
from pathlib import Path

import pytest

from tests import helpers
from tests.fixtures.registration import MICRO_BROKEN_ENTRY_POINTS, environment, register

bgbench = partial(helpers.bgbench, timeout=240)
UNITS = {"UPDATE_PERSONAL", "READ_PERSONAL", "UPDATE_SHARED", "READ_SHARED", "UPDATE_PUBLIC",
         "READ_PUBLIC", "SEND_MESSAGE", "READ_MESSAGES"}  # fmt: skip
# Heavy conflict (Strudel's Figure 11, case 3, shrunk): 4 of 8 items of one of 2 groups.
HEAVY = ("--mix", "conflict", "-p", "sharedgroups=2", "-p", "shareditems=8")


def micro_run(tmp: Path, store: str, *args: str, env: dict[str, str] | None = None) -> dict:
    proc = bgbench(
        "run", "--workload", "micro", "--store", store, "--threads", "4", "--duration", "3",
        "--users", "200", "--results", str(tmp / "results"), "--json",
        "-p", f"store.options.path={tmp / 'micro.sqlite'}", *args, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    result: dict = json.loads(proc.stdout)
    assert result["fault"] == "", result["fault"]
    return result


@pytest.fixture(scope="module")
def readwrite(tmp_path_factory) -> dict:
    return micro_run(tmp_path_factory.mktemp("micro"), "sqlite")


def test_every_interaction_runs_and_validates_clean(readwrite):
    r = readwrite
    assert r["errors"] == 0 and r["actions"] > 0
    assert {a["action"] for a in r["per_action"]} == UNITS
    assert r["reads"] > 0 and r["unpredictable_reads"] == 0
    assert set(r["by_item"]) == {"item value", "group total", "group sum of items",
                                 "inbox messages"}  # fmt: skip


def test_heavy_conflict_validates_clean_under_item_locking(tmp_path):
    # (under optimistic control: the retry-policy runs below)
    r = micro_run(tmp_path, "sqlite", *HEAVY, "-p", "store.options.concurrency_control=pessimistic")
    assert r["reads"] > 0 and r["unpredictable_reads"] == 0


@pytest.fixture(scope="module")
def broken_env(tmp_path_factory) -> dict[str, str]:
    where = tmp_path_factory.mktemp("brokenmicro")
    return environment(register(where, "brokenmicro", MICRO_BROKEN_ENTRY_POINTS))


@pytest.mark.parametrize("store", ["sqlite-torn", "sqlite-lost"])
def test_a_torn_or_lost_update_is_caught(tmp_path, broken_env, store):
    r = micro_run(tmp_path, store, *HEAVY, env=broken_env)
    assert r["reads"] > 0
    assert r["unpredictable_reads"] > 0, r["by_item"]


def test_a_rating_gives_soar_with_its_interval(tmp_path):
    proc = bgbench(
        "rate", "--workload", "micro", "--store", "sqlite", "--agents", "2", "--users", "200",
        "--delta-search", "1", "--delta", "3", "--max-threads", "8", "--results",
        str(tmp_path / "results"), "--json", "-p", f"store.options.path={tmp_path / 'm.sqlite'}",
        "-p", "rating.final_runs=2",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    s = json.loads(proc.stdout)
    assert s["soar"] > 0
    assert s["soar_low"] is not None and s["soar_low"] <= s["soar"] <= s["soar_high"]


def counts(result: dict, action: str) -> dict[str, int]:
    [a] = [a for a in result["per_action"] if a["action"] == action]
    return dict(a.get("counts") or {})


def test_transaction_figures_per_interaction_follow_the_retry_policy(tmp_path):
    optimistic = ("-p", "store.options.concurrency_control=optimistic", "-p", "exclusive=false")
    once = micro_run(tmp_path / "once", "sqlite", *HEAVY, *optimistic, "-p", "retryattempts=1")
    many = micro_run(tmp_path / "many", "sqlite", *HEAVY, *optimistic, "-p", "retryattempts=50")
    for r in (once, many):
        assert r["reads"] > 0 and r["unpredictable_reads"] == 0
    tried_once, tried_many = counts(once, "UPDATE_SHARED"), counts(many, "UPDATE_SHARED")
    assert tried_once["commits"] > 0 and tried_many["commits"] > 0
    # One attempt: a refused transaction gives up at once, never retried.
    assert tried_once.get("retries", 0) == 0
    assert tried_once["gave_up"] == tried_once["aborts_conflict"] > 0
    # Fifty: refused attempts are retried after a back-off.
    assert tried_many["retries"] > 0 and tried_many.get("backoff_us", 0) > 0
    assert tried_many["aborts_conflict"] >= tried_many["retries"]
