"""PostgreSQL's asynchronous connections: asyncpg pools per event loop, and the connection a
socialite task holds for its run with its statements prepared on it. `bgbench.drivers.postgres`
gives them to the bindings with the rest of the driver."""

from collections.abc import Awaitable
from typing import Any

import asyncpg  # type: ignore[import-untyped]

from bgbench.drivers import first_line, loops


class LoopPools(loops.LoopPools):
    """One asyncpg pool per event loop, for every workload's PostgreSQL binding (see
    drivers/loops.LoopPools). Statements stay prepared for the connection's life
    (max_cached_statement_lifetime=0): the hot ones are few."""

    store = "PostgreSQL"

    def __init__(
        self,
        dsn: str,
        where: str,
        max_size: int,
        timeout_s: float,
        server_settings: dict[str, str],
    ) -> None:
        super().__init__(where, max_size, timeout_s)
        self.dsn = dsn
        self.server_settings = server_settings

    async def _create(self) -> Any:
        return await asyncpg.create_pool(
            self.dsn,
            min_size=0,
            max_size=self.max_size,
            timeout=self.timeout_s,
            max_cached_statement_lifetime=0,
            server_settings=self.server_settings,
        )

    def _acquire_from(self, pool: Any) -> Awaitable[Any]:
        return pool.acquire(timeout=self.timeout_s)  # type: ignore[no-any-return]

    async def _close(self, pool: Any) -> None:
        await pool.close()

    def _message(self, exc: BaseException) -> str:
        return first_line(exc)


def lost(con: Any) -> bool:
    """Whether an asyncpg connection of a pool is gone: closed, or (its server closed it)
    handed back to its pool already, which then refuses every call on it."""
    try:
        return bool(con.is_closed())
    except asyncpg.InterfaceError:
        return True


class Held:
    """A socialite's connection of a LoopPools, held for its run, and taken again when its
    server closed it (killed, restarted): the next action after the loss asks the pool for
    one fresh connection, within the pool's timeout; none is that action's error (the
    server is still down) and the action after asks again. No retries inside an action.

    `fetchrow`, `fetch` and `execute` run a statement prepared once on the held connection
    (kept for the connection's life): a call goes straight to asyncpg's prepared statement,
    without the connection's statement-cache lookup and pool-proxy wrappers on every call.
    A prepared statement refuses a call (InterfaceError, before anything is sent) once its
    connection is closed or handed back to the pool: that is when a fresh one is taken."""

    __slots__ = ("con", "pool", "pools", "prepared")

    def __init__(self, pools: LoopPools, con: Any, pool: Any) -> None:
        self.pools = pools
        self.con: Any = con
        self.pool: Any = pool
        self.prepared: dict[str, Any] = {}  # SQL -> its statement prepared on `con`

    @classmethod
    async def acquire(cls, pools: LoopPools) -> "Held":
        con, pool = await pools.acquire()
        return cls(pools, con, pool)

    async def live(self) -> Any:
        """The connection, a fresh one if the held one is gone (StoreError: none)."""
        if self.con is not None and not lost(self.con):
            return self.con
        await self.release()
        self.con, self.pool = await self.pools.acquire()
        return self.con

    async def statement(self, sql: str) -> Any:
        """`sql` prepared on the live connection (prepared now if it is not yet, or if the
        held connection was lost and a fresh one taken)."""
        con = await self.live()
        stmt = self.prepared.get(sql)
        if stmt is None:
            stmt = self.prepared[sql] = await con.prepare(sql)
        return stmt

    def fetchrow(self, sql: str, *args: object) -> Awaitable[Any]:
        """The first row of prepared `sql` with `args` (None: no row)."""
        stmt = self.prepared.get(sql)
        if stmt is not None:
            try:
                return stmt.fetchrow(*args)  # type: ignore[no-any-return]
            except asyncpg.InterfaceError:  # its connection is gone: a fresh one below
                del self.prepared[sql]
        return self._renewed(sql, args, 1)

    def fetch(self, sql: str, *args: object) -> Awaitable[list[Any]]:
        """Every row of prepared `sql` with `args`."""
        stmt = self.prepared.get(sql)
        if stmt is not None:
            try:
                return stmt.fetch(*args)  # type: ignore[no-any-return]
            except asyncpg.InterfaceError:
                del self.prepared[sql]
        return self._renewed(sql, args, 0)

    async def execute(self, sql: str, *args: object) -> str:
        """Prepared `sql` with `args`; its status (e.g. 'UPDATE 1')."""
        stmt = self.prepared.get(sql)
        if stmt is not None:
            try:
                call = stmt.fetch(*args)
            except asyncpg.InterfaceError:
                del self.prepared[sql]
                stmt = None
        if stmt is None:
            stmt = await self.statement(sql)
            call = stmt.fetch(*args)
        await call
        return str(stmt.get_statusmsg())

    async def _renewed(self, sql: str, args: tuple[object, ...], limit: int) -> Any:
        stmt = await self.statement(sql)
        return await (stmt.fetchrow(*args) if limit == 1 else stmt.fetch(*args))

    async def release(self) -> None:
        """Back to its pool (nothing when its pool took it back already)."""
        con, self.con = self.con, None
        self.prepared.clear()  # a statement lives and dies with its connection
        if con is not None:
            await self.pool.release(con, timeout=self.pools.timeout_s)


class HeldPair:
    """A socialite task's connections, held for its run: `writes` on the primary, and
    `reads` on the standby its reads go to (the same Held when there is none). The
    PostgreSQL bindings' async connections extend it with their statements."""

    __slots__ = ("reads", "writes")

    def __init__(self, writes: Held, reads: Held | None = None) -> None:
        self.writes = writes
        self.reads = reads or writes

    @property
    def con(self) -> Any:
        """The primary's connection held now (None once closed)."""
        return self.writes.con

    @property
    def reader(self) -> Any:
        """The connection reads use now: the standby's, or the primary's."""
        return self.reads.con

    async def close(self) -> None:
        try:
            if self.reads is not self.writes:
                await self.reads.release()
        finally:
            await self.writes.release()


async def acquire_pair(pools: LoopPools, read_pools: LoopPools | None) -> tuple[Held, Held | None]:
    """One connection from `pools` and, with a standby to read from, one from `read_pools`
    (the first given back when the second cannot be had)."""
    writes = await Held.acquire(pools)
    if read_pools is None:
        return writes, None
    try:
        return writes, await Held.acquire(read_pools)
    except BaseException:
        await writes.release()
        raise
