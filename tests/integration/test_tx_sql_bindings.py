"""The transactional contract of the SQL bindings of Micro and Auction (PostgreSQL, MySQL)
against their real servers: each operation's answers; concurrent transactions on one
group commit exactly the right totals under both concurrency controls, retried on
sdk.Abort; refused attempts carry the right cause (a deadlock and a lock timeout under
pessimistic control, a conflict under optimistic); generated keys stay unique within a
group under concurrency; concurrent bids keep an item's max bid and bid count whole.
One server per store and a fresh database per module (tests/integration/stores.py)."""

import asyncio
import itertools
import random
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

import pytest

from bgbench import sdk
from bgbench.sdk.stores import StoreSpec
from bgbench.workloads.auction.store import AuctionItem, Bid, ItemWithBids, SaleItem, User
from bgbench.workloads.auction.stores import specs_sql as auction_specs
from bgbench.workloads.micro.store import GroupRows, GroupView
from bgbench.workloads.micro.stores import specs_sql as micro_specs
from tests.integration import tx_sql_rivals as rivals
from tests.integration.stores import SERVERS

T = TypeVar("T")
STORES = ("postgres", "mysql")
CONTROLS = ("pessimistic", "optimistic")
ITEMS = 6
WORKERS = 6
UPDATES_EACH = 8
ATTEMPTS = 500  # a transaction retried this often without committing fails the test


@pytest.fixture(scope="module", params=STORES)
def store(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    """The store's name and its options (a fresh database), for this module."""
    name = request.param
    yield from (
        (name, options) for options in SERVERS[name](tmp_path_factory.mktemp(name), request)
    )


def spec_of(workload: str, name: str) -> StoreSpec:
    specs = {"micro": micro_specs, "auction": auction_specs}
    spec: StoreSpec = getattr(specs[workload], name.upper())
    return spec


def binding(workload: str, store: tuple[str, dict], **options: Any) -> Any:
    name, base = store
    spec = spec_of(workload, name)
    return spec.load_binding()(spec.options(**{**base, **options}))


async def retried(call: Callable[[], Awaitable[T]], aborts: list[str]) -> T:
    """The call, tried again at once while the store refuses it; each cause noted."""
    for _ in range(ATTEMPTS):
        try:
            return await call()
        except sdk.Abort as refused:
            aborts.append(refused.cause)
            await asyncio.sleep(random.uniform(0, 0.002))  # back-off, as a retry policy's
    raise AssertionError(f"no commit in {ATTEMPTS} attempts: {aborts[-5:]}")


class Groups:
    """A fragment's groups, given (the FragmentGroups a load hands a binding)."""

    index = 0

    def __init__(self, values: dict[int, list[int]]) -> None:
        self.values = values

    def group_keys(self) -> list[int]:
        return list(self.values)

    def group_batches(self) -> Iterator[list[GroupRows]]:
        yield [GroupRows(g, v) for g, v in self.values.items()]


def loaded_micro(store: tuple[str, dict], groups: dict[int, list[int]], **options: Any) -> Any:
    made = binding("micro", store, **options)
    made.create_schema(None)
    made.load_fragment(Groups(groups), lambda: None)
    return made


def test_micro_operations(store: tuple[str, dict]) -> None:
    micro = loaded_micro(store, {1: [10, 20, 30], 2: [5] * 4})

    async def play() -> tuple[Any, ...]:
        conn = await micro.connect_async()
        try:
            before = await conn.read_group(1)
            read = await conn.update_items(1, [2, 0], 7)
            keys = [await conn.send_message(1, 9, b) for b in range(3)]
            other = await conn.send_message(2, 9, 0)
            return before, read, keys, other, await conn.read_group(1)
        finally:
            await conn.close()
            await micro.aclose()

    before, read, keys, other, after = asyncio.run(play())
    assert before == GroupView({0: 10, 1: 20, 2: 30}, 60, 0)
    assert read == [30, 10]  # the values before, in the order asked
    assert sorted(keys) == [0, 1, 2] and other == 0  # unique within each group
    assert after == GroupView({0: 17, 1: 20, 2: 37}, 74, 3)
    back = micro.read_back(Groups({1: [], 2: []}), lambda: None)
    assert back == {1: after, 2: GroupView({i: 5 for i in range(4)}, 20, 1)}
    micro.close()


@pytest.mark.parametrize(
    ("control", "lock_order"),
    [("pessimistic", "sorted"), ("pessimistic", "given"), ("optimistic", "sorted")],
)
def test_micro_concurrent_updates_lose_nothing(
    store: tuple[str, dict], control: str, lock_order: str
) -> None:
    """WORKERS connections each add 1 to random items of one group UPDATES_EACH times, items
    in random orders, retried on Abort: every item and the total end exactly where the
    committed updates put them, and every message key sent meanwhile is distinct. Item
    locks taken in item order never deadlock; in the drawn order they may."""
    group = 100 + len(lock_order) + CONTROLS.index(control)
    micro = loaded_micro(
        store, {group: [0] * ITEMS}, concurrency_control=control, lock_order=lock_order
    )
    added = [0] * ITEMS
    aborts: list[str] = []
    keys: list[int] = []

    async def worker(seed: int) -> None:
        rng = random.Random(seed)
        conn = await micro.connect_async()
        try:
            for _ in range(UPDATES_EACH):
                items = rng.sample(range(ITEMS), 3)
                await retried(lambda items=items: conn.update_items(group, items, 1), aborts)
                for i in items:
                    added[i] += 1
                keys.append(await retried(lambda: conn.send_message(group, seed, 0), aborts))
        finally:
            await conn.close()

    async def play() -> GroupView:
        try:
            await asyncio.gather(*(worker(s) for s in range(WORKERS)))
            conn = await micro.connect_async()
            try:
                return await conn.read_group(group)
            finally:
                await conn.close()
        finally:
            await micro.aclose()

    view = asyncio.run(play())
    micro.close()
    assert view.values == dict(enumerate(added))
    assert view.total == sum(added) == WORKERS * UPDATES_EACH * 3
    assert len(keys) == len(set(keys)) == view.messages == WORKERS * UPDATES_EACH
    if control == "optimistic":
        assert set(aborts) == {"conflict"}  # six writers on one group: some attempts lost
    else:
        assert set(aborts) <= ({"deadlock"} if lock_order == "given" else set()), aborts


def test_micro_lock_timeout(store: tuple[str, dict]) -> None:
    """Under item locking, an item another transaction holds makes the attempt wait
    lock_timeout_ms and abort as a lock timeout; the holder's commit then goes through."""
    micro = loaded_micro(store, {200: [1, 2, 3]}, lock_timeout_ms=200)

    async def play() -> str:
        conn = await micro.connect_async()
        try:
            with rivals.holding(store, "micro", 200, [1]), pytest.raises(sdk.Abort) as refused:
                await conn.update_items(200, [0, 1], 1)
            assert await conn.update_items(200, [0, 1], 1) == [1, 2]
            return refused.value.cause
        finally:
            await conn.close()
            await micro.aclose()

    assert asyncio.run(play()) == "lock_timeout"
    micro.close()


def test_micro_deadlock(store: tuple[str, dict]) -> None:
    """The binding holds item 0 and waits for item 1, which a rival wrote before it asks for
    item 0: the store aborts the binding's attempt as a deadlock (PostgreSQL: the rival
    never checks; InnoDB: the rival wrote rows, the binding none, so it is the victim)."""
    micro = loaded_micro(store, {300: [0, 0]}, lock_timeout_ms=60_000)

    async def play() -> str:
        conn = await micro.connect_async()
        try:
            with rivals.holding(store, "micro", 300, [1], write=True) as rival:
                update = asyncio.create_task(conn.update_items(300, [0, 1], 1))
                await rivals.until_waiting(store, rival)
                rival.lock_later(0)
                with pytest.raises(sdk.Abort) as refused:
                    await update
            return refused.value.cause
        finally:
            await conn.close()
            await micro.aclose()

    assert asyncio.run(play()) == "deadlock"
    micro.close()


def test_micro_conflict_under_optimistic(store: tuple[str, dict]) -> None:
    """Under optimistic control, a rival's commit on the group between the attempt's read
    and its commit aborts the attempt as a conflict, and nothing of it applies."""
    micro = loaded_micro(store, {400: [0, 0]}, concurrency_control="optimistic")

    async def play() -> tuple[str, GroupView]:
        conn = await micro.connect_async()
        try:
            with rivals.holding(store, "micro", 400, [1], write=True) as rival:
                update = asyncio.create_task(conn.update_items(400, [1], 5))
                await rivals.until_waiting(store, rival)
                rival.commit()
                with pytest.raises(sdk.Abort) as refused:
                    await update
            return refused.value.cause, await conn.read_group(400)
        finally:
            await conn.close()
            await micro.aclose()

    cause, view = asyncio.run(play())
    micro.close()
    assert cause == "conflict"
    assert view == GroupView({0: 0, 1: 1}, 1, 0)  # the rival's +1 only


class Sellers:
    """A fragment's users and their items (the FragmentData a load hands a binding)."""

    index = 0

    def __init__(self, users: list[int], items: list[ItemWithBids], sales: list[SaleItem]):
        self.users, self.items, self.sales = users, items, sales

    def user_ids(self) -> list[int]:
        return self.users

    def user_batches(self) -> Iterator[list[User]]:
        yield [User(u, f"user {u}") for u in self.users]

    def auction_item_batches(self) -> Iterator[list[ItemWithBids]]:
        yield self.items

    def sale_item_batches(self) -> Iterator[list[SaleItem]]:
        yield self.sales


LAMP = AuctionItem(1, 0, "lamp", 100, 150, 3, 2)
LAMP_BIDS = [Bid(1, 0, 0, 2, 120), Bid(1, 0, 1, 3, 150)]
CHAIRS = SaleItem(1, 1, "chairs", 40, 5)


def loaded_auction(store: tuple[str, dict], data: Sellers, **options: Any) -> Any:
    made = binding("auction", store, **options)
    made.create_schema(None)
    made.load_fragment(data, lambda: None)
    return made


def test_auction_operations(store: tuple[str, dict]) -> None:
    auction = loaded_auction(store, Sellers([1, 2, 3], [ItemWithBids(LAMP, LAMP_BIDS)], [CHAIRS]))

    async def play() -> dict[str, Any]:
        conn = await auction.connect_async()
        try:
            seen = {"sold": [
                await conn.sell_auction_item(1, "vase", 200),
                await conn.sell_sale_item(1, "cups", 5, 2),
                await conn.sell_auction_item(2, "rug", 300),
            ]}  # fmt: skip
            seen["bids"] = [await conn.store_bid(1, 0, 3, 150), await conn.store_bid(1, 0, 2, 160)]
            seen["buys"] = [
                await conn.buy_sale_item(1, 1, 2, 3),
                await conn.buy_sale_item(1, 1, 3, 3),
            ]
            for name in ("auction_item", "sale_item"):
                seen[name] = await getattr(conn, name)(1, 0 if name == "auction_item" else 1)
            for name in ("auction_items_by_seller", "sale_items_by_seller"):
                seen[name] = await getattr(conn, name)(1)
            for name in ("bids_by_bidder", "winning_bids_by_bidder", "purchases_by_buyer"):
                seen[name] = {who: await getattr(conn, name)(who) for who in (2, 3)}
            return seen
        finally:
            await conn.close()
            await auction.aclose()

    seen = asyncio.run(play())
    assert seen["sold"] == [2, 3, 0]  # item_no unique within the seller, after the loaded ones
    assert seen["bids"] == [(150, 2, -1), (150, 2, 2)]  # not above the max: lost
    assert seen["buys"] == [(5, 0), (2, -1)]  # too few left: nothing bought
    lamp = AuctionItem(1, 0, "lamp", 100, 160, 2, 3)
    new_bid = Bid(1, 0, 2, 2, 160)
    assert seen["auction_item"] == ItemWithBids(lamp, [*LAMP_BIDS, new_bid])
    assert seen["sale_item"] == SaleItem(1, 1, "chairs", 40, 2)
    assert seen["auction_items_by_seller"] == [lamp, AuctionItem(1, 2, "vase", 200, 0, -1, 0)]
    assert seen["sale_items_by_seller"] == [seen["sale_item"], SaleItem(1, 3, "cups", 5, 2)]
    assert seen["bids_by_bidder"] == {2: [(LAMP_BIDS[0], lamp), (new_bid, lamp)],
                                      3: [(LAMP_BIDS[1], lamp)]}  # fmt: skip
    assert seen["winning_bids_by_bidder"] == {2: [(new_bid, lamp)], 3: []}
    bought = seen["purchases_by_buyer"]
    assert [(p.purchase_no, p.quantity, item.item_no) for p, item in bought[2]] == [(0, 3, 1)]
    assert bought[3] == []
    back = auction.read_back(Sellers([1, 2, 3], [], []), lambda: None)
    assert [(i.item.seller, i.item.item_no, len(i.bids)) for i in back] == [
        (1, 0, 3), (1, 2, 0), (2, 0, 0)
    ]  # fmt: skip
    assert back[0] == seen["auction_item"]
    auction.close()


@pytest.mark.parametrize("control", CONTROLS)
def test_auction_concurrent_bids_and_sales(store: tuple[str, dict], control: str) -> None:
    """WORKERS bidders bid rising amounts on one item while selling on one seller, retried on
    Abort: the bids that won are the item's bids, numbered 0.. without a gap, each above the
    one before; the max bid, its bidder and the count are theirs; item_nos are distinct."""
    seller = 10 + CONTROLS.index(control)
    empty = AuctionItem(seller, 0, "clock", 10, 0, -1, 0)
    users = [seller, *range(20, 20 + WORKERS)]
    auction = loaded_auction(store, Sellers(users, [ItemWithBids(empty, [])], []),
                             concurrency_control=control)  # fmt: skip
    won: list[tuple[int, int, int]] = []  # (bid_no, bidder, amount)
    sold: list[int] = []
    aborts: list[str] = []

    async def bidder(who: int) -> None:
        rng = random.Random(who)
        conn = await auction.connect_async()
        try:
            for _ in range(UPDATES_EACH):
                amount = rng.randrange(1, 1000)
                answer = await retried(lambda a=amount: conn.store_bid(seller, 0, who, a), aborts)
                if answer.bid_no >= 0:
                    assert amount > answer.max_bid_before
                    won.append((answer.bid_no, who, amount))
                sold.append(await retried(lambda: conn.sell_sale_item(seller, "x", 1, 1), aborts))
        finally:
            await conn.close()

    async def play() -> ItemWithBids:
        try:
            await asyncio.gather(*(bidder(w) for w in users[1:]))
            conn = await auction.connect_async()
            try:
                return await conn.auction_item(seller, 0)
            finally:
                await conn.close()
        finally:
            await auction.aclose()

    item, bids = asyncio.run(play())
    auction.close()
    won.sort()
    assert [(b.bid_no, b.bidder, b.amount) for b in bids] == won
    assert [n for n, _, _ in won] == list(range(len(won)))
    assert all(a < b for (_, _, a), (_, _, b) in itertools.pairwise(won))
    assert (item.max_bid, item.max_bidder, item.bid_count) == (won[-1][2], won[-1][1], len(won))
    assert sorted(sold) == list(range(1, 1 + WORKERS * UPDATES_EACH))  # item 0 loaded
    assert set(aborts) <= {"conflict", "deadlock"}, aborts
