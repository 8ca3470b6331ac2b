"""PostgreSQL with a streaming hot standby (deploy/local's postgres-replica-delayed: the
standby applies each commit 300 ms late) and the bindings' `read_from: replica`: the
standby answers and refuses writes, replication runs over its own loopback address, reads
routed to it under writes are stale reads the validator counts with their lag, and the
same runs reading from the primary have none."""

import json
import threading
from typing import Any

import psycopg
import pytest

from bgbench.errors import UserError
from bgbench.launchers import nodes
from bgbench.launchers import postgres_replica as launcher
from bgbench.run_result.histograms import decode
from bgbench.sdk import LoopBridge
from bgbench.worker.engine import FragmentEngine, RunSpec
from bgbench.workloads.bg.config import BGConfig, BGDatabaseConfig
from bgbench.workloads.bg.generator import Fragment
from bgbench.workloads.bg.workload import WORKLOAD as BG
from bgbench.workloads.ehr.config import EHRConfig
from bgbench.workloads.ehr.workload import WORKLOAD as EHR
from bgbench.workloads.registry import make_binding, make_options
from bgbench.workloads.sensorlog.config import SensorLogConfig
from bgbench.workloads.sensorlog.workload import WORKLOAD as SENSORLOG
from tests.conftest import servers
from tests.helpers import wait_until
from tests.integration import test_store_contract as contract

DB = BGDatabaseConfig(usercount=100, friendcountperuser=6, confperc=0.5,
                      resourcecountperuser=2, commentcountperresource=2)  # fmt: skip
# a high write mix: a third of the actions change what the reads look at
WRITE_HEAVY = {"VP": 40, "VFR": 20, "LF": 10, "IF": 10, "AFR": 8, "RFR": 6, "TF": 6}
LONG = 120.0  # a run's bound: its action count ends it first, however busy the machine


def caught_up(info: dict[str, Any]) -> None:
    wait_until(lambda: launcher.caught_up(info), "the standby replaying the primary")


def test_the_standby_answers_reads_refuses_writes_and_streams_over_its_own_address(
    postgres_replica,
):
    options = servers.store_options(postgres_replica)
    with psycopg.connect(options["dsn"], autocommit=True) as primary:
        primary.execute("CREATE TABLE t (k int PRIMARY KEY)")
        primary.execute("INSERT INTO t VALUES (1), (2)")
        assert primary.execute("SELECT pg_is_in_recovery()").fetchone() == (False,)
    caught_up(postgres_replica)
    with psycopg.connect(options["replica_dsn"], autocommit=True) as standby:
        assert standby.execute("SELECT pg_is_in_recovery()").fetchone() == (True,)
        assert standby.execute("SELECT count(*) FROM t").fetchone() == (2,)
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            standby.execute("INSERT INTO t VALUES (3)")
        sender = standby.execute("SELECT sender_host, sender_port FROM pg_stat_wal_receiver")
        assert sender.fetchone() == (launcher.REPLICATION_ADDRESS, postgres_replica["port"])
        delay = standby.execute("SHOW recovery_min_apply_delay").fetchone()
        assert delay == ("300ms",)


def bg_engine(info: dict[str, Any], read_from: str) -> FragmentEngine:
    store = {**servers.store_options(info), "read_from": read_from}
    config = BGConfig.model_validate(
        {"database": DB.model_dump(), "workload": {"mix": WRITE_HEAVY}}
    )
    return FragmentEngine(BG, config, "postgres", store, (1.0,), 0)


@pytest.mark.parametrize("read_from", ["replica", "primary"])
def test_a_bg_run_reading_from_the_standby_under_writes_has_stale_reads_with_their_lag(
    postgres_replica, tmp_path, read_from
):
    engine = bg_engine(postgres_replica, read_from)
    try:
        engine.prepare()
        description = engine.binding.describe()
        summary = engine.run(
            RunSpec("e1", 8, LONG, 1500, 7, tmp_path / "e1"), threading.Event(), lambda *_: None
        )
        assert summary.actions >= 1500 and not summary.aborted
        result = engine.validate(tmp_path / "e1")
    finally:
        engine.close()
    assert result.reads > 500 and result.writes > 200
    lags = decode(result.lag_hist)
    if read_from == "replica":
        assert "reads from the hot standby at 127.0.0.1:" in description
        # a standby 300 ms behind hands out reads that miss writes already done
        assert result.unpredictable_reads > 0, result.reads
        assert lags.get_total_count() > 0 and lags.get_max_value() > 0
        assert all(e["lag_ms"] > 0 for e in result.examples if "lag_ms" in e)
    else:
        assert "standby" not in description and "replica_dsn unused" in description
        assert summary.errors == 0, summary.error_counts
        assert result.unpredictable_reads == 0, result.examples[:2]
        assert lags.get_total_count() == 0


def test_ehr_reads_from_the_standby_under_writes_are_stale(postgres_replica, tmp_path):
    cfg = EHRConfig.model_validate(
        {"database": {"patients": 200}, "workload": {"mix": {"READ": 1, "WRITE": 1}}}
    )
    store = {**servers.store_options(postgres_replica), "read_from": "replica"}
    engine = FragmentEngine(EHR, cfg, "postgres", store, (1.0,), 0)
    try:
        engine.prepare()
        assert "hot standby" in engine.binding.describe()
        spec = RunSpec("r", 8, LONG, 1200, 3, tmp_path / "r")
        summary = engine.run(spec, threading.Event(), lambda *_: None)
        assert summary.errors == 0 and not summary.aborted, summary.error_counts
        result = engine.validate(tmp_path / "r")
    finally:
        engine.close()
    assert result.reads > 0 and result.writes > 0
    assert result.unpredictable_reads > 0


def test_sensorlog_reads_from_the_standby_under_inserts_are_stale(postgres_replica, tmp_path):
    cfg = SensorLogConfig.model_validate(
        {"database": {"machines": 4, "sensors": 3, "readings": 150, "seed": 5},
         "workload": {"mix": "ingest50", "q3_selectivity": 20}}
    )  # fmt: skip
    store = {**servers.store_options(postgres_replica), "read_from": "replica",
             "consistency": "strong", "isolation": "repeatable read"}  # fmt: skip
    engine = FragmentEngine(SENSORLOG, cfg, "postgres", store, (1.0,), 0)
    try:
        engine.prepare()
        assert "hot standby" in engine.binding.describe()
        spec = RunSpec("r", 4, LONG, 800, 3, tmp_path / "r")
        summary = engine.run(spec, threading.Event(), lambda *_: None)
        assert summary.errors == 0 and not summary.aborted, summary.error_counts
        result = engine.validate(tmp_path / "r")
    finally:
        engine.close()
    assert result.reads > 0 and result.unpredictable_reads > 0


def test_both_paths_read_on_the_standby_and_write_on_the_primary(postgres_replica):
    options = {**servers.store_options(postgres_replica), "read_from": "replica"}
    binding = make_binding("bg", "postgres", options)
    binding.create_schema(DB)
    in_recovery = "SELECT pg_is_in_recovery()"
    try:
        blocking = binding.connect()
        try:
            assert blocking.reader.execute(in_recovery).fetchone() == (True,)
            assert blocking.conn.execute(in_recovery).fetchone() == (False,)
        finally:
            blocking.close()
        bridge = LoopBridge(binding)
        try:
            run = bridge.loop.run_until_complete
            assert run(bridge.conn.reader.fetchval(in_recovery)) is True
            assert run(bridge.conn.con.fetchval(in_recovery)) is False
        finally:
            bridge.close()
    finally:
        binding.close()


class CaughtUpConnection:
    """A connection whose writes return once the standby has replayed them, so the
    contract's read-after-write checks hold for reads served by the standby."""

    WRITES = frozenset({"invite_friend", "accept_friend_request", "reject_friend_request",
                        "thaw_friendship", "post_comment", "delete_comment"})  # fmt: skip

    def __init__(self, conn: Any, info: dict[str, Any]) -> None:
        self.conn = conn
        self.info = info

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.conn, name)
        if name not in self.WRITES:
            return method

        def write(*args: Any) -> Any:
            answer = method(*args)
            caught_up(self.info)
            return answer

        return write


@pytest.mark.parametrize(
    "check",
    [
        contract.test_profiles_show_the_generated_counts,
        contract.test_lists_show_friends_and_invitations,
        contract.test_friendship_writes_change_exactly_their_counts,
        contract.test_resources_and_comments,
        contract.test_writes_that_match_nothing_are_errors,
    ],
    ids=lambda check: check.__name__.removeprefix("test_"),
)
def test_the_store_contract_holds_reading_from_a_caught_up_standby(
    postgres_replica, monkeypatch, check
):
    options = {**servers.store_options(postgres_replica), "read_from": "replica"}
    binding = make_binding("bg", "postgres", options)
    monkeypatch.setattr(
        contract,
        "blocking_connection",
        lambda b: CaughtUpConnection(LoopBridge(b), postgres_replica),
    )
    try:
        binding.create_schema(contract.DB)
        fragments = [Fragment(contract.DB, contract.PLAN, k) for k in range(contract.PLAN.count)]
        for f in fragments:
            binding.load_fragment(f)
        caught_up(postgres_replica)
        check((binding, fragments))
    finally:
        binding.close()


def test_a_standby_that_cannot_be_reached_or_is_missing_is_one_line(postgres_replica):
    options = servers.store_options(postgres_replica)
    nowhere = f"host=127.0.0.1 port={servers.free_port()} user=postgres dbname=x"
    binding = make_binding(
        "bg", "postgres", {**options, "replica_dsn": nowhere, "read_from": "replica"}
    )
    try:
        with pytest.raises(UserError) as refused:
            binding.create_schema(DB)
    finally:
        binding.close()
    message = str(refused.value)
    assert message.startswith("store.options.replica_dsn: cannot reach PostgreSQL at 127.0.0.1:")
    assert "\n" not in message
    with pytest.raises(UserError, match=r"store.options.read_from: replica needs replica_dsn"):
        make_options("bg", "postgres", {"dsn": options["dsn"], "read_from": "replica"})
    with pytest.raises(UserError, match=r"store.options.replica_dsn: not a libpq connection"):
        make_options("ehr", "postgres", {"replica_dsn": "nonsense", "read_from": "replica"})
    with pytest.raises(UserError, match=r"store.options.consistency: weak keeps the measures"):
        make_options("sensorlog", "postgres", {**options, "read_from": "replica"})


def test_the_primary_and_standby_nodes_are_killed_paused_and_restored_through_launchers_nodes(
    tmp_path,
):
    directory = tmp_path / "replica"
    try:
        info = servers.start("postgres-replica", directory)
        options = servers.store_options(info)
        listed = {n.name: n for n in nodes.nodes_of(directory)}
        assert set(listed) == {"primary", "standby"}
        for node in listed.values():
            assert node.peer_endpoints == (
                nodes.Endpoint(launcher.REPLICATION_ADDRESS, info["port"]),
            )
            assert node.state == "up" and node.member
        assert listed["standby"].client_endpoints == (
            nodes.Endpoint("127.0.0.1", launcher.node_of(info, "standby")["port"]),
        )

        def write(k: int) -> None:
            with psycopg.connect(options["dsn"], autocommit=True, connect_timeout=10) as c:
                c.execute("CREATE TABLE IF NOT EXISTS t (k int PRIMARY KEY)")
                c.execute("INSERT INTO t VALUES (%s)", (k,))

        def standby_count() -> int:
            with psycopg.connect(options["replica_dsn"], connect_timeout=10) as c:
                try:
                    return int(c.execute("SELECT count(*) FROM t").fetchone()[0])
                except psycopg.errors.UndefinedTable:  # its creation not replayed yet
                    return 0

        write(1)
        assert "paused standby" in nodes.act(directory, "standby", "pause", 60)
        assert {n.name: n.state for n in nodes.nodes_of(directory)}["standby"] == "paused"
        write(2)  # the primary serves while its standby is stopped
        nodes.act(directory, "standby", "resume", 60)
        wait_until(lambda: standby_count() == 2, "the resumed standby replaying")

        killed = nodes.act(directory, "standby", "kill", 60)
        assert killed.startswith("killed standby (SIGKILL")
        assert {n.name: n.state for n in nodes.nodes_of(directory)}["standby"] == "down"
        write(3)
        nodes.act(directory, "standby", "start", 120)
        wait_until(lambda: standby_count() == 3, "the restarted standby catching up")

        nodes.act(directory, "primary", "kill", 60)
        assert standby_count() == 3  # reads go on on the standby without its primary
        with pytest.raises(psycopg.OperationalError):
            write(4)
        restored = nodes.restore(directory, 120)
        assert [line.split(":")[0] for line in restored] == ["started primary"]
        write(4)
        wait_until(lambda: standby_count() == 4, "the standby streaming from the new primary")

        nodes.act(directory, "primary", "stop", 60)
        nodes.act(directory, "standby", "pause", 60)
        assert len(nodes.restore(directory, 120)) == 2
        assert {n.state for n in nodes.nodes_of(directory)} == {"up"}
        write(5)
        wait_until(lambda: standby_count() == 5, "the standby after a restore")
        last = json.loads((directory / "server.json").read_text())
        servers.stop(directory)
        pids = [launcher.node_of(last, name)["pid"] for name in launcher.NODES]
        assert not any(launcher.running(pid) for pid in pids)  # stop stops what runs now

        again = servers.start("postgres-replica", directory)  # a campaign resumed
        assert again["port"] == info["port"]  # the dsns handed out before still reach it
        standby_port = launcher.node_of(info, "standby")["port"]
        assert launcher.node_of(again, "standby")["port"] == standby_port
        write(6)
        wait_until(lambda: standby_count() == 6, "the standby started again on its data")
    finally:
        servers.stop(directory)
