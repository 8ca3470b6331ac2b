"""The Cassandra binding's asynchronous path against a real single-node Cassandra, on its
default driver (acsylla) and on cassandra-driver (execute_async bridged to asyncio
futures): the engine's tasks, answers equal to the blocking connection's, results over
several pages, the drivers' errors (of the blocking path's kind), several loops at once
and calls whose task is cancelled while they are out."""

import asyncio
import threading
import uuid
from collections import Counter
from collections.abc import Callable

import pytest
import uvloop

from bgbench.drivers.cassandra_errors import error_kind
from bgbench.errors import StoreError
from bgbench.sdk import LoopBridge
from bgbench.worker.engine import FragmentEngine, RunSpec
from bgbench.workloads.bg.actions import Action
from bgbench.workloads.bg.config import BGConfig, BGDatabaseConfig
from bgbench.workloads.bg.generator import CONFIRMED, Fragment, FragmentPlan
from bgbench.workloads.bg.stores.cassandra import (
    CassandraAsyncConnection,
    CassandraConnection,
)
from bgbench.workloads.bg.workload import WORKLOAD
from bgbench.workloads.registry import make_binding

DB = BGDatabaseConfig(usercount=120, friendcountperuser=6, confperc=0.5,
                      resourcecountperuser=3, commentcountperresource=2)  # fmt: skip
PLAN = FragmentPlan((1.0,), 0.27)


def options(server: dict, **extra) -> dict:
    return {"hosts": server["hosts"], "port": server["port"],
            "keyspace": f"bga_{uuid.uuid4().hex[:12]}", **extra}  # fmt: skip


@pytest.fixture(scope="module")
def loaded(cassandra_server):
    binding = make_binding("bg", "cassandra", options(cassandra_server))
    fragment = Fragment(DB, PLAN, 0)
    try:
        binding.create_schema(DB)
        binding.load_fragment(fragment)
        yield binding, fragment
    finally:
        binding.close()


def on_driver(binding, driver: str):
    """A binding on the loaded keyspace whose socialites use `driver`."""
    o = binding.options
    other = make_binding("bg", "cassandra", {"hosts": o.hosts, "port": o.port,
                                             "keyspace": o.keyspace, "driver": driver})  # fmt: skip
    other.use_schema(DB)
    return other


def friend_counts(fragment: Fragment) -> Counter:
    counts: Counter = Counter()
    for inviter, invitee, status in fragment.friendships.tolist():
        if status == CONFIRMED:
            counts[inviter] += 1
            counts[invitee] += 1
    return counts


@pytest.mark.parametrize(
    ("concurrency", "driver"),
    [("asyncio", None), ("asyncio", "cassandra-driver"), ("threads", None)],
)
def test_the_engine_runs_sessions_either_way_and_they_validate_clean(
    cassandra_server, tmp_path, concurrency, driver
):
    config = BGConfig.model_validate({"database": DB.model_dump(), "workload": {"mix": "sessions"}})
    store = options(
        cassandra_server, concurrency=concurrency, **({"driver": driver} if driver else {})
    )
    engine = FragmentEngine(WORKLOAD, config, "cassandra", store, PLAN.capacities, 0)
    try:
        engine.prepare()
        # 200 actions per socialite, however long a busy machine takes (up to a minute)
        spec = RunSpec("e1", 8, 60.0, 1600, 7, tmp_path / "e1")
        summary = engine.run(spec, threading.Event(), lambda *_: None)
        assert summary.concurrency == concurrency
        assert summary.errors == 0 and not summary.aborted
        assert summary.actions >= 1600
        assert set(summary.per_action) == {a.name for a in Action}
        result = engine.validate(tmp_path / "e1")
        assert result.reads > 100 and result.writes > 5
        assert result.unpredictable_reads == 0
    finally:
        engine.close()


def test_many_tasks_on_one_loop_get_the_blocking_answers(loaded):
    binding, fragment = loaded
    members = fragment.members.tolist()
    blocking = CassandraConnection(binding.session, binding.statements)
    rid_of = {int(r): int(w) for r, _, w in fragment.resources.tolist()}
    want = {
        m: (
            blocking.view_profile(m, m),
            blocking.view_profile(members[0], m),
            blocking.list_friends(members[0], m),
            blocking.view_friend_requests(m),
            blocking.view_top_k_resources(members[0], m, 2),
        )
        for m in members
    }
    comments = {rid: blocking.view_comments(w, rid) for rid, w in rid_of.items()}

    async def main() -> tuple[dict, dict]:
        conns = [await binding.connect_async() for _ in range(16)]

        async def reads(k: int) -> dict:
            conn, got = conns[k], {}
            for m in members[k::16]:
                got[m] = (
                    await conn.view_profile(m, m),
                    await conn.view_profile(members[0], m),
                    await conn.list_friends(members[0], m),
                    await conn.view_friend_requests(m),
                    await conn.view_top_k_resources(members[0], m, 2),
                )
            return got

        parts = await asyncio.gather(*(reads(k) for k in range(16)))
        got_comments = dict(
            zip(
                rid_of,
                await asyncio.gather(
                    *(conns[i % 16].view_comments(w, r) for i, (r, w) in enumerate(rid_of.items()))
                ),
                strict=True,
            )
        )
        for conn in conns:
            await conn.close()
        await binding.aclose()
        return {m: v for part in parts for m, v in part.items()}, got_comments

    got, got_comments = uvloop.run(main())
    assert got == want
    assert got_comments == comments
    counts = friend_counts(fragment)
    assert [got[m][0].friend_count for m in members] == [counts[m] for m in members]


@pytest.mark.parametrize("driver", ["acsylla", "cassandra-driver"])
def test_answers_over_several_pages_come_back_whole(loaded, driver):
    binding, fragment = loaded
    counts = friend_counts(fragment)
    member = max(counts, key=counts.get)
    assert counts[member] >= 5
    paged = on_driver(binding, driver)

    async def main() -> list:
        conn = await paged.connect_async()
        if driver == "acsylla":
            conn.st.page_size = 2  # every friend list spans pages
        else:
            conn.st.members.fetch_size = 2
        try:
            return await conn.list_friends(member, member)
        finally:
            await conn.close()
            await paged.aclose()

    try:
        friends = uvloop.run(main())
    finally:
        paged.close()
    blocking = CassandraConnection(binding.session, binding.statements).list_friends(member, member)
    assert friends == blocking
    assert len(friends) == counts[member]


def raised(call: Callable[[], object]) -> Exception:
    try:
        call()
    except Exception as exc:
        return exc
    pytest.fail("the call succeeded")


REFUSED = "Cannot achieve consistency level ALL"


@pytest.mark.parametrize("driver", ["acsylla", "cassandra-driver"])
def test_the_drivers_errors_and_missing_rows_reach_the_task(cassandra_server, driver):
    """Replication factor 3 on one node: calls at ALL are refused by the server as
    Unavailable (cassandra-driver's retry policy wraps it in NoHostAvailable once no other
    host is left), of the same kind and message as when blocking; writes that match
    nothing are StoreErrors."""
    opts = options(cassandra_server, replication_factor=3, driver=driver)
    reads_all = make_binding("bg", "cassandra", {**opts, "read_consistency": "ALL"})
    writes_all = make_binding("bg", "cassandra", {**opts, "write_consistency": "ALL"})
    fragment = Fragment(DB, PLAN, 0)
    try:
        reads_all.create_schema(DB)
        reads_all.load_fragment(fragment)
        writes_all.use_schema(DB)
        m = int(fragment.members[0])
        rid = int(fragment.resources[0, 0])
        blocking_read = raised(lambda: reads_all.connect().view_profile(m, m))
        blocking_write = raised(lambda: writes_all.connect().post_comment(m, rid, 999, "no"))
        assert REFUSED in str(blocking_read) and REFUSED in str(blocking_write)
        assert error_kind(blocking_read) == error_kind(blocking_write) == "unavailable"
        bridge = LoopBridge(reads_all)
        try:
            for call in (
                lambda: bridge.view_profile(m, m),
                lambda: bridge.list_friends(m, m),
                lambda: bridge.delete_comment(rid, 0),  # its read comes first
            ):
                error = raised(call)
                assert error_kind(error) == error_kind(blocking_read) and REFUSED in str(error)
        finally:
            bridge.close()
        bridge = LoopBridge(writes_all)
        try:
            error = raised(lambda: bridge.post_comment(m, rid, 999, "refused at ALL"))
            assert error_kind(error) == error_kind(blocking_write) and REFUSED in str(error)
            with pytest.raises(StoreError, match="no matching row"):
                bridge.delete_comment(rid, 998)
            with pytest.raises(StoreError, match="not found"):
                bridge.view_profile(m, 10**9)
        finally:
            bridge.close()
    finally:
        reads_all.close()
        writes_all.close()


def test_connections_on_several_loops_at_once(loaded):
    """Three threads, each with its own loop (two uvloop, as the engine's, one asyncio's),
    share the binding's session at the same time."""
    binding, fragment = loaded
    members = fragment.members.tolist()
    counts = friend_counts(fragment)
    errors: list[BaseException] = []
    seen: list[int] = []
    go = threading.Barrier(3)

    def reader(k: int) -> None:
        loop = asyncio.new_event_loop() if k == 2 else uvloop.new_event_loop()
        try:
            conn = loop.run_until_complete(binding.connect_async())
            go.wait()
            for m in members[k::3]:
                profile = loop.run_until_complete(conn.view_profile(m, m))
                assert profile.member == m and profile.friend_count == counts[m]
                seen.append(m)
            loop.run_until_complete(conn.close())
            loop.run_until_complete(binding.aclose())
        except BaseException as exc:
            errors.append(exc)
            go.abort()
        finally:
            loop.close()

    threads = [threading.Thread(target=reader, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert sorted(seen) == sorted(members)


def test_answers_to_cancelled_tasks_are_dropped_quietly(loaded):
    """cassandra-driver's bridge: answers handed to a loop after their task was cancelled."""
    loaded_binding, fragment = loaded
    binding = on_driver(loaded_binding, "cassandra-driver")
    members = fragment.members.tolist()

    async def main() -> list:
        loop = asyncio.get_running_loop()
        problems: list = []
        loop.set_exception_handler(lambda _loop, context: problems.append(context))
        conn = await binding.connect_async()
        assert isinstance(conn, CassandraAsyncConnection)
        sent = []
        all_sent = asyncio.Event()
        execute = conn.execute

        def recording(*args):  # the real driver call, remembered
            rf = execute(*args)
            sent.append(rf)
            if len(sent) == 20:
                all_sent.set()
            return rf

        conn.execute = recording
        tasks = [asyncio.ensure_future(conn.view_profile(m, m)) for m in members[:20]]
        await all_sent.wait()  # every task has sent its call and waits for the answer
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        assert all(task.cancelled() for task in tasks)

        def answered() -> None:
            for rf in sent:
                rf.result()

        await asyncio.to_thread(answered)
        # Sent after every cancelled call was answered: the driver's single I/O thread hands
        # its answer over after theirs, and the loop runs handovers in order.
        conn.execute = execute
        profile = await conn.view_profile(members[0], members[0])
        assert profile.member == members[0]
        await conn.close()
        return problems

    try:
        assert uvloop.run(main()) == []
    finally:
        binding.close()
