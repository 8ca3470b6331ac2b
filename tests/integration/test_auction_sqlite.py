"""The Auction binding contract on SQLite: each operation's answer, generated keys unique
within their group, concurrent bids that lose no update under both concurrency controls,
refused attempts that raise Abort with their cause and apply nothing."""

import sqlite3
import threading
from pathlib import Path

import pytest

from bgbench import sdk
from bgbench.worker.engine import FragmentEngine, RunSpec
from bgbench.workloads.auction.config import AuctionConfig, AuctionDatabaseConfig
from bgbench.workloads.auction.generator import FragmentData, item_key
from bgbench.workloads.auction.stores.options import SQLiteOptions
from bgbench.workloads.auction.stores.sqlite import SQLiteAuctionBinding, SQLiteAuctionConnection
from bgbench.workloads.auction.workload import WORKLOAD

DB = AuctionDatabaseConfig(users=40, auction_items=2, sale_items=1, bids=3, seed=4)
CONTROLS = ("pessimistic", "optimistic")


def no_beat() -> None:
    pass


def loaded(
    tmp: Path, control: str = "pessimistic", **options: object
) -> tuple[SQLiteAuctionBinding, FragmentData]:
    opts = SQLiteOptions(path=str(tmp / "a.sqlite"), concurrency_control=control, **options)
    binding = SQLiteAuctionBinding(opts)
    data = FragmentData(DB, 0.27, [1.0], 0)
    binding.create_schema(DB)
    binding.load_fragment(data, no_beat)
    return binding, data


def generated(data: FragmentData) -> list:
    return [x for batch in data.auction_item_batches() for x in batch]


def bid_until_done(
    conn: SQLiteAuctionConnection, seller: int, no: int, bidder: int, amount: int
) -> bool:
    """One bid through the retry a workload's policy makes: True when it was stored."""
    while True:
        try:
            return conn.store_bid(seller, no, bidder, amount).bid_no >= 0
        except sdk.Abort:
            continue


def test_each_operation_answers_what_was_loaded_and_written(tmp_path: Path) -> None:
    binding, data = loaded(tmp_path)
    conn = binding.connect()
    try:
        items = generated(data)
        item, bids = next(x for x in items if x.bids)
        assert conn.auction_item(item.seller, item.item_no) == (item, bids)
        assert binding.read_back(data, no_beat) == sorted(items)
        mine = [i for i, _ in items if i.seller == item.seller]
        assert conn.auction_items_by_seller(item.seller) == mine
        bidder = bids[0].bidder
        theirs = sorted((b, i) for i, bs in items for b in bs if b.bidder == bidder)
        assert conn.bids_by_bidder(bidder) == theirs
        # a bid not above the max is lost and writes nothing; one above wins
        lost = conn.store_bid(item.seller, item.item_no, bidder, item.max_bid)
        assert (lost.max_bid_before, lost.bid_count_before, lost.bid_no) == (
            item.max_bid, item.bid_count, -1,
        )  # fmt: skip
        won = conn.store_bid(item.seller, item.item_no, bidder, item.max_bid + 5)
        assert won.bid_no == item.bid_count
        after = conn.auction_item(item.seller, item.item_no)
        assert (after.item.max_bid, after.item.max_bidder, after.item.bid_count) == (
            item.max_bid + 5, bidder, item.bid_count + 1,
        )  # fmt: skip
        winning = conn.winning_bids_by_bidder(bidder)
        assert (after.bids[-1], after.item) in winning
        assert all(i.max_bid == b.amount and i.max_bidder == bidder for b, i in winning)
        # a purchase takes units; too many is refused and writes nothing
        sale = next(s for batch in data.sale_item_batches() for s in batch)
        bought = conn.buy_sale_item(sale.seller, sale.item_no, bidder, 1)
        assert bought == (sale.quantity, 0)
        assert conn.sale_item(sale.seller, sale.item_no).quantity == sale.quantity - 1
        assert conn.buy_sale_item(sale.seller, sale.item_no, bidder, sale.quantity) == (
            sale.quantity - 1, -1,
        )  # fmt: skip
        ((purchase, its_item),) = conn.purchases_by_buyer(bidder)
        assert (purchase.quantity, its_item.quantity) == (1, sale.quantity - 1)
    finally:
        conn.close()


@pytest.mark.parametrize("control", CONTROLS)
def test_generated_keys_are_unique_within_their_group_under_concurrency(
    tmp_path: Path, control: str
) -> None:
    binding, data = loaded(tmp_path, control)
    seller = data.user_ids()[0]
    loaded_nos = {i.item_no for i in binding.connect().auction_items_by_seller(seller)}
    loaded_nos |= {s.item_no for s in binding.connect().sale_items_by_seller(seller)}
    made: list[int] = []

    def sell(n: int) -> None:
        conn = binding.connect()
        try:
            for k in range(n):
                while True:
                    try:
                        if k % 2:
                            made.append(conn.sell_sale_item(seller, "x", 100, 3))
                        else:
                            made.append(conn.sell_auction_item(seller, "x", 100))
                        break
                    except sdk.Abort:
                        continue
        finally:
            conn.close()

    threads = [threading.Thread(target=sell, args=(10,)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(made)) == 40 and not set(made) & loaded_nos
    assert sorted(made) == list(range(len(loaded_nos), len(loaded_nos) + 40))


@pytest.mark.parametrize("control", CONTROLS)
def test_concurrent_bids_on_one_item_lose_no_update(tmp_path: Path, control: str) -> None:
    binding, data = loaded(tmp_path, control)
    item, _ = generated(data)[0]
    bidders = data.user_ids()[1:5]
    won = [0] * len(bidders)

    def bid(i: int) -> None:
        conn = binding.connect()
        try:
            for k in range(25):  # every bidder's amounts interleave with the others'
                amount = item.max_bid + 1 + k * len(bidders) + i
                won[i] += bid_until_done(conn, item.seller, item.item_no, bidders[i], amount)
        finally:
            conn.close()

    threads = [threading.Thread(target=bid, args=(i,)) for i in range(len(bidders))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    after, bids = binding.connect().auction_item(item.seller, item.item_no)
    assert after.bid_count == item.bid_count + sum(won) == len(bids)
    assert [b.bid_no for b in bids] == list(range(len(bids)))
    assert after.max_bid == max(b.amount for b in bids) == bids[-1].amount


@pytest.mark.parametrize(
    ("control", "cause"), [("pessimistic", "lock_timeout"), ("optimistic", "conflict")]
)
def test_a_refused_attempt_raises_its_cause_and_applies_nothing(
    tmp_path: Path, control: str, cause: str
) -> None:
    binding, data = loaded(tmp_path, control, busy_timeout_ms=50)
    item, _ = generated(data)[0]
    conn = binding.connect()
    holder = sqlite3.connect(tmp_path / "a.sqlite", isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")  # another writer holds the database
        with pytest.raises(sdk.Abort) as refused:
            conn.store_bid(item.seller, item.item_no, data.user_ids()[1], item.max_bid + 1)
        assert refused.value.cause == cause
        holder.execute("ROLLBACK")
        assert conn.auction_item(item.seller, item.item_no).item == item
        assert not conn.conn.in_transaction
    finally:
        holder.close()
        conn.close()


def test_a_reload_replaces_what_runs_wrote(tmp_path: Path) -> None:
    binding, data = loaded(tmp_path)
    conn = binding.connect()
    seller = data.user_ids()[0]
    before = conn.auction_items_by_seller(seller)
    conn.sell_auction_item(seller, "extra", 100)
    binding.load_fragment(data, no_beat)
    assert conn.auction_items_by_seller(seller) == before
    assert (
        conn.sell_auction_item(seller, "again", 100) == conn.sell_auction_item(seller, "y", 1) - 1
    )
    conn.close()


@pytest.mark.parametrize("control", CONTROLS)
def test_runs_that_carry_the_state_over_validate_clean(tmp_path: Path, control: str) -> None:
    # few users, many sessions: listings show items other loops sold a moment ago
    cfg = AuctionConfig.model_validate({"database": {"users": 30}, "workload": {"mix": "roles"}})
    opts = SQLiteOptions(path=str(tmp_path / "a.sqlite"), concurrency_control=control)
    e = FragmentEngine(WORKLOAD, cfg, "sqlite", {}, (1.0,), 0, binding=SQLiteAuctionBinding(opts))
    try:
        e.prepare()
        for i in range(3):
            spec = RunSpec(f"r{i}", 4, 120.0, 2000, 7, tmp_path / f"r{i}", start_state="carry")
            summary = e.run(spec, threading.Event(), lambda *_: None)
            result = e.validate(tmp_path / f"r{i}")
            assert summary.errors == 0 and result.writes > 0
            assert result.unpredictable_reads == 0, (i, result.examples[:2])
        picture = e.fragment.picture
        with sqlite3.connect(tmp_path / "a.sqlite") as conn:
            bought = dict(conn.execute("SELECT buyer, count(*) FROM purchases GROUP BY buyer"))
            counts = conn.execute("SELECT seller, item_no, bid_count FROM auction_items")
            bids = {item_key(s, n): c for s, n, c in counts}
        assert {u: n for u, n in picture.purchases.items() if n} == bought
        assert picture.bid_count == bids
    finally:
        e.close()
