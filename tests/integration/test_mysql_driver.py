"""MySQL (Debian's MariaDB) through deploy/local/ and drivers/mysql.py, on real servers:
the launcher starts and stops one, both drivers round-trip, and the errors with which
InnoDB refuses a transaction carry their abort cause."""

import asyncio
import json

import pytest
from pydantic import SecretStr

from bgbench.drivers import mysql
from bgbench.errors import StoreError, UserError
from bgbench.launchers import nodes
from bgbench.launchers.mysql_server import greets
from bgbench.launchers.procs import free_port, running
from tests.conftest import fresh_mysql_database, servers


@pytest.fixture(scope="module")
def options(mysql_server) -> mysql.MySQLOptions:
    """A fresh database with a table of two rows (ids 1 and 2)."""
    made = mysql.MySQLOptions(**fresh_mysql_database(mysql_server), lock_wait_timeout_s=1)
    with mysql.connect(made, first_contact=True) as conn:
        cursor = conn.cursor()
        cursor.execute("CREATE TABLE kv (id INT PRIMARY KEY, v INT NOT NULL) ENGINE=InnoDB")
        cursor.execute("INSERT INTO kv VALUES (1, 0), (2, 0)")
    return made


def test_the_launcher_starts_a_server_that_takes_connections_survives_a_kill_and_stops(
    tmp_path,
):
    info = servers.start("mysql", tmp_path)
    try:
        assert info["name"].startswith("MariaDB 10.")
        assert json.loads((tmp_path / "server.json").read_text())["pid"] == info["pid"]
        given = servers.store_options(info)
        assert given["port"] == info["port"] and given["database"].startswith("bg_")
        made = mysql.MySQLOptions(**given)
        assert mysql.describe(made) == f"{info['name']} (repeatable read)"
        with mysql.connect(made) as conn:
            conn.cursor().execute("CREATE TABLE kept (v INT) ENGINE=InnoDB")
            conn.cursor().execute("INSERT INTO kept VALUES (7)")
        # a scenario's node actions: killed (a crash), then started on its data again
        assert [n.name for n in nodes.nodes_of(tmp_path)] == ["mysql"]
        assert nodes.act(tmp_path, "mysql", "kill", 60).startswith("killed mysql")
        assert not greets(info["port"]) and nodes.nodes_of(tmp_path)[0].state == "down"
        nodes.act(tmp_path, "mysql", "start", 120)
        with mysql.connect(made) as conn:
            cursor = conn.cursor()
            cursor.execute("SELECT v FROM kept")
            assert cursor.fetchall() == ((7,),)  # committed before the kill: recovered
        info = json.loads((tmp_path / "server.json").read_text())
    finally:
        servers.stop(tmp_path)
    assert not running(info["pid"])
    assert not greets(info["port"])
    assert not (tmp_path / "server.json").exists()


def test_blocking_and_async_connections_round_trip_at_the_session_settings(options):
    with mysql.connect(options) as conn:
        cursor = conn.cursor()
        cursor.execute("UPDATE kv SET v = v + %s WHERE id = 1", (5,))
        cursor.execute("SELECT @@innodb_lock_wait_timeout")
        assert cursor.fetchone() == (1,)

    async def read() -> list[tuple]:
        pools = mysql.loop_pools(options)
        held = await mysql.Held.acquire(pools)
        try:
            async with (await held.live()).cursor() as cursor:
                await cursor.execute("SELECT v, @@tx_isolation FROM kv WHERE id = %s", (1,))
                return list(await cursor.fetchall())
        finally:
            await held.release()
            await pools.aclose()

    assert asyncio.run(read()) == [(5, "REPEATABLE-READ")]


async def _locking(options: mysql.MySQLOptions, first: int, then: int, queue: list[int]):
    """Lock row `first`, then ask for row `then` inside one transaction; the error, if any."""
    pools = mysql.loop_pools(options)
    held = await mysql.Held.acquire(pools)
    con = await held.live()
    try:
        async with con.cursor() as cursor:
            await con.begin()
            await cursor.execute("UPDATE kv SET v = v + 1 WHERE id = %s", (first,))
            queue.append(first)
            while len(queue) < 2:  # both hold their first row before either asks again
                await asyncio.sleep(0)
            await cursor.execute("UPDATE kv SET v = v + 1 WHERE id = %s", (then,))
            await con.commit()
        return None
    except mysql.DRIVER_ERRORS as exc:
        await con.rollback()
        return exc
    finally:
        await held.release()
        await pools.aclose()


def test_a_deadlock_and_a_lock_wait_timeout_carry_their_abort_cause(options):
    async def crossing():
        held: list[int] = []
        return await asyncio.gather(_locking(options, 1, 2, held), _locking(options, 2, 1, held))

    outcomes = asyncio.run(crossing())
    refused = [e for e in outcomes if e is not None]
    assert len(refused) == 1, outcomes  # InnoDB picks one victim; the other commits
    assert mysql.abort_cause(refused[0]) == "deadlock"

    with mysql.connect(options) as holder:
        holder.begin()
        holder.cursor().execute("UPDATE kv SET v = v + 1 WHERE id = 1")
        with mysql.connect(options) as waiter, pytest.raises(mysql.DRIVER_ERRORS) as raised:
            waiter.cursor().execute("UPDATE kv SET v = v + 1 WHERE id = 1")
        holder.rollback()
    assert mysql.abort_cause(raised.value) == "lock_timeout"
    assert mysql.abort_cause(StoreError("x")) is None


def test_a_held_connection_the_server_dropped_is_replaced_at_the_next_action(options):
    async def actions() -> tuple[bool, int]:
        pools = mysql.loop_pools(options)
        held = await mysql.Held.acquire(pools)
        try:
            first = await held.live()
            with mysql.connect(options) as admin:
                admin.cursor().execute(f"KILL {first.thread_id()}")
            failed = False
            try:  # the action that meets the dropped connection fails: no retry inside it
                async with first.cursor() as cursor:
                    await cursor.execute("SELECT 1")
            except mysql.DRIVER_ERRORS:
                failed = True
            again = await held.live()
            async with again.cursor() as cursor:
                await cursor.execute("SELECT CONNECTION_ID()")
                (thread,) = await cursor.fetchone()
            assert again is not first and thread != first.thread_id()
            return failed, int(thread)
        finally:
            await held.release()
            await pools.aclose()

    failed, thread = asyncio.run(actions())
    assert failed and thread > 0


def test_a_write_over_a_row_changed_since_the_snapshot_is_a_conflict(options):
    snapshot = options.model_copy(update={"snapshot_isolation": True})
    with mysql.connect(snapshot) as reader, mysql.connect(options) as writer:
        cursor = reader.cursor()
        reader.begin()
        cursor.execute("SELECT v FROM kv WHERE id = 2")
        writer.cursor().execute("UPDATE kv SET v = v + 10 WHERE id = 2")
        with pytest.raises(mysql.DRIVER_ERRORS) as raised:
            cursor.execute("UPDATE kv SET v = v + 1 WHERE id = 2")
        reader.rollback()
    assert mysql.abort_cause(raised.value) == "conflict"


def test_an_unreachable_server_or_a_wrong_password_is_one_line_naming_the_option(options):
    secret = "not-the-Passw0rd"
    with pytest.raises(UserError) as raised:
        mysql.connect(
            options.model_copy(update={"password": SecretStr(secret)}), first_contact=True
        )
    text = str(raised.value)
    assert text.startswith("store.options.password:") and "\n" not in text
    assert secret not in text
    nowhere = options.model_copy(update={"port": free_port(), "connect_timeout_s": 2.0})
    with pytest.raises(UserError, match=r"^store.options.host: cannot reach MySQL"):
        mysql.connect(nowhere, first_contact=True)
    with pytest.raises(StoreError, match=r"^MySQL at 127.0.0.1:\d+/bg_"):
        mysql.connect(nowhere)

    async def pool() -> None:
        await mysql.loop_pools(nowhere).acquire()

    with pytest.raises(StoreError, match=r"^no MySQL (pool|connection) (at|to) 127.0.0.1"):
        asyncio.run(pool())
