"""PostgreSQL and CASQL on the event loop (issue 12): asyncpg connections from a per-loop
pool, aiomcache for memcached, checked against real servers."""

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bgbench.errors import StoreError
from bgbench.sdk import LoopBridge
from bgbench.workloads.bg.config import BGDatabaseConfig
from bgbench.workloads.bg.generator import Fragment, FragmentPlan
from bgbench.workloads.registry import make_binding
from tests.conftest import fresh_database, servers
from tests.integration import stores

DB = BGDatabaseConfig(
    usercount=60, friendcountperuser=6, confperc=0.5, resourcecountperuser=2,
    commentcountperresource=2, insertimage=True, imagesize=2, attrcount=3, attrlength=8,
)  # fmt: skip
PLAN = FragmentPlan((1.0,), 0.27)


def loaded(name: str, options: dict):  # type: ignore[no-untyped-def]
    return stores.loaded(name, options, DB, PLAN)


@pytest.mark.parametrize("isolation", ["read committed", "repeatable read", "serializable"])
def test_every_statement_runs_at_the_isolation_level_set_even_on_a_reused_connection(
    postgres_server, isolation
):
    binding = make_binding(
        "bg",
        "postgres",
        {"dsn": fresh_database(postgres_server), "isolation": isolation, "pool_max": 1},
    )
    binding.create_schema(DB)
    try:
        pids = []
        for _ in range(2):  # the pool's one connection, taken twice: released in between
            bridge = LoopBridge(binding)
            try:
                con, run = bridge.conn.con, bridge.loop.run_until_complete
                assert run(con.fetchval("SHOW transaction_isolation")) == isolation
                assert run(con.fetchval("SELECT current_setting('transaction_isolation')")) == (
                    isolation
                )
                pids.append(run(con.fetchval("SELECT pg_backend_pid()")))
                # a session setting changed by hand does not outlive the connection's release
                run(con.execute("SET default_transaction_isolation = 'read uncommitted'"))
                run(bridge.conn.close())
                bridge.conn = run(binding.connect_async())
                con = bridge.conn.con
                assert run(con.fetchval("SELECT pg_backend_pid()")) == pids[-1]
                assert run(con.fetchval("SHOW transaction_isolation")) == isolation
            finally:
                bridge.close()
    finally:
        binding.close()
    assert len(pids) == 2


def test_a_connect_beyond_pool_max_is_a_store_error_naming_pool_max(postgres_server):
    binding = make_binding(
        "bg",
        "postgres",
        {"dsn": fresh_database(postgres_server), "pool_max": 1, "connect_timeout_s": 0.5},
    )
    binding.create_schema(DB)
    bridge = LoopBridge(binding)
    try:
        run = bridge.loop.run_until_complete
        with pytest.raises(StoreError, match="pool_max"):
            run(binding.connect_async())
        run(bridge.conn.close())  # its connection back in the pool: the next connect has it
        again = run(binding.connect_async())
        assert run(again.con.fetchval("SELECT 1")) == 1
        bridge.conn = again
    finally:
        bridge.close()
        binding.close()


def _answers(conn, fragment: Fragment) -> list:  # type: ignore[no-untyped-def]
    out = []
    for m in fragment.members.tolist()[:20]:
        out.append(conn.view_profile(m, m))
        out.append(conn.view_profile(m + 1, m))
        out.append(sorted(r.member for r in conn.list_friends(m, m)))
        out.append(sorted(r.member for r in conn.view_friend_requests(m)))
        top = conn.view_top_k_resources(m, m, 5)
        out.append(top)
        for r in top:
            out.append(sorted((c.mid, c.text) for c in conn.view_comments(m, r.rid)))
    return out


@pytest.fixture(params=["postgres", "casql"])
def store(request, postgres_server) -> Iterator[tuple]:
    options = {"dsn": fresh_database(postgres_server)}
    if request.param == "casql":
        mc = request.getfixturevalue("memcached_server")
        options["memcached"] = f"127.0.0.1:{mc['port']}"
    binding, fragment = loaded(request.param, options)
    try:
        yield binding, fragment
    finally:
        binding.close()


def test_the_blocking_connection_and_the_async_one_answer_alike(store):
    binding, fragment = store
    blocking, bridged = binding.connect(), LoopBridge(binding)
    try:
        first = _answers(bridged, fragment)
        assert first == _answers(blocking, fragment)
        assert first == _answers(bridged, fragment)  # CASQL: now from the cache
        for conn in (blocking, bridged):
            with pytest.raises(StoreError, match="no matching row"):
                conn.delete_comment(int(fragment.resources[0, 0]), 999)
    finally:
        blocking.close()
        bridged.close()
    if binding.name == "casql":
        assert binding.counters()["hits"] > 0


def test_a_dsn_keyword_asyncpg_cannot_honour_is_one_line_naming_it(tmp_path):
    proc = subprocess.run(
        [
            sys.executable, "-m", "bgbench", "run", "--store", "postgres", "--agents", "1",
            "--threads", "2", "--duration", "1", "--users", "200",
            "--results", str(tmp_path / "results"),
            "-p", "store.options.dsn=host=127.0.0.1 dbname=bg options=-csearch_path=bg",
        ],
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("bgbench:")]
    assert len(lines) == 1, proc.stderr
    assert "store.options.dsn" in lines[0] and "'options'" in lines[0], lines[0]


def stopped(pid: int) -> bool:
    """Every thread of the process stopped (SIGSTOP reaches them one after the other)."""
    threads = Path(f"/proc/{pid}/task").iterdir()
    return all((t / "stat").read_text().rsplit(")", 1)[1].split()[0] == "T" for t in threads)


def test_after_memcached_stopped_answering_every_command_gets_its_own_reply(
    postgres_server, tmp_path
):
    """A command that timed out leaves its reply on the way: the connection is dropped, so
    the next command never reads it as its own."""
    mc = servers.start("memcached", tmp_path / "mc")
    try:
        options = {
            "dsn": fresh_database(postgres_server),
            "memcached": f"127.0.0.1:{mc['port']}",
            "timeout_s": 1.0,
        }
        binding, fragment = loaded("casql", options)
        a, b = fragment.members.tolist()[:2]
        bridge = LoopBridge(binding)
        try:
            truth = {m: (bridge.view_profile(m, m), bridge.list_friends(m, m)) for m in (a, b)}
            hits = binding.counters()["hits"]
            os.kill(mc["pid"], signal.SIGSTOP)
            try:
                servers.wait_for(lambda: stopped(mc["pid"]), "memcached stopping", 30)
                with pytest.raises(TimeoutError):
                    bridge.view_profile(b, b)  # its cached value's reply comes later
            finally:
                os.kill(mc["pid"], signal.SIGCONT)
            for m in (a, b, a, b):
                assert bridge.view_profile(m, m) == truth[m][0]
                friends = bridge.list_friends(m, m)
                assert [r.member for r in friends] == [r.member for r in truth[m][1]]
            assert binding.counters()["hits"] == hits + 8  # all from the cache, as before
        finally:
            bridge.close()
            binding.close()
    finally:
        servers.stop(tmp_path / "mc")


@pytest.mark.parametrize("store_name", ["postgres", "casql"])
def test_a_run_plays_its_socialites_as_tasks_without_errors(
    tmp_path, postgres_server, memcached_server, store_name
):
    options = ["-p", f"store.options.dsn={fresh_database(postgres_server)}"]
    if store_name == "casql":
        options += ["-p", f"store.options.memcached=127.0.0.1:{memcached_server['port']}"]
    proc = subprocess.run(
        [
            sys.executable, "-m", "bgbench", "run", "--store", store_name, "--agents", "1",
            "--threads", "16", "--duration", "2", "--users", "400",
            "--results", str(tmp_path / "results"), "--json", *options,
        ],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["fault"] == "", result["fault"]
    assert [a["concurrency"] for a in result["agents"]] == ["asyncio"]
    assert result["actions"] > 0 and result["errors"] == 0
    assert result["reads"] > 0 and result["unpredictable_reads"] == 0
    if store_name == "casql":
        assert result["agents"][0]["store_counters"]["hits"] > 0
