"""`bgbench run --workload micro` and `--workload auction` on PostgreSQL and MySQL (the
session's servers) end to end: real agent processes over gRPC, the logs validated with no
unpredictable read. Micro runs Strudel's heavy-conflict mix under each concurrency control,
so commits race on a few items and refused attempts are retried; Auction runs its sessions."""

import json
from functools import partial
from pathlib import Path

import pytest

from tests import helpers
from tests.integration.stores import SERVERS

bgbench = partial(helpers.bgbench, timeout=300)
# Heavy conflict (Strudel's Figure 11, case 3, shrunk): 4 of 8 items of one of 2 groups.
HEAVY = ("--mix", "conflict", "-p", "sharedgroups=2", "-p", "shareditems=8")


@pytest.fixture(scope="module", params=["postgres", "mysql"])
def store(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """The store's name and the -p arguments naming a fresh database on its server."""
    name = request.param
    for options in SERVERS[name](tmp_path_factory.mktemp(name), request):
        yield name, [arg for k, v in options.items() for arg in ("-p", f"store.options.{k}={v}")]


def run(tmp: Path, workload: str, store: tuple[str, list[str]], *args: str) -> dict:
    name, options = store
    proc = bgbench(
        "run", "--workload", workload, "--store", name, "--threads", "4", "--duration", "3",
        "--users", "200", "--results", str(tmp / "results"), "--json", *options, *args,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    result: dict = json.loads(proc.stdout)
    assert result["fault"] == "", result["fault"]
    assert result["reads"] > 0 and result["unpredictable_reads"] == 0, result["by_item"]
    return result


def tallies(result: dict, action: str) -> dict:
    return next(a["transactions"] for a in result["per_action"] if a["action"] == action)


@pytest.mark.parametrize("control", ["optimistic", "pessimistic"])
def test_micro_heavy_conflict_validates_clean(tmp_path, store, control):
    r = run(tmp_path, "micro", store, *HEAVY, "-p", f"store.options.concurrency_control={control}")
    shared = tallies(r, "UPDATE_SHARED")
    assert shared["commits"] > 0
    if control == "optimistic":
        assert shared["aborts_conflict"] > 0  # four writers on eight items: some lose
    else:
        assert shared["aborts_conflict"] == 0  # locks wait (or deadlock), never conflict


def test_auction_validates_clean(tmp_path, store):
    r = run(tmp_path, "auction", store, "-p", "store.options.concurrency_control=optimistic")
    assert tallies(r, "STORE_BID")["commits"] > 0
    assert tallies(r, "SELL_AUCTION_ITEM")["commits"] > 0
