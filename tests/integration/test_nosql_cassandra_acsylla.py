"""BG's Cassandra socialites through acsylla (store.options.driver = acsylla) against a
real single-node Cassandra: the engine's sessions validate clean, many tasks on one loop
and tasks on several loops get the blocking connection's answers, and the server's
refusals and missing rows reach the task."""

import asyncio
import threading
import uuid

import pytest
import uvloop

from bgbench.errors import StoreError
from bgbench.sdk import LoopBridge
from bgbench.worker.engine import FragmentEngine, RunSpec
from bgbench.workloads.bg.actions import Action
from bgbench.workloads.bg.config import BGConfig, BGDatabaseConfig
from bgbench.workloads.bg.generator import CONFIRMED, Fragment, FragmentPlan
from bgbench.workloads.bg.stores.cassandra import CassandraConnection
from bgbench.workloads.bg.stores.cassandra_acsylla import CassandraAcsyllaConnection
from bgbench.workloads.bg.workload import WORKLOAD
from bgbench.workloads.registry import make_binding

DB = BGDatabaseConfig(usercount=120, friendcountperuser=6, confperc=0.5,
                      resourcecountperuser=3, commentcountperresource=2)  # fmt: skip
PLAN = FragmentPlan((1.0,), 0.27)


def options(server: dict, **extra) -> dict:
    return {"hosts": server["hosts"], "port": server["port"], "driver": "acsylla",
            "keyspace": f"bgq_{uuid.uuid4().hex[:12]}", **extra}  # fmt: skip


def test_the_engine_runs_every_action_through_acsylla_and_they_validate_clean(
    cassandra_server, tmp_path
):
    config = BGConfig.model_validate({"database": DB.model_dump(), "workload": {"mix": "sessions"}})
    engine = FragmentEngine(WORKLOAD, config, "cassandra", options(cassandra_server),
                            PLAN.capacities, 0)  # fmt: skip
    try:
        engine.prepare()
        spec = RunSpec("e1", 8, 60.0, 1600, 7, tmp_path / "e1")
        summary = engine.run(spec, threading.Event(), lambda *_: None)
        assert summary.concurrency == "asyncio"
        assert summary.errors == 0 and not summary.aborted
        assert summary.actions >= 1600
        assert set(summary.per_action) == {a.name for a in Action}
        result = engine.validate(tmp_path / "e1")
        assert result.reads > 100 and result.writes > 5
        assert result.unpredictable_reads == 0
    finally:
        engine.close()


def test_tasks_on_several_loops_get_the_blocking_answers(cassandra_server):
    binding = make_binding("bg", "cassandra", options(cassandra_server))
    fragment = Fragment(DB, PLAN, 0)
    try:
        binding.create_schema(DB)
        binding.load_fragment(fragment)
        members = fragment.members.tolist()
        blocking = CassandraConnection(binding.session, binding.statements)
        want = {m: (blocking.view_profile(m, m), blocking.list_friends(members[0], m),
                    blocking.view_friend_requests(m), blocking.view_top_k_resources(m, m, 2))
                for m in members}  # fmt: skip
        got: dict = {}
        errors: list[BaseException] = []

        def reader(k: int) -> None:
            async def main() -> None:
                conns = await asyncio.gather(*(binding.connect_async() for _ in range(8)))
                assert all(isinstance(c, CassandraAcsyllaConnection) for c in conns)

                async def reads(j: int) -> None:
                    for m in members[k::2][j::8]:
                        c = conns[j]
                        got[m] = (await c.view_profile(m, m), await c.list_friends(members[0], m),
                                  await c.view_friend_requests(m),
                                  await c.view_top_k_resources(m, m, 2))  # fmt: skip

                await asyncio.gather(*(reads(j) for j in range(8)))
                await binding.aclose()

            try:
                (asyncio.run if k else uvloop.run)(main())
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=reader, args=(k,)) for k in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors
        assert got == want
    finally:
        binding.close()


REFUSED = r"(?i)consistency|unavailable|replicas"


def test_refusals_and_missing_rows_reach_the_task(cassandra_server):
    """Replication factor 3 on one node: reads or writes at ALL are refused by the server."""
    opts = options(cassandra_server, replication_factor=3)
    reads_all = make_binding("bg", "cassandra", {**opts, "read_consistency": "ALL"})
    writes_all = make_binding("bg", "cassandra", {**opts, "write_consistency": "ALL"})
    fragment = Fragment(DB, PLAN, 0)
    try:
        reads_all.create_schema(DB)
        reads_all.load_fragment(fragment)
        writes_all.use_schema(DB)
        m, rid = int(fragment.members[0]), int(fragment.resources[0, 0])
        a, b = next((a, b) for a, b, s in fragment.friendships.tolist() if s == CONFIRMED)
        bridge = LoopBridge(reads_all)
        try:
            with pytest.raises(Exception, match=REFUSED):
                bridge.view_profile(m, m)
        finally:
            bridge.close()
        bridge = LoopBridge(writes_all)
        try:
            with pytest.raises(Exception, match=REFUSED):
                bridge.post_comment(m, rid, 999, "refused at ALL")
            with pytest.raises(Exception, match=REFUSED):
                bridge.thaw_friendship(a, b)  # a logged batch
            with pytest.raises(StoreError, match="no matching row"):
                bridge.delete_comment(rid, 998)
            with pytest.raises(StoreError, match="not found"):
                bridge.view_profile(m, 10**9)
        finally:
            bridge.close()
    finally:
        reads_all.close()
        writes_all.close()
