"""MySQL (MariaDB): blocking connections on PyMySQL, asynchronous ones on asyncmy.

Every workload's MySQL binding connects through here. Blocking connections (schema,
loading, read-back, describe) are PyMySQL's, in autocommit; socialites on an event loop
hold asyncmy connections of a pool per loop (`LoopPools`). Every connection starts with
the options' session settings (isolation, statement and lock-wait timeouts), and every
read of an answer gives up after `read_timeout_s`: nothing waits on a server forever.
A server that cannot be reached at first contact (preparing) is the user's to fix; later
it is a fault of the store.

Transactions: `abort_cause(exc)` names the errors with which InnoDB refuses an attempt
(deadlock, lock wait timeout, a snapshot's row changed), for a binding to raise
`sdk.Abort`. InnoDB rolls back the whole transaction on a deadlock but only the statement
on a lock wait timeout: `Transaction` (one attempt, the bindings' block) rolls back
before it raises Abort.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterator
from contextlib import contextmanager
from typing import Any

import asyncmy
import asyncmy.errors
import pymysql
import pymysql.err

from bgbench import sdk
from bgbench.drivers import first_line, loops
from bgbench.drivers.mysql_options import MySQLOptions
from bgbench.errors import StoreError, UserError

__all__ = [
    "DRIVER_ERRORS",
    "Held",
    "LoopPools",
    "MySQLOptions",
    "Transaction",
    "abort_cause",
    "changed",
    "connect",
    "create_database",
    "create_tables",
    "describe",
    "error_code",
    "errors",
    "first_line",
    "has_tables",
    "loop_pools",
    "lost",
    "product",
    "raise_refusal",
    "rows_of",
    "unreachable",
]

# What the drivers raise when the server refuses a statement or the connection fails
# (a read that timed out is an OSError: TimeoutError; a stream cut short an EOFError).
DRIVER_ERRORS: tuple[type[BaseException], ...] = (
    pymysql.err.MySQLError,
    asyncmy.errors.MySQLError,
    OSError,
    EOFError,
)

# Server error codes with which InnoDB refuses a transaction's attempt
ABORT_CODES: dict[int, sdk.AbortCause] = {
    1213: "deadlock",  # ER_LOCK_DEADLOCK: the transaction was rolled back
    1205: "lock_timeout",  # ER_LOCK_WAIT_TIMEOUT: only the statement was rolled back
    3572: "lock_timeout",  # ER_LOCK_NOWAIT (MySQL 8, FOR UPDATE NOWAIT)
    1020: "conflict",  # ER_CHECKREAD: a row read by the snapshot changed since
    3101: "conflict",  # ER_TRANSACTION_ROLLBACK_DURING_COMMIT (MySQL group replication)
}
UNKNOWN_DATABASE = 1049
ACCESS_DENIED = (1044, 1045, 1698)


def error_code(exc: BaseException) -> int | None:
    """The server's (or client's) error number of a driver error, if it has one."""
    if isinstance(exc, pymysql.err.MySQLError | asyncmy.errors.MySQLError) and exc.args:
        code = exc.args[0]
        return code if isinstance(code, int) else None
    return None


def abort_cause(exc: BaseException) -> sdk.AbortCause | None:
    """Why the server refused a transaction's attempt, when it did (the binding raises
    sdk.Abort(cause) after rolling back); None for every other error."""
    code = error_code(exc)
    return ABORT_CODES.get(code) if code is not None else None


def unreachable(options: MySQLOptions, exc: BaseException) -> StoreError:
    """A driver error as the store's fault, on one line naming the server (never a
    password)."""
    return StoreError(f"MySQL at {options.where}: {_message(exc)}")


def _message(exc: BaseException) -> str:
    code = error_code(exc)
    text = exc.args[1] if code is not None and len(exc.args) > 1 else exc
    line = first_line(text) if isinstance(text, BaseException) else str(text).splitlines()[0]
    return f"({code}) {line}" if code is not None else line


def _connect_kwargs(options: MySQLOptions) -> dict[str, Any]:
    return {
        "host": options.host,
        "port": options.port,
        "user": options.user,
        "password": options.secret,
        "connect_timeout": options.connect_timeout_s,
        "read_timeout": options.read_timeout_s,
        "autocommit": True,
        "init_command": options.session_settings(),
        "charset": "utf8mb4",
    }


def connect(
    options: MySQLOptions, first_contact: bool = False, with_database: bool = True, **kwargs: Any
) -> pymysql.connections.Connection[Any]:
    """A blocking autocommit PyMySQL connection to the options' database (to the server
    only, without `with_database`); `kwargs` go to pymysql.connect."""
    try:
        return pymysql.connect(
            **_connect_kwargs(options),
            database=options.database if with_database else None,
            write_timeout=options.read_timeout_s,
            **kwargs,
        )
    except DRIVER_ERRORS as exc:
        if not first_contact:
            raise unreachable(options, exc) from None
        field = _field_of(exc)
        raise UserError(
            f"store.options.{field}: cannot reach MySQL at {options.where} ({_message(exc)}): "
            f"correct the {'host or port' if field == 'host' else field}, or start the server"
        ) from None


def _field_of(exc: BaseException) -> str:
    """The option a refused first contact points at."""
    code = error_code(exc)
    if code == UNKNOWN_DATABASE:
        return "database"
    if code in ACCESS_DENIED:
        return "password"
    return "host"


def create_database(options: MySQLOptions) -> None:
    """Make the options' database when it is missing (first contact: a server that cannot
    be reached is the user's to fix). The name is checked by MySQLOptions."""
    with (
        connect(options, first_contact=True, with_database=False) as conn,
        errors(options, "CREATE DATABASE"),
    ):
        conn.cursor().execute(
            f"CREATE DATABASE IF NOT EXISTS `{options.database}` "
            "CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
        )


@contextmanager
def errors(options: MySQLOptions, what: str) -> Iterator[None]:
    """A driver error inside as the store's fault, naming the server and what was done."""
    try:
        yield
    except DRIVER_ERRORS as exc:
        raise StoreError(f"MySQL at {options.where}, {what}: {_message(exc)}") from None


def product(version: str) -> str:
    """`MariaDB 10.11.6` or `MySQL 8.0.36` from the server's VERSION()."""
    number = version.split("-", 1)[0]
    return f"MariaDB {number}" if "mariadb" in version.lower() else f"MySQL {number}"


def describe(options: MySQLOptions) -> str:
    """`MariaDB <version> (<isolation>)`: never a password."""
    with connect(options, with_database=False) as conn, errors(options, "VERSION()"):
        cursor = conn.cursor()
        cursor.execute("SELECT VERSION()")
        row = cursor.fetchone()
    version = str(row[0])[:100] if row else "?"
    return f"{product(version)} ({options.level})"


class LoopPools(loops.LoopPools):
    """One asyncmy pool per event loop, for every workload's MySQL binding (see
    drivers/loops.LoopPools)."""

    store = "MySQL"

    def __init__(self, options: MySQLOptions) -> None:
        super().__init__(options.where, options.pool_max, options.connect_timeout_s)
        self.options = options

    async def _create(self) -> Any:
        return await asyncio.wait_for(
            asyncmy.create_pool(
                minsize=self.options.pool_min,
                maxsize=self.options.pool_max,
                pool_recycle=-1,
                db=self.options.database,
                **_connect_kwargs(self.options),
            ),
            self.timeout_s,
        )

    def _acquire_from(self, pool: Any) -> Awaitable[Any]:
        return asyncio.wait_for(pool.acquire(), self.timeout_s)

    async def _close(self, pool: Any) -> None:
        pool.close()
        await pool.wait_closed()

    def _message(self, exc: BaseException) -> str:
        return _message(exc)


def loop_pools(options: MySQLOptions) -> LoopPools:
    """The per-loop asyncmy pools of these options."""
    return LoopPools(options)


def lost(con: Any) -> bool:
    """Whether an asyncmy connection is gone: closed, or its stream ended or broke (the
    server closed it; a read failed), which asyncmy's pool checks too."""
    return not con.connected or bool(getattr(con, "_stream_broken", False))


class Held:
    """A socialite's connection of a LoopPools, held for its run, and taken again when it
    was lost (its server killed or restarted, a read timed out): the next action after the
    loss asks the pool for one fresh connection, within the pool's timeout; none is that
    action's error and the action after asks again. No retries inside an action."""

    __slots__ = ("con", "pool", "pools")

    def __init__(self, pools: LoopPools, con: Any, pool: Any) -> None:
        self.pools = pools
        self.con: Any = con
        self.pool: Any = pool

    @classmethod
    async def acquire(cls, pools: LoopPools) -> Held:
        con, pool = await pools.acquire()
        return cls(pools, con, pool)

    async def live(self) -> Any:
        """The connection, a fresh one if the held one is gone (StoreError: none)."""
        if self.con is not None and not lost(self.con):
            return self.con
        await self.release()
        self.con, self.pool = await self.pools.acquire()
        return self.con

    async def release(self) -> None:
        """Back to its pool (which drops it when it is closed or inside a transaction)."""
        con, self.con = self.con, None
        if con is not None:
            self.pool.release(con)


async def rows_of(con: Any, statement: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    """The rows one statement answers on an asyncmy connection."""
    async with con.cursor() as cursor:
        await cursor.execute(statement, args)
        return list(await cursor.fetchall())


async def changed(con: Any, statement: str, args: tuple[Any, ...]) -> int:
    """How many rows one statement changed on an asyncmy connection."""
    async with con.cursor() as cursor:
        return int(await cursor.execute(statement, args))


class Transaction:
    """One attempt on an asyncmy connection: BEGIN; COMMIT when the block ends; ROLLBACK on
    any error (InnoDB keeps a lock wait timeout's transaction open), a refusal InnoDB
    reports (abort_cause) raised as sdk.Abort, anything else as it came."""

    def __init__(self, con: Any) -> None:
        self.con = con

    async def __aenter__(self) -> Any:
        await self.con.begin()
        return self.con

    async def __aexit__(self, kind: Any, exc: BaseException | None, tb: Any) -> None:
        if exc is None:
            try:
                await self.con.commit()
                return
            except DRIVER_ERRORS as failed:
                await self.roll_back()
                raise_refusal(failed)
                raise
        await self.roll_back()
        raise_refusal(exc)

    async def roll_back(self) -> None:
        try:
            await self.con.rollback()
        except DRIVER_ERRORS:
            self.con.close()  # the pool drops it; the next call takes another


def raise_refusal(exc: BaseException) -> None:
    """`exc` as sdk.Abort when it is InnoDB refusing the attempt (rolled back already)."""
    cause = abort_cause(exc)
    if cause is not None:
        raise sdk.Abort(cause, first_line(exc)) from None


def create_tables(options: MySQLOptions, statements: tuple[str, ...]) -> None:
    """The database (unless it exists), then `statements` (CREATE ... IF NOT EXISTS)."""
    create_database(options)
    with connect(options) as conn, errors(options, "the schema"):
        for statement in statements:
            conn.cursor().execute(statement)


def has_tables(options: MySQLOptions, tables: tuple[str, ...]) -> bool:
    """Whether the options' database holds every one of `tables`."""
    with connect(options, first_contact=True) as conn, errors(options, "the schema"):
        cursor = conn.cursor()
        cursor.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = "
            "DATABASE() AND table_name IN %s",
            (tables,),
        )
        have = cursor.fetchone()
    return have is not None and int(have[0]) >= len(tables)
