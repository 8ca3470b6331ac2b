"""MongoDB (AsyncMongoClient) and Riak (httpx.AsyncClient) on the event loop (issue 12),
against real servers: the same answers and errors as the blocking connections, one client
per loop, a shared pool within pool_max, a call cancelled while it is out, a keep-alive
connection the server dropped, a server killed mid-run, and a run through the CLI."""

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Iterator

import pytest
import uvloop

from bgbench.errors import StoreError
from bgbench.sdk import LoopBridge
from bgbench.worker.engine import FragmentEngine, RunSpec
from bgbench.workloads.bg.config import BGConfig, BGDatabaseConfig
from bgbench.workloads.bg.generator import Fragment, FragmentPlan
from bgbench.workloads.bg.store import Profile
from bgbench.workloads.bg.workload import WORKLOAD
from bgbench.workloads.registry import make_binding
from tests.conftest import ROOT, servers
from tests.integration import stores

DB = BGDatabaseConfig(
    usercount=80, friendcountperuser=6, confperc=0.5, resourcecountperuser=2,
    commentcountperresource=2, insertimage=True, imagesize=2, attrcount=3, attrlength=8,
)  # fmt: skip
PLAN = FragmentPlan((1.0,), 0.27)
FAULT_CONFIG = BGConfig.model_validate(
    {"database": {"usercount": 200, "resourcecountperuser": 2, "commentcountperresource": 1},
     "workload": {"mix": "low"}}
)  # fmt: skip


def mongo_options(server: dict, **extra) -> dict:
    return {"uri": f"mongodb://127.0.0.1:{server['port']}",
            "database": f"bga_{uuid.uuid4().hex[:12]}", **extra}  # fmt: skip


def riak_options(url: str, **extra) -> dict:
    return {"url": url, "bucket_prefix": f"bga_{uuid.uuid4().hex[:12]}_", **extra}


def loaded(name: str, options: dict):  # type: ignore[no-untyped-def]
    return stores.loaded(name, options, DB, PLAN)


@pytest.fixture(
    params=[("mongodb", "embedded"), ("mongodb", "collection"), ("riak", "quorum"),
            ("riak", "noquorum")],
    ids=lambda p: f"{p[0]}-{p[1]}",
)  # fmt: skip
def store(request) -> Iterator[tuple]:
    name, variant = request.param
    if name == "mongodb":
        options = mongo_options(request.getfixturevalue("mongo_wire_server"), comments=variant)
    else:
        options = riak_options(request.getfixturevalue("riak_url"), consistency=variant)
    binding, fragment = loaded(name, options)
    try:
        yield binding, fragment
    finally:
        binding.close()


@pytest.fixture
def riak_to_kill(tmp_path) -> Iterator[tuple[int, Callable[[], subprocess.Popen]]]:
    """A Riak emulator of the test's own (port, start); every one started is killed."""
    port = servers.free_port()
    procs: list[subprocess.Popen] = []

    def start() -> subprocess.Popen:
        with open(tmp_path / f"emulator{len(procs)}.log", "wb") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "tests.riak_emulator", str(port)],
                cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
        procs.append(proc)
        servers.wait_for(
            lambda: servers.tcp_answers(port, b"GET /ping HTTP/1.0\r\n\r\n", b"HTTP/1.1 200"),
            "the Riak emulator", 30, alive=lambda: proc.poll() is None,
        )  # fmt: skip
        return proc

    try:
        yield port, start
    finally:
        for proc in procs:
            proc.kill()
            proc.wait(10)


def _trace(conn, f: Fragment) -> list:  # type: ignore[no-untyped-def]
    """What a scripted sequence of reads, writes and writes that match nothing answers,
    errors included (their type and message)."""
    friends, invited_by = stores.relations(f)
    members = f.members.tolist()
    a = next(m for m in members if invited_by.get(m) and friends.get(m))
    inviter = min(invited_by[a])
    related = friends.get(a, set()) | invited_by.get(a, set())
    related |= {x for x, ys in invited_by.items() if a in ys}
    stranger = next(m for m in members if m != a and m not in related)
    rid = max(r for r, _c, w in f.resources.tolist() if w == a)
    missing = DB.usercount + 5  # no such member

    def rows(result):  # type: ignore[no-untyped-def]
        return sorted(result, key=lambda r: (getattr(r, "member", 0), getattr(r, "mid", 0)))

    steps = [
        lambda: conn.view_profile(a, a),
        lambda: conn.view_profile(stranger, a),
        lambda: rows(conn.list_friends(a, a)),
        lambda: rows(conn.view_friend_requests(a)),
        lambda: conn.view_top_k_resources(a, a, 5),
        lambda: rows(conn.view_comments(a, rid)),
        lambda: conn.accept_friend_request(inviter, a),
        lambda: (conn.view_profile(a, a), conn.view_profile(inviter, inviter)),
        lambda: conn.accept_friend_request(inviter, a),  # no longer pending
        lambda: conn.thaw_friendship(a, inviter),
        lambda: conn.thaw_friendship(a, inviter),  # no longer friends
        lambda: conn.invite_friend(a, stranger),
        lambda: rows(conn.view_friend_requests(stranger)),
        lambda: conn.reject_friend_request(a, stranger),
        lambda: conn.reject_friend_request(a, stranger),
        lambda: conn.post_comment(stranger, rid, 77, "hello"),
        lambda: rows(conn.view_comments(a, rid)),
        lambda: conn.delete_comment(rid, 77),
        lambda: conn.delete_comment(rid, 77),
        lambda: conn.view_profile(missing, missing),
        lambda: conn.list_friends(missing, missing),
        lambda: conn.view_top_k_resources(missing, missing, 5),
        lambda: conn.view_comments(a, 10**9),
    ]
    out = []
    for step in steps:
        try:
            out.append(step())
        except Exception as exc:
            out.append((type(exc).__name__, str(exc)))
    return out


def test_the_async_connection_answers_and_fails_as_the_blocking_one(store):
    binding, fragment = store
    bridged = LoopBridge(binding)
    try:
        on_the_loop = _trace(bridged, fragment)
    finally:
        bridged.close()
    binding.load_fragment(fragment)  # the same starting rows again
    blocking = binding.connect()
    try:
        assert _trace(blocking, fragment) == on_the_loop
    finally:
        blocking.close()
    errors = [o for o in on_the_loop if isinstance(o, tuple) and isinstance(o[0], str)]
    assert sum("no matching row" in message for _, message in errors) == 4, errors
    assert all(kind == "StoreError" for kind, _ in errors), errors
    assert on_the_loop[0].image == fragment.profile_image
    assert on_the_loop[7][0].friend_count == on_the_loop[0].friend_count + 1


@pytest.mark.parametrize(
    "extra",
    [{}, {"write_concern": "majority", "journal": True, "read_preference": "primaryPreferred",
          "timeout_ms": 1500, "pool_max": 7}],
)  # fmt: skip
def test_the_async_client_has_the_blocking_clients_concerns_and_limits(extra):
    binding = make_binding("bg", "mongodb", {"uri": "mongodb://127.0.0.1:9", **extra})
    binding.use_schema(DB)
    loop = uvloop.new_event_loop()
    try:
        loop.run_until_complete(binding.connect_async())
        db = binding.loop_dbs[loop]
        for sync, on_loop in ((binding.db.users, db.users), (binding.db.resources, db.resources)):
            assert on_loop.write_concern == sync.write_concern
            assert on_loop.read_preference == sync.read_preference
        pool, sync_pool = db.client.options.pool_options, binding.client.options.pool_options
        assert pool.max_pool_size == sync_pool.max_pool_size == extra.get("pool_max", 512)
        assert pool.socket_timeout == sync_pool.socket_timeout
        assert db.client.options.server_selection_timeout == (
            binding.client.options.server_selection_timeout
        )
        loop.run_until_complete(binding.aclose())
        assert not binding.loop_dbs
    finally:
        loop.close()
        binding.close()


def _store_options(name: str, request: pytest.FixtureRequest, **extra) -> dict:
    if name == "mongodb":
        return mongo_options(request.getfixturevalue("mongo_wire_server"), **extra)
    return riak_options(request.getfixturevalue("riak_url"), **extra)


@pytest.mark.parametrize("name", ["mongodb", "riak"])
def test_several_loops_at_once_each_have_their_own_client(name, request):
    binding, fragment = loaded(name, _store_options(name, request))
    members = fragment.members.tolist()
    truth = {m: fragment.initial_friend_count[i] for i, m in enumerate(members)}
    started, closed, go_on = threading.Barrier(3), threading.Barrier(3), threading.Event()
    errors: list[BaseException] = []
    seen: list[int] = []

    def loop_thread(k: int) -> None:
        loop = uvloop.new_event_loop()
        try:

            async def main() -> None:
                conns = [await binding.connect_async() for _ in range(4)]

                async def reads(conn, ms: list[int]) -> None:  # type: ignore[no-untyped-def]
                    for m in ms:
                        assert (await conn.view_profile(m, m)).friend_count == truth[m]

                await asyncio.gather(*(reads(c, members[j::4]) for j, c in enumerate(conns)))
                seen.append(len(binding.loop_dbs if name == "mongodb" else binding.loop_riaks))
                started.wait(60)
                if k == 0:  # one loop closes its client; the others still use theirs
                    for c in conns:
                        await c.close()
                    await binding.aclose()
                    go_on.set()
                    closed.wait(60)
                    return
                await asyncio.to_thread(go_on.wait, 60)
                await reads(conns[0], members)
                for c in conns:
                    await c.close()
                await binding.aclose()
                closed.wait(60)

            loop.run_until_complete(main())
        except BaseException as exc:  # surfaced below
            errors.append(exc)
            started.abort()
            closed.abort()
        finally:
            loop.close()

    threads = [threading.Thread(target=loop_thread, args=(k,)) for k in range(3)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert not errors, errors
        assert max(seen) == 3  # one client per loop, each made once
        assert not (binding.loop_dbs if name == "mongodb" else binding.loop_riaks)
    finally:
        binding.close()


@pytest.mark.parametrize("name", ["mongodb", "riak"])
def test_many_tasks_share_their_loops_pool_within_pool_max(name, request):
    binding, fragment = loaded(name, _store_options(name, request, pool_max=3))
    rid_of = {w: r for r, _c, w in fragment.resources.tolist()}
    targets = sorted(rid_of)[:24]
    loop = uvloop.new_event_loop()
    try:

        async def main() -> int:
            conns = [await binding.connect_async() for _ in targets]

            async def writer(conn, m: int) -> None:  # type: ignore[no-untyped-def]
                for i in range(5):
                    await conn.post_comment(m, rid_of[m], 500 + i, f"c{m}-{i}")
                assert len(await conn.view_comments(m, rid_of[m])) == (
                    DB.commentcountperresource + 5
                )

            await asyncio.gather(*(writer(c, m) for c, m in zip(conns, targets, strict=True)))
            for c in conns:
                await c.close()
            if name == "riak":  # every connection back on the stack: never more than 3
                return len(binding.loop_riaks[asyncio.get_running_loop()].pool.idle)
            client = binding.loop_dbs[asyncio.get_running_loop()].client
            return client.options.pool_options.max_pool_size  # type: ignore[no-any-return]

        assert loop.run_until_complete(main()) == 3
        loop.run_until_complete(binding.aclose())
    finally:
        loop.close()
        binding.close()


@pytest.mark.parametrize("name", ["mongodb", "riak"])
def test_a_call_cancelled_while_out_leaves_the_pool_whole(name, request):
    """With one connection in the pool, a task cancelled inside its call must give it
    back (or drop it): the next call on the loop still gets its answer."""
    binding, fragment = loaded(name, _store_options(name, request, pool_max=1))
    m = int(fragment.members[0])
    loop = uvloop.new_event_loop()
    try:

        async def main() -> int:
            conn = await binding.connect_async()
            await conn.view_profile(m, m)  # the connection is open
            cancelled = 0
            for depth in range(1, 7):  # cancelled at several points of the call
                task = asyncio.ensure_future(conn.view_profile(m, m))
                if name == "riak":
                    slots = binding.loop_riaks[asyncio.get_running_loop()].pool.slots
                    while not slots.locked():  # the request holds the one connection
                        await asyncio.sleep(0)
                for _ in range(depth if name == "mongodb" else 0):
                    await asyncio.sleep(0)
                task.cancel()
                # Python 3.11's asyncio.wait_for, round pymongo's sends, can swallow a
                # cancel: the call then simply ends with its answer
                outcome = (await asyncio.gather(task, return_exceptions=True))[0]
                assert isinstance(outcome, asyncio.CancelledError | Profile), outcome
                cancelled += isinstance(outcome, asyncio.CancelledError)
                profile = await conn.view_profile(m, m)
                assert profile.friend_count == fragment.initial_friend_count[0]
            await conn.close()
            if name == "riak":
                assert not binding.loop_riaks[asyncio.get_running_loop()].pool.slots.locked()
            await binding.aclose()
            return cancelled

        cancelled = loop.run_until_complete(main())
        assert cancelled == 6 if name == "riak" else cancelled >= 1
    finally:
        loop.close()
        binding.close()


def test_a_keep_alive_connection_riak_dropped_is_replaced_not_failed(riak_to_kill):
    port, start = riak_to_kill
    first = start()
    binding, fragment = loaded("riak", riak_options(f"http://127.0.0.1:{port}"))
    member = int(fragment.members[0])
    bridge = LoopBridge(binding)
    try:
        assert bridge.view_top_k_resources(member, member, 5)  # one idle connection now
        first.kill()
        first.wait(10)
        start()  # a new, empty server on the same port
        assert bridge.view_top_k_resources(member, member, 5) == []
        with pytest.raises(StoreError, match="not found"):
            bridge.view_profile(member, member)
    finally:
        bridge.close()
        binding.close()


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", ["mongodb", "riak"])
def test_a_server_killed_mid_run_ends_the_experiment(name, tmp_path, riak_to_kill):
    """The engine's tasks see the store fail, count the errors, and end the run early;
    nothing waits forever on a pool or a dead connection."""
    if name == "mongodb":
        server = servers.start("mongo-wire", tmp_path / "mongo")
        options = mongo_options(server)

        def kill() -> None:
            os.kill(server["pid"], signal.SIGKILL)

    else:
        port, start = riak_to_kill
        proc = start()
        options = riak_options(f"http://127.0.0.1:{port}", timeout_s=2)
        kill = proc.kill
    try:
        engine = FragmentEngine(WORKLOAD, FAULT_CONFIG, name, options, PLAN.capacities, 0)
        runner = engine.binding
        try:
            engine.prepare()
            if name == "mongodb":
                # loaded with patient timeouts; run with short ones, so that after the kill
                # each call's wait for a server ends soon (100 in a row end the run)
                runner = make_binding("bg", name, {**options, "timeout_ms": 300})
                runner.use_schema(FAULT_CONFIG.database)
                engine.binding = engine.fragment.binding = runner
            killed = threading.Event()

            def publish(actions: int, *_: object) -> None:
                if actions >= 300 and not killed.is_set():
                    killed.set()
                    kill()

            spec = RunSpec("fault", 4, 150.0, 0, 7, tmp_path / "fault")
            summary = engine.run(spec, threading.Event(), publish)
        finally:
            engine.close()
            runner.close()
        assert killed.is_set()
        assert summary.concurrency == "asyncio"
        assert "store failing" in summary.aborted, summary.aborted
        # ended by the failures, not by the clock (after the kill a MongoDB call waits
        # 0.3 s for a server: 100 in a row take about 30-50 s)
        assert summary.elapsed < 120
        assert summary.actions >= 300
    finally:
        if name == "mongodb":
            servers.stop(tmp_path / "mongo")


@pytest.mark.timeout(400)
@pytest.mark.parametrize("name", ["mongodb", "riak"])
def test_a_run_through_the_cli_plays_its_socialites_as_tasks(name, tmp_path, request):
    if name == "mongodb":
        server = request.getfixturevalue("mongo_wire_server")
        options = [f"store.options.uri=mongodb://127.0.0.1:{server['port']}",
                   f"store.options.database=bgc_{uuid.uuid4().hex[:12]}"]  # fmt: skip
    else:
        options = [f"store.options.url={request.getfixturevalue('riak_url')}",
                   f"store.options.bucket_prefix=bgc_{uuid.uuid4().hex[:12]}_"]  # fmt: skip
    proc = subprocess.run(
        [
            sys.executable, "-m", "bgbench", "run", "--store", name, "--agents", "1",
            "--threads", "16", "--duration", "2", "--users", "400",
            "--results", str(tmp_path / "results"), "--json",
            *(arg for option in options for arg in ("-p", option)),
        ],
        capture_output=True, text=True, timeout=360, cwd=ROOT,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["fault"] == "", result["fault"]
    assert [a["concurrency"] for a in result["agents"]] == ["asyncio"]
    assert result["actions"] > 0 and result["errors"] == 0
    assert result["reads"] > 0
    if name == "mongodb":  # each write is one atomic update: no read can be stale
        assert result["unpredictable_reads"] == 0
