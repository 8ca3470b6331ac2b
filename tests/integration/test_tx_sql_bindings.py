"""The transactional contract of the SQL bindings of Micro and Auction (PostgreSQL, MySQL)
against their real servers: each operation's answers; concurrent transactions on one
group commit exactly the right totals under both concurrency controls, retried on
sdk.Abort; refused attempts carry the right cause (a deadlock and a lock timeout under
pessimistic control, a conflict under optimistic); generated keys stay unique within a
group under concurrency; concurrent bids keep an item's max bid and bid count whole.
One server per store and a fresh database per module (tests/integration/stores.py)."""

import asyncio
import random
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

import pytest

from bgbench import sdk
from bgbench.sdk.stores import StoreSpec
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
    specs = {"micro": micro_specs}
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


@pytest.mark.parametrize("control", CONTROLS)
def test_micro_concurrent_updates_lose_nothing(store: tuple[str, dict], control: str) -> None:
    """WORKERS connections each add 1 to random items of one group UPDATES_EACH times, items
    in random orders (deadlocks under item locking), retried on Abort: every item and the
    total end exactly where the committed updates put them, and every message key
    sent meanwhile is distinct."""
    group = 100 + CONTROLS.index(control)
    micro = loaded_micro(store, {group: [0] * ITEMS}, concurrency_control=control)
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
    assert set(aborts) <= {"conflict", "deadlock"}, aborts
    if control == "optimistic":
        assert "conflict" in aborts  # six writers on one group: some attempts lost


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
