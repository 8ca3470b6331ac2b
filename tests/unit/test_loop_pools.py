"""drivers/loops.LoopPools through the real drivers, against a loopback port nothing
listens on: the pools connect lazily (none at first), so each ask is one StoreError naming
the store and where it is, for every task asking at once, and closing is a no-op."""

import asyncio
import socket

import pytest

from bgbench.drivers import mysql, postgres
from bgbench.drivers.mysql_options import MySQLOptions
from bgbench.drivers.postgres_options import PostgresOptions
from bgbench.errors import StoreError


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])  # closed again when the block ends


def pools_of(store: str, port: int) -> postgres.LoopPools | mysql.LoopPools:
    if store == "postgres":
        dsn = f"postgresql://bg@127.0.0.1:{port}/bg"
        return postgres.loop_pools(PostgresOptions(dsn=dsn, connect_timeout_s=5))
    return mysql.loop_pools(MySQLOptions(port=port, connect_timeout_s=5))


@pytest.mark.parametrize(("store", "name"), [("postgres", "PostgreSQL"), ("mysql", "MySQL")])
def test_a_store_that_does_not_answer_is_one_store_error_for_every_task(
    store: str, name: str
) -> None:
    port = closed_port()
    pools = pools_of(store, port)

    async def three_at_once() -> list[BaseException | tuple[object, object]]:
        return await asyncio.gather(*(pools.acquire() for _ in range(3)), return_exceptions=True)

    async def again() -> None:
        with pytest.raises(StoreError, match=f"no {name} connection to"):
            await pools.acquire()
        await pools.aclose()

    errors = asyncio.run(three_at_once())
    assert all(isinstance(e, StoreError) for e in errors), errors
    assert {str(e).split(":")[0] for e in errors} == {f"no {name} connection to 127.0.0.1"}
    assert all(str(port) in str(e) for e in errors)
    asyncio.run(again())  # another loop: a pool of its own, the same answer
