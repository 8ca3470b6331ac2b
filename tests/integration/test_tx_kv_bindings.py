"""The Micro and Auction bindings over entity groups (workloads/*/stores/groupkv.py) on each
NoSQL store's real server: concurrent transactions lose nothing, a commit that lost the
race aborts as "conflict" and applies nothing, generated keys are unique within their
group, and a reader skips an index pointer whose transaction never committed."""

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from bgbench import sdk
from bgbench.workloads.auction.store import AuctionItem, Bid, ItemWithBids, SaleItem, User
from bgbench.workloads.micro.store import GroupRows
from bgbench.workloads.registry import make_binding
from tests.conftest import servers

FIXTURES = {
    "hbase": "hbase_server",
    "mongodb": "mongo_wire_server",
    "cassandra": "cassandra_server",
}
WORKERS = 5


class Conn:
    """A binding's connection awaited alike: a blocking one runs on a thread of its own."""

    def __init__(self, binding: Any) -> None:
        self.binding = binding
        self.blocking = binding.concurrency == "threads"
        self.conn: Any = None

    async def open(self) -> "Conn":
        if self.blocking:
            self.conn = await asyncio.to_thread(self.binding.connect)
        else:
            self.conn = await self.binding.connect_async()
        return self

    async def __call__(self, method: str, *args: Any) -> Any:
        if self.blocking:
            return await asyncio.to_thread(getattr(self.conn, method), *args)
        return await getattr(self.conn, method)(*args)


def run(binding: Any, test: Callable[[], Any]) -> Any:
    async def body() -> Any:
        try:
            return await test()
        finally:
            await binding.aclose()

    return asyncio.run(body())


async def until_committed(conn: Conn, method: str, *args: Any) -> tuple[Any, int]:
    """The call retried while it aborts as a conflict (what a retry policy does); its answer
    and the conflicts it met."""
    conflicts = 0
    while True:
        try:
            return await conn(method, *args), conflicts
        except sdk.Abort as abort:
            assert abort.cause == "conflict"
            conflicts += 1


class Interloper:
    """A blocking group handle that lets another transaction commit on the group right
    after each read, through a second real handle: the version read is stale by then."""

    def __init__(self, kv: Any, other: Any, puts: dict[str, bytes], only: str) -> None:
        self.kv, self.other, self.puts, self.only = kv, other, puts, only

    def read(self, group: str) -> Any:
        data = self.kv.read(group)
        if group.startswith(self.only):
            assert self.other.commit(group, data.version, self.puts)
        return data

    def commit(self, *args: Any) -> bool:
        return bool(self.kv.commit(*args))

    def close(self) -> None:
        self.kv.close()


class AsyncInterloper(Interloper):
    """The same over asynchronous handles."""

    async def read(self, group: str) -> Any:  # type: ignore[override]
        data = await self.kv.read(group)
        if group.startswith(self.only):
            assert await self.other.commit(group, data.version, self.puts)
        return data

    async def commit(self, *args: Any) -> bool:  # type: ignore[override]
        return bool(await self.kv.commit(*args))

    async def close(self) -> None:  # type: ignore[override]
        await self.kv.close()


async def interloped(binding: Any, puts: dict[str, bytes], only: str = "") -> Conn:
    """A connection of `binding` whose every read of a group named `only`... is followed
    by another transaction's commit on it."""
    conn, other = await Conn(binding).open(), await Conn(binding).open()
    wrap = Interloper if conn.blocking else AsyncInterloper
    conn.conn.kv = wrap(conn.conn.kv, other.conn.kv, puts, only)
    if not conn.blocking:  # the Auction connection plays its operations on `kv` too
        conn.conn.run = lambda op: _play_async(conn.conn.kv, op)
    elif hasattr(conn.conn, "run"):
        conn.conn.run = lambda op: _play(conn.conn.kv, op)
    return conn


def _play(kv: Any, op: Any) -> Any:
    from bgbench.workloads.auction.stores.groupkv import play

    return play(kv, op)


def _play_async(kv: Any, op: Any) -> Any:
    from bgbench.workloads.auction.stores.groupkv import play_async

    return play_async(kv, op)


@pytest.fixture(scope="module", params=list(FIXTURES))
def store(request: pytest.FixtureRequest) -> Iterator[tuple[str, dict[str, Any]]]:
    info = request.getfixturevalue(FIXTURES[request.param])
    yield request.param, servers.store_options(info)


# -- Micro ------------------------------------------------------------------------------------
class MicroGroups:
    index = 0

    def __init__(self, groups: dict[int, list[int]]) -> None:
        self.groups = groups

    def group_keys(self) -> list[int]:
        return list(self.groups)

    def group_batches(self) -> Iterator[list[GroupRows]]:
        yield [GroupRows(g, v) for g, v in self.groups.items()]


@pytest.fixture(scope="module")
def micro(store: tuple[str, dict[str, Any]]) -> Iterator[Any]:
    name, options = store
    binding = make_binding("micro", name, options)
    binding.create_schema(None)
    binding.load_fragment(MicroGroups({1: [10, 20, 30], 2: [5, 5], 3: [0]}), lambda: None)
    yield binding
    binding.close()


def test_micro_concurrent_updates_lose_nothing(micro: Any) -> None:
    async def updates() -> int:
        conns = [await Conn(micro).open() for _ in range(WORKERS)]

        async def worker(c: Conn) -> int:
            met = 0
            for _ in range(4):
                _, conflicts = await until_committed(c, "update_items", 1, [0, 2], 1)
                met += conflicts
            return met

        return sum(await asyncio.gather(*(worker(c) for c in conns)))

    run(micro, updates)
    after = micro.read_back(MicroGroups({1: []}), lambda: None)[1]
    assert after.values == {0: 10 + 4 * WORKERS, 1: 20, 2: 30 + 4 * WORKERS}
    assert after.total == sum(after.values.values())


def test_micro_a_stale_update_aborts_as_conflict_and_applies_nothing(micro: Any) -> None:
    async def race() -> sdk.Abort:
        # the interloper's commit: item 0 of group 2 set to 7 (the total left as it was)
        conn = await interloped(micro, {"i0": b"7"})
        with pytest.raises(sdk.Abort) as aborted:
            await conn("update_items", 2, [0, 1], 100)
        return aborted.value

    abort = run(micro, race)
    assert abort.cause == "conflict"
    after = micro.read_back(MicroGroups({2: []}), lambda: None)[2]
    assert after.values == {0: 7, 1: 5} and after.total == 10  # only the interloper's commit


def test_micro_message_keys_are_unique_within_the_group(micro: Any) -> None:
    async def send() -> list[int]:
        conns = [await Conn(micro).open() for _ in range(WORKERS)]

        async def worker(c: Conn, sender: int) -> list[int]:
            return [(await until_committed(c, "send_message", 3, sender, k))[0] for k in range(3)]

        keys = await asyncio.gather(*(worker(c, i) for i, c in enumerate(conns)))
        seen = await conns[0]("read_group", 3)
        assert seen.messages == 3 * WORKERS
        return [k for ks in keys for k in ks]

    keys = run(micro, send)
    assert sorted(keys) == list(range(1, 3 * WORKERS + 1))


# -- Auction ----------------------------------------------------------------------------------
USERS = 6


class AuctionData:
    """Users 0-5; seller 0 has auction items 0 (two bids) and 1 (none), seller 1 a sale item
    numbered 0 with 5 units."""

    index = 0

    def user_ids(self) -> list[int]:
        return list(range(USERS))

    def user_batches(self) -> Iterator[list[User]]:
        yield [User(u, f"user{u}") for u in range(USERS)]

    def auction_item_batches(self) -> Iterator[list[ItemWithBids]]:
        bids = [Bid(0, 0, 0, 1, 150), Bid(0, 0, 1, 2, 170)]
        yield [
            ItemWithBids(AuctionItem(0, 0, "Rare lamp", 100, 170, 2, 2), bids),
            ItemWithBids(AuctionItem(0, 1, "Mint radio", 500, 0, -1, 0), []),
        ]

    def sale_item_batches(self) -> Iterator[list[SaleItem]]:
        yield [SaleItem(1, 0, "Boxed atlas", 900, 5)]


@pytest.fixture(scope="module")
def auction(store: tuple[str, dict[str, Any]]) -> Iterator[Any]:
    name, options = store
    binding = make_binding("auction", name, options)
    binding.create_schema(None)
    binding.load_fragment(AuctionData(), lambda: None)
    yield binding
    binding.close()


def test_auction_loads_and_reads_back(auction: Any) -> None:
    (lamp, radio) = sorted(auction.read_back(AuctionData(), lambda: None))
    assert lamp == next(iter(AuctionData().auction_item_batches()))[0]
    assert radio.item.title == "Mint radio" and radio.bids == []

    async def reads() -> list[Any]:
        c = await Conn(auction).open()
        return [await c("bids_by_bidder", 2), await c("winning_bids_by_bidder", 1),
                await c("sale_items_by_seller", 1), await c("purchases_by_buyer", 3)]  # fmt: skip

    by_2, winning_1, sales, purchases = run(auction, reads)
    assert [b for b, _ in by_2] == [Bid(0, 0, 1, 2, 170)]
    assert winning_1 == [] and purchases == []
    assert sales == [SaleItem(1, 0, "Boxed atlas", 900, 5)]


def test_auction_concurrent_bids_lose_nothing_and_take_unique_bid_numbers(auction: Any) -> None:
    bidders = range(1, WORKERS + 1)

    async def bidding() -> list[tuple[int, int, Any]]:
        conns = [await Conn(auction).open() for _ in bidders]

        async def worker(c: Conn, bidder: int) -> list[tuple[int, int, Any]]:
            made = []
            for k in range(3):
                amount = 1000 + 10 * k + bidder
                answer, _ = await until_committed(c, "store_bid", 0, 1, bidder, amount)
                made.append((bidder, amount, answer))
            return made

        made = await asyncio.gather(*(worker(c, b) for c, b in zip(conns, bidders, strict=True)))
        return [m for ms in made for m in ms]

    made = run(auction, bidding)
    stored = {(bidder, amount, a.bid_no) for bidder, amount, a in made if a.bid_no >= 0}
    item = next(w for w in auction.read_back(AuctionData(), lambda: None) if w.item.item_no == 1)
    assert {(b.bidder, b.amount, b.bid_no) for b in item.bids} == stored
    assert sorted(b.bid_no for b in item.bids) == list(range(len(stored)))
    assert item.item.bid_count == len(stored)
    assert item.item.max_bid == max(amount for _, amount, _ in stored)

    async def by_bidder() -> dict[int, set[int]]:
        c = await Conn(auction).open()
        return {b: {bid.bid_no for bid, _ in await c("bids_by_bidder", b) if bid.item_no == 1}
                for b in bidders}  # fmt: skip

    assert run(auction, by_bidder) == {
        b: {no for bidder, _, no in stored if bidder == b} for b in bidders
    }


def test_auction_concurrent_sales_take_unique_item_numbers(auction: Any) -> None:
    async def selling() -> list[int]:
        conns = [await Conn(auction).open() for _ in range(WORKERS)]
        sold = await asyncio.gather(
            *(until_committed(c, "sell_auction_item", 4, f"item {i}", 100 + i)
              for i, c in enumerate(conns))
        )  # fmt: skip
        listed = await conns[0]("auction_items_by_seller", 4)
        assert sorted(i.item_no for i in listed) == sorted(n for n, _ in sold)
        return [n for n, _ in sold]

    assert sorted(run(auction, selling)) == list(range(WORKERS))


def test_auction_buys_never_oversell(auction: Any) -> None:
    async def buying() -> list[Any]:
        conns = [await Conn(auction).open() for _ in range(WORKERS + 2)]
        answers = await asyncio.gather(
            *(until_committed(c, "buy_sale_item", 1, 0, 2 + i % 3, 1) for i, c in enumerate(conns))
        )
        left = await conns[0]("sale_item", 1, 0)
        bought = [len(await conns[0]("purchases_by_buyer", b)) for b in (2, 3, 4)]
        return [answers, left, bought]

    answers, left, bought = run(auction, buying)
    made = [a.purchase_no for a, _ in answers if a.purchase_no >= 0]
    assert sorted(made) == list(range(5)) and left.quantity == 0 and sum(bought) == 5


def test_auction_a_bid_that_lost_its_commit_is_never_read(auction: Any) -> None:
    async def race() -> tuple[sdk.Abort, list[Any], Any]:
        conn = await interloped(auction, {"title": b"Renamed lamp"}, only="a0:0")
        with pytest.raises(sdk.Abort) as aborted:
            await conn("store_bid", 0, 0, 5, 10_000)
        plain = await Conn(auction).open()
        return aborted.value, await plain("bids_by_bidder", 5), await plain("auction_item", 0, 0)

    abort, bids_of_5, lamp = run(auction, race)
    assert abort.cause == "conflict"
    admin = auction.groups.admin()
    index = admin.read_many(["B5"])["B5"].entries
    admin.close()
    assert "0:0:2" in index  # the index entry was written first and dangles
    assert [b for b, _ in bids_of_5 if b.item_no == 0] == []  # ... and readers skip it
    assert lamp.item.title == "Renamed lamp" and lamp.item.max_bid == 170 and len(lamp.bids) == 2
