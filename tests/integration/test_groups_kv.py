"""The entity-group contract (drivers/groups.py) on each NoSQL store's real server: HBase
(check-and-put over Thrift), the MongoDB-wire server (update_one filtered on the version)
and Cassandra (lightweight transactions). One server per store, started by the session
fixtures; each test works on groups of its own."""

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from typing import Any

import pytest

from bgbench.drivers.groups import GroupData
from tests.conftest import servers

STORES = ("hbase", "mongodb", "cassandra")
FIXTURES = {
    "hbase": "hbase_server",
    "mongodb": "mongo_wire_server",
    "cassandra": "cassandra_server",
}


def make_groups(store: str, options: dict[str, Any]) -> Any:
    if store == "hbase":
        from bgbench.drivers.hbase_groups import HBaseGroups
        from bgbench.drivers.hbase_options import HBaseOptions

        return HBaseGroups(HBaseOptions(**options), "groups")
    if store == "mongodb":
        from bgbench.drivers.mongodb_groups import MongoGroups
        from bgbench.drivers.mongodb_options import MongoOptions

        return MongoGroups(MongoOptions(**options), "groups")
    from bgbench.drivers.cassandra_groups import CassandraGroups
    from bgbench.drivers.cassandra_options import CassandraOptions

    return CassandraGroups(CassandraOptions(**options), "groups")


class Handle:
    """One socialite's handle, awaited alike: a blocking GroupKV runs on a thread of its own."""

    def __init__(self, kv: Any, blocking: bool) -> None:
        self.kv, self.blocking = kv, blocking

    async def _call(self, method: Callable[..., Any], *args: Any) -> Any:
        if self.blocking:
            return await asyncio.to_thread(method, *args)
        result: Awaitable[Any] = method(*args)
        return await result

    async def read(self, group: str) -> GroupData:
        data: GroupData = await self._call(self.kv.read, group)
        return data

    async def commit(
        self, group: str, version: int, puts: Mapping[str, bytes], deletes: Sequence[str] = ()
    ) -> bool:
        return bool(await self._call(self.kv.commit, group, version, puts, deletes))

    async def close(self) -> None:
        await self._call(self.kv.close)


class Store:
    def __init__(self, groups: Any) -> None:
        self.groups = groups
        self.blocking = groups.concurrency == "threads"
        self.admin = groups.admin()
        self.admin.create_table()

    async def handle(self) -> Handle:
        if self.blocking:
            return Handle(await asyncio.to_thread(self.groups.connect), True)
        return Handle(await self.groups.connect_async(), False)

    def run(self, test: Callable[[], Awaitable[Any]]) -> Any:
        async def body() -> Any:
            try:
                return await test()
            finally:
                if not self.blocking:
                    await self.groups.aclose()

        return asyncio.run(body())


@pytest.fixture(scope="module", params=STORES)
def store(request: pytest.FixtureRequest) -> Iterator[Store]:
    info = request.getfixturevalue(FIXTURES[request.param])
    groups = make_groups(request.param, servers.store_options(info))
    made = Store(groups)
    try:
        yield made
    finally:
        made.admin.close()
        groups.close()


def fresh() -> str:
    return "g" + uuid.uuid4().hex[:10]


def test_among_concurrent_commits_on_one_version_exactly_one_wins(store: Store) -> None:
    group = fresh()
    store.admin.replace([(group, {"n": b"0"})])

    async def race() -> tuple[list[bool], GroupData]:
        handles = [await store.handle() for _ in range(6)]
        seen = [await h.read(group) for h in handles]
        assert {s.version for s in seen} == {1}
        won = await asyncio.gather(
            *(h.commit(group, 1, {"n": b"%d" % i, f"by{i}": b"x"}) for i, h in enumerate(handles))
        )
        after = await handles[0].read(group)
        for h in handles:
            await h.close()
        return list(won), after

    won, after = store.run(race)
    assert won.count(True) == 1
    winner = won.index(True)
    assert after == GroupData(2, {"n": b"%d" % winner, f"by{winner}": b"x"})


def test_creating_a_group_at_version_zero_succeeds_once(store: Store) -> None:
    group = fresh()

    async def race() -> tuple[list[bool], GroupData]:
        handles = [await store.handle() for _ in range(4)]
        assert (await handles[0].read(group)) == GroupData(0, {})
        won = await asyncio.gather(
            *(h.commit(group, 0, {"who": b"%d" % i}) for i, h in enumerate(handles))
        )
        after = await handles[0].read(group)
        return list(won), after

    won, after = store.run(race)
    assert won.count(True) == 1
    assert after == GroupData(1, {"who": b"%d" % won.index(True)})


def test_a_stale_version_loses_and_applies_nothing(store: Store) -> None:
    group = fresh()
    store.admin.replace([(group, {"a": b"1", "b": b"2"})])

    async def steps() -> tuple[bool, bool, GroupData]:
        h = await store.handle()
        first = await h.commit(group, 1, {"a": b"10", "c": b"3"}, ["b"])
        stale = await h.commit(group, 1, {"a": b"99", "d": b"4"}, ["c"])
        return first, stale, await h.read(group)

    first, stale, after = store.run(steps)
    assert first is True and stale is False
    assert after == GroupData(2, {"a": b"10", "c": b"3"})


def test_a_read_gives_the_version_with_its_own_entries(store: Store) -> None:
    """A writer commits {x: n, y: n} at version n + 1 while readers read: every read must
    find x == y == version - 1 (a torn read would mix two commits)."""
    group = fresh()
    store.admin.replace([(group, {"x": b"0", "y": b"0"})])

    async def interleave() -> list[GroupData]:
        writer = await store.handle()
        readers = [await store.handle() for _ in range(3)]
        seen: list[GroupData] = []

        async def write() -> None:
            for n in range(1, 16):
                assert await writer.commit(group, n, {"x": b"%d" % n, "y": b"%d" % n})

        async def read(h: Handle) -> None:
            for _ in range(15):
                seen.append(await h.read(group))

        await asyncio.gather(write(), *(read(h) for h in readers))
        seen.append(await writer.read(group))
        return seen

    seen = store.run(interleave)
    for data in seen:
        assert data.entries == {"x": b"%d" % (data.version - 1), "y": b"%d" % (data.version - 1)}
    assert seen[-1].version == 16


def test_replace_read_many_and_delete(store: Store) -> None:
    a, b, absent = fresh(), fresh(), fresh()
    store.admin.replace([(a, {"old": b"1"}), (b, {"k": b"v"})])

    async def bump() -> bool:
        h = await store.handle()
        return await h.commit(a, 1, {"more": b"2"})

    assert store.run(bump)
    store.admin.replace([(a, {"new": b"\x00\xff"})])  # every old entry gone, version 1
    found = store.admin.read_many([a, b, absent])
    assert found == {
        a: GroupData(1, {"new": b"\x00\xff"}),
        b: GroupData(1, {"k": b"v"}),
        absent: GroupData(0, {}),
    }
    store.admin.delete([a])
    assert store.admin.read_many([a, b])[a] == GroupData(0, {})
    assert store.admin.read_many([b])[b].entries == {"k": b"v"}
