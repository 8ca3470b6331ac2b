"""MySQL (Debian's MariaDB) through deploy/local/ and drivers/mysql.py, on real servers:
the launcher starts and stops one, both drivers round-trip, and the errors with which
InnoDB refuses a transaction carry their abort cause."""

import asyncio
import json

import pytest
from pydantic import SecretStr

from bgbench.drivers import mysql
from bgbench.errors import StoreError, UserError
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


def test_the_launcher_starts_a_server_that_takes_connections_and_stops_it(tmp_path):
    info = servers.start("mysql", tmp_path)
    try:
        assert info["name"].startswith("MariaDB 10.")
        assert json.loads((tmp_path / "server.json").read_text())["pid"] == info["pid"]
        given = servers.store_options(info)
        assert given["port"] == info["port"] and given["database"].startswith("bg_")
        described = mysql.describe(mysql.MySQLOptions(**given))
        assert described == f"{info['name']} (repeatable read)"
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
