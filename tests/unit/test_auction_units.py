"""Auction's interactions and sessions over a blocking in-memory binding: what each logs,
what it changes in the workload's picture, and how outcomes steer the sessions."""

import random
from typing import Any

import pytest

from bgbench import sdk
from bgbench.sdk import transactions as tx
from bgbench.validation.logformat import NEVER, READ, WRITE, WRITE_ABS, LogWriter
from bgbench.worker.measurement import Recorder
from bgbench.workloads.auction import interactions as steps
from bgbench.workloads.auction import picture as tracked
from bgbench.workloads.auction.config import AuctionConfig
from bgbench.workloads.auction.generator import item_key
from bgbench.workloads.auction.interactions import Visit
from bgbench.workloads.auction.store import AsyncAuctionConnection
from bgbench.workloads.auction.workload import AuctionFragment, AuctionPlayer
from tests.unit.auction_memory import MemoryAuction


class Binding:
    """Enough of a binding for AuctionFragment: a blocking one over MemoryAuction."""

    name = "memory"
    concurrency = "threads"

    def __init__(self) -> None:
        self.store = MemoryAuction()

    def load_fragment(self, data: Any, progress: Any) -> None:
        self.store.load(data)


class Play:
    """One runner over the in-memory store, as the engine makes it."""

    def __init__(self, tmp_path: Any, **workload: Any) -> None:
        settings = {"database": {"users": 30, "seed": 3}, "workload": workload}
        self.config = AuctionConfig.model_validate(settings)
        self.binding = Binding()
        self.fragment = AuctionFragment(self.config, [1.0], 0, self.binding)  # type: ignore[arg-type]
        self.binding.load_fragment(self.fragment.data, None)
        self.store = self.binding.store
        self.recorder = Recorder(LogWriter(tmp_path / "t.bglog"))

        async def think(_: float) -> bool:
            return True

        names = ["Bidder", "Seller", "Strudel", *self.config.workload.sessions]
        self.player = AuctionPlayer(self.fragment, self._timer(), [1, 2], names)
        self.ctx = sdk.UnitContext(self.player.timer, random.Random(5), think)
        self.units = dict(zip(names, self.player.units, strict=True))

    def _timer(self) -> sdk.Timer[Any]:
        view = sdk.blocking(self.store, AsyncAuctionConnection)
        return sdk.Timer(view, self.recorder, 0)

    def visit(self, user: int = -1) -> Visit:
        return Visit(self.player, self.ctx, self.user() if user < 0 else user)

    def user(self) -> int:
        return int(self.fragment.data.users[0])

    def step(self, name: str, v: Visit) -> object:
        return sdk.run_blocking(steps.STEPS[name](v))

    def session(self, name: str, user: int) -> None:
        sdk.run_blocking(self.units[name](self.ctx, user))

    def records(self) -> list[tuple[int, ...]]:
        recs, n = self.recorder.recs, sdk.RECORD_FIELDS
        return [tuple(recs[i : i + n]) for i in range(0, len(recs), n)]

    def logged(self, kind: int) -> set[tuple[int, int, int]]:
        """(item, item_id, value) of every record of `kind`."""
        return {(r[1], r[4], r[7]) for r in self.records() if r[0] == kind}

    def actions(self) -> list[str]:
        codes = self.recorder.acts[:: sdk.ACTION_FIELDS]
        return [steps.INTERACTIONS[c] for c in codes]


def an_item_with_bids(play: Play) -> tuple[int, int]:
    return next(k for k, item in sorted(play.store.items.items()) if item.bid_count > 0)


def test_a_bid_above_the_max_is_stored_logged_and_pictured(tmp_path: Any) -> None:
    play = Play(tmp_path)
    v = play.visit()
    seller, no = an_item_with_bids(play)
    v.choose_auction(play.store.items[(seller, no)])
    before = play.store.items[(seller, no)]
    key = item_key(seller, no)
    assert play.step("STORE_BID", v) == "won"
    after = play.store.items[(seller, no)]
    assert after.bid_count == before.bid_count + 1 and after.max_bidder == v.user
    assert play.logged(READ) == {
        (tracked.MAX_BID, key, before.max_bid),
        (tracked.BID_COUNT, key, before.bid_count),
    }
    assert play.logged(WRITE) == {
        (tracked.BID_COUNT, key, 1),
        (tracked.BIDS_SEEN, key, 1),
        (tracked.BIDDER_BIDS, v.user, 1),
    }
    assert play.logged(WRITE_ABS) == {(tracked.MAX_BID, key, after.max_bid)}
    assert play.fragment.picture.bid_count[key] == after.bid_count
    assert play.fragment.picture.max_bid[key] == after.max_bid == v.seen_max
    assert play.recorder.counts[steps.STORE_BID][tx.COMMITS] == 1


def test_an_outbid_bid_is_lost_writes_nothing_and_learns_the_new_max(tmp_path: Any) -> None:
    play = Play(tmp_path)
    v = play.visit()
    target = an_item_with_bids(play)
    v.choose_auction(play.store.items[target])
    play.store.outbid = 1  # another bidder got there between the view and the bid
    assert play.step("STORE_BID", v) == "lost"
    assert play.logged(WRITE) == set() and play.logged(WRITE_ABS) == set()
    assert v.seen_max == play.store.items[target].max_bid
    assert play.step("STORE_BID", v) == "won"  # prepare bids above what it learned


def test_outcomes_steer_a_session_a_lost_bid_looks_again(tmp_path: Any) -> None:
    persistent = {
        "states": {
            "VIEW_AUCTION_ITEMS_BY_SELLER": {"next": "VIEW_AUCTION_ITEM", "on": {"empty": "end"}},
            "VIEW_AUCTION_ITEM": {"next": "STORE_BID"},
            "STORE_BID": {"next": "VIEW_BIDS_BY_BIDDER", "on": {"lost": "VIEW_AUCTION_ITEM"}},
            "VIEW_BIDS_BY_BIDDER": {},
        }
    }
    play = Play(tmp_path, sessions={"Persistent": persistent})
    play.store.outbid = 2  # the first two bids are outbid, the third wins
    sellers = play.fragment.picture.auction
    play.player._draw = lambda: next(s for s, items in sellers.items() if items)  # type: ignore[method-assign]
    play.session("Persistent", play.user())
    assert play.actions() == [
        "VIEW_AUCTION_ITEMS_BY_SELLER",
        *["VIEW_AUCTION_ITEM", "STORE_BID"] * 3,
        "VIEW_BIDS_BY_BIDDER",
    ]
    play.store.outbid = 0
    play.recorder.acts.clear()
    play.player._draw = lambda: next(s for s in play.fragment.data.user_ids() if s not in sellers)  # type: ignore[method-assign]
    play.session("Persistent", play.user())
    assert play.actions() == ["VIEW_AUCTION_ITEMS_BY_SELLER"]  # "empty": on to the end


def test_the_item_a_step_chose_is_the_next_steps_target(tmp_path: Any) -> None:
    play = Play(tmp_path)
    user = play.user()
    play.session("Seller", user)
    assert play.actions() == [
        "SELL_AUCTION_ITEM", "VIEW_AUCTION_ITEM", "SELL_SALE_ITEM", "VIEW_SALE_ITEM"
    ]  # fmt: skip
    sold = play.store.next_item_no[user]
    auction_key, sale_key = item_key(user, sold - 2), item_key(user, sold - 1)
    reads = play.logged(READ)
    assert (tracked.BID_COUNT, auction_key, 0) in reads  # the item it just sold, viewed
    quantity = play.store.sales[(user, sold - 1)].quantity
    assert (tracked.QUANTITY, sale_key, quantity) in reads
    assert (tracked.QUANTITY, sale_key, quantity) in play.logged(WRITE)  # from nothing
    assert play.fragment.picture.auction[user][-1] == sold - 2


def test_a_purchase_takes_units_and_too_many_is_sold_out(tmp_path: Any) -> None:
    play = Play(tmp_path, buy_most=1)
    v = play.visit()
    key2 = next(iter(sorted(play.store.sales)))
    v.choose_sale(play.store.sales[key2])
    left = play.store.sales[key2].quantity
    assert play.step("BUY_SALE_ITEM", v) == "bought"
    key = item_key(*key2)
    assert play.logged(WRITE) == {(tracked.QUANTITY, key, -1), (tracked.BUYER_PURCHASES, v.user, 1)}
    assert play.fragment.picture.quantity[key] == left - 1 == v.seen_left
    play.store.sales[key2] = play.store.sales[key2]._replace(quantity=0)
    assert play.step("BUY_SALE_ITEM", v) == "sold_out"
    assert v.seen_left == 0


def test_a_transaction_refused_every_attempt_gives_up(tmp_path: Any) -> None:
    play = Play(tmp_path, retry={"attempts": 2, "base_ms": 0})
    v = play.visit()
    v.choose_auction(play.store.items[an_item_with_bids(play)])
    play.store.refuse = ["conflict", "lock_timeout"]
    assert play.step("STORE_BID", v) == "gave_up"
    counts = play.recorder.counts[steps.STORE_BID]
    assert counts[tx.GAVE_UP] == 1 and counts["aborts_conflict"] == 1
    assert play.logged(WRITE) == set() and not play.fragment.uncertain


def test_an_unknown_outcome_logs_the_bid_as_never_ending_and_taints_the_fragment(
    tmp_path: Any,
) -> None:
    play = Play(tmp_path)
    v = play.visit()
    target = an_item_with_bids(play)
    v.choose_auction(play.store.items[target])
    play.store.fail_next = True
    assert play.step("STORE_BID", v) is False
    ends = {(r[1], r[6]) for r in play.records() if r[0] in (WRITE, WRITE_ABS)}
    assert ends == {(k, NEVER) for k in (tracked.BID_COUNT, tracked.BIDS_SEEN,
                                         tracked.BIDDER_BIDS, tracked.MAX_BID)}  # fmt: skip
    assert play.fragment.uncertain


def test_listings_log_their_lengths_and_choose_an_item(tmp_path: Any) -> None:
    play = Play(tmp_path)
    seller = next(s for s, items in play.fragment.picture.auction.items() if items)
    v = play.visit()
    play.player._draw = lambda: seller  # type: ignore[method-assign]
    assert play.step("VIEW_AUCTION_ITEMS_BY_SELLER", v) is True
    listed = len(play.fragment.picture.auction[seller])
    assert play.logged(READ) == {(tracked.SELLER_AUCTION_ITEMS, seller, listed)}
    assert v.auction is not None and v.auction[0] == seller


@pytest.mark.parametrize("kind", [tracked.BID_COUNT, tracked.MAX_BID, tracked.BIDDER_BIDS])
def test_initial_values_are_the_generated_data_plus_the_commits(tmp_path: Any, kind: int) -> None:
    play = Play(tmp_path)
    v = play.visit()
    target = an_item_with_bids(play)
    v.choose_auction(play.store.items[target])
    play.step("STORE_BID", v)
    ids, values = play.fragment.initial_values().by_kind[kind]
    stored = {
        tracked.BID_COUNT: {item_key(*k): i.bid_count for k, i in play.store.items.items()},
        tracked.MAX_BID: {item_key(*k): i.max_bid for k, i in play.store.items.items()},
        tracked.BIDDER_BIDS: {
            u: len(play.store.bids_by_bidder(u)) for u in play.fragment.data.user_ids()
        },
    }[kind]
    assert dict(zip(ids.tolist(), values.tolist(), strict=True)) == stored
