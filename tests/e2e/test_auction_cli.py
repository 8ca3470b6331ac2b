"""`bgbench run --workload auction` and `bgbench rate --workload auction` end to end: real
agent processes over gRPC, SQLite underneath, the logs validated; a binding that tears
its bid transaction (the bid stored, the item's bid count not raised) is caught."""

import json
from functools import partial
from pathlib import Path

import pytest

from bgbench.workloads.auction.session_defs import INTERACTIONS
from tests import helpers
from tests.fixtures.registration import environment, register

bgbench = partial(helpers.bgbench, timeout=240)
BROKEN_ENTRY_POINTS = {
    "bgbench.auction_stores": {
        "sqlite-torn": "brokenauction:TORN_SQLITE",
        "sqlite-lost": "brokenauction:LOST_SQLITE",
    }
}
WRITES = ("SELL_AUCTION_ITEM", "SELL_SALE_ITEM", "STORE_BID", "BUY_SALE_ITEM")


def run_args(tmp: Path, store: str = "sqlite", *extra: str) -> list[str]:
    return [
        "run", "--workload", "auction", "--store", store, "--threads", "4", "--duration", "3",
        "--users", "60", "--results", str(tmp), "--json",
        "-p", f"store.options.path={tmp / 'auction.sqlite'}", *extra,
    ]  # fmt: skip


@pytest.fixture(scope="module")
def auction_run(tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp("auction")
    proc = bgbench(*run_args(tmp, "sqlite", "-p", "store.options.concurrency_control=optimistic"))
    assert proc.returncode == 0, proc.stderr
    result: dict = json.loads(proc.stdout)
    return result


def test_a_run_validates_clean_with_figures_per_interaction(auction_run):
    r = auction_run
    assert r["fault"] == "" and r["errors"] == 0
    assert r["reads"] > 0 and r["unpredictable_reads"] == 0
    per_action = {a["action"]: a for a in r["per_action"]}
    assert set(per_action) <= set(INTERACTIONS)
    assert {"STORE_BID", "VIEW_AUCTION_ITEM", "VIEW_BIDS_BY_BIDDER"} <= set(per_action)
    for name, a in per_action.items():
        assert a["response"]["count"] == a["count"] > 0
        if name in WRITES:
            assert a["transactions"]["commits"] == a["counts"]["commits"] > 0
        else:
            assert a["transactions"] is None
    assert set(r["by_item"]) >= {"auction item bid count", "auction item max bid"}
    assert all(item["unpredictable"] == 0 for item in r["by_item"].values())


def test_a_rating_gives_a_soar_with_its_interval(tmp_path):
    proc = bgbench(
        "rate", "--workload", "auction", "--store", "sqlite", "--agents", "1", "--users", "60",
        "--delta-search", "1", "--delta", "3", "--max-threads", "8", "--json",
        "--results", str(tmp_path), "-p", f"store.options.path={tmp_path / 'a.sqlite'}",
        "-p", "sla.beta_ms=50", "-p", "rating.final_runs=2",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    s = json.loads(proc.stdout)
    assert s["soar"] is not None and s["soar"] > 0, s
    assert 0 <= s["soar_low"] <= s["soar"] <= s["soar_high"], s


@pytest.mark.parametrize("store", ["sqlite-torn", "sqlite-lost"])
def test_a_torn_bid_transaction_and_a_lost_update_are_caught(tmp_path, store):
    env = environment(register(tmp_path / "dist", "brokenauction", BROKEN_ENTRY_POINTS))
    proc = helpers.bgbench(*run_args(tmp_path, store, "--mix", "Bidder"), env=env)
    assert proc.returncode in (0, 1), proc.stderr
    r = json.loads(proc.stdout)
    assert r["fault"] == "" and r["unpredictable_reads"] > 0
    assert r["by_item"]["auction item bid count"]["unpredictable"] > 0
