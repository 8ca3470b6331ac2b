"""PostgreSQL: blocking connections and pools on psycopg 3, asynchronous ones on asyncpg.

Every workload's PostgreSQL binding connects through here. Blocking connections
(schema, loading, read-back, describe, studies) are psycopg's, in autocommit;
socialites on an event loop hold asyncpg connections of a pool per loop (`LoopPools`).
A server that cannot be reached at first contact (preparing) is the user's to fix; later
it is a fault of the store.
"""

import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any, TypeVar

import asyncpg  # type: ignore[import-untyped]
import psycopg
from psycopg_pool import ConnectionPool

from bgbench.drivers import first_line
from bgbench.drivers.postgres_held import Held, HeldPair, LoopPools, acquire_pair, lost
from bgbench.drivers.postgres_options import (
    PostgresOptions,
    asyncpg_dsn,
    server_of,
)
from bgbench.errors import StoreError, UserError
from bgbench.sdk.transactions import Abort, AbortCause

__all__ = [
    "ABORT_SQLSTATES",
    "ISOLATION",
    "Held",
    "HeldBlocking",
    "HeldPair",
    "LoopPools",
    "PostgresOptions",
    "abort_cause",
    "acquire_pair",
    "asyncpg_dsn",
    "await_replica",
    "blocking_pool",
    "check_replica",
    "connect",
    "create_tables",
    "describe",
    "errors",
    "first_line",
    "has_tables",
    "loop_pools",
    "lost",
    "reads_note",
    "reads_options",
    "server_of",
    "server_version",
    "transaction_attempt",
    "tx_loop_pools",
]

Opts = TypeVar("Opts", bound=PostgresOptions)
REPLAY_WAIT_S = 300.0  # how long a load waits for the standby reads go to to replay it
REPLAY_POLL_S = 0.05

ISOLATION = {
    "read committed": psycopg.IsolationLevel.READ_COMMITTED,
    "repeatable read": psycopg.IsolationLevel.REPEATABLE_READ,
    "serializable": psycopg.IsolationLevel.SERIALIZABLE,
}


# The SQLSTATEs of a transaction PostgreSQL refused, after which nothing of it applied
ABORT_SQLSTATES: dict[str, AbortCause] = {
    "40001": "conflict",  # serialization_failure (SERIALIZABLE, REPEATABLE READ)
    "40P01": "deadlock",  # deadlock_detected
    "55P03": "lock_timeout",  # lock_not_available (lock_timeout, NOWAIT)
}


def abort_cause(exc: BaseException) -> AbortCause | None:
    """Why PostgreSQL refused a transaction, for `sdk.Abort`, from an asyncpg or psycopg
    error; None when `exc` is anything else (its outcome is unknown)."""
    if not isinstance(exc, asyncpg.PostgresError | psycopg.Error):
        return None
    sqlstate = getattr(exc, "sqlstate", None)
    return ABORT_SQLSTATES.get(sqlstate) if isinstance(sqlstate, str) else None


@asynccontextmanager
async def transaction_attempt(con: Any, isolation: str) -> AsyncIterator[None]:
    """One transaction attempt on an asyncpg connection at `isolation`: a refusal
    PostgreSQL reports (abort_cause) as sdk.Abort, rolled back; anything else as it came
    (the outcome is unknown)."""
    try:
        async with con.transaction(isolation=isolation):
            yield
    except asyncpg.PostgresError as exc:
        cause = abort_cause(exc)
        if cause is None:
            raise
        raise Abort(cause, first_line(exc)) from None


IDS_PER_BEAT = 10_000


def fragment_table(
    conn: "psycopg.Connection[Any]", ids: list[int], progress: Callable[[], None]
) -> str:
    """A temporary table `frag (id)` of a fragment's ids, dropped at the end of the
    transaction `conn` is in (COPY, a liveness beat per 10,000 ids); the subquery that
    selects them, for the load's DELETEs."""
    conn.execute("CREATE TEMP TABLE frag (id BIGINT PRIMARY KEY) ON COMMIT DROP")
    with conn.cursor().copy("COPY frag FROM STDIN") as copy:
        for lo in range(0, len(ids), IDS_PER_BEAT):
            progress()
            for i in ids[lo : lo + IDS_PER_BEAT]:
                copy.write_row((i,))
    return "(SELECT id FROM frag)"


def connect(
    options: PostgresOptions, first_contact: bool = False, **kwargs: Any
) -> psycopg.Connection[Any]:
    """A blocking autocommit connection; `kwargs` go to psycopg.connect."""
    return _connect(options, "dsn", first_contact, kwargs)


def _connect(
    options: PostgresOptions, field: str, first_contact: bool, kwargs: dict[str, Any]
) -> psycopg.Connection[Any]:
    try:
        return psycopg.connect(
            options.dsn,
            autocommit=True,
            connect_timeout=max(1, round(options.connect_timeout_s)),  # whole seconds
            **kwargs,
        )
    except psycopg.OperationalError as exc:
        where = server_of(options.dsn)
        if first_contact:
            raise UserError(
                f"store.options.{field}: cannot reach PostgreSQL at {where} ({first_line(exc)}): "
                f"correct the {field}, or start the server"
            ) from None
        raise StoreError(f"cannot reach PostgreSQL at {where}: {first_line(exc)}") from None


def reads_options(options: Opts) -> Opts | None:
    """With read_from replica, the options of the standby the read actions go to (its dsn
    as `dsn`); otherwise None: reads stay on the primary."""
    if options.read_from != "replica" or not options.replica_dsn:
        return None
    return options.model_copy(
        update={"dsn": options.replica_dsn, "replica_dsn": None, "read_from": "primary"}
    )


def check_replica(options: PostgresOptions) -> None:
    """First contact with the standby reads go to, if any: one that cannot be reached is the
    user's to fix (UserError naming replica_dsn)."""
    replica = reads_options(options)
    if replica is not None:
        _connect(replica, "replica_dsn", True, {}).close()


def await_replica(options: PostgresOptions, beat: Callable[[], None]) -> None:
    """With read_from replica, return once the standby has replayed everything the primary
    has written until now (a load is done when the reads can see it), calling `beat` as it
    waits; a standby that does not get there within REPLAY_WAIT_S is the store's fault.
    A replica_dsn that is not a server in recovery has nothing to replay."""
    replica = reads_options(options)
    if replica is None:
        return
    with connect(options) as primary, errors(options, "the WAL position"):
        row = primary.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()
    lsn = str(row[0]) if row else "0/0"
    deadline = time.monotonic() + REPLAY_WAIT_S
    with _connect(replica, "replica_dsn", False, {}) as standby, errors(replica, "replay"):
        sql = "SELECT pg_is_in_recovery(), pg_last_wal_replay_lsn() >= %s::pg_lsn"
        while True:
            beat()
            found = standby.execute(sql, (lsn,)).fetchone()
            if found is None or not found[0] or found[1]:
                return
            if time.monotonic() > deadline:
                raise StoreError(
                    f"the standby at {server_of(replica.dsn)} has not replayed the primary's "
                    f"writes up to {lsn} within {REPLAY_WAIT_S:g} s"
                )
            time.sleep(REPLAY_POLL_S)


def reads_note(options: PostgresOptions) -> str:
    """Where the read actions go, for describe(): '' when there is no standby."""
    if options.read_from == "replica" and options.replica_dsn:
        return f"reads from the hot standby at {server_of(options.replica_dsn)}"
    if options.replica_dsn:
        return "reads from the primary (replica_dsn unused)"
    return ""


@contextmanager
def errors(options: PostgresOptions, what: str) -> Iterator[None]:
    """A psycopg error inside as the store's fault, naming the server and what was done."""
    try:
        yield
    except psycopg.Error as exc:
        where = server_of(options.dsn)
        raise StoreError(f"PostgreSQL at {where}, {what}: {first_line(exc)}") from None


def blocking_pool(options: PostgresOptions) -> ConnectionPool[Any]:
    """A psycopg pool of autocommit connections at the options' isolation level, with $n
    parameters as asyncpg's (RawCursor), for bindings that also block."""
    level = ISOLATION[options.isolation]

    def configure(conn: psycopg.Connection[Any]) -> None:
        conn.isolation_level = level

    return ConnectionPool(
        options.dsn,
        min_size=1,
        max_size=options.pool_max,
        kwargs={"autocommit": True, "prepare_threshold": 0, "cursor_factory": psycopg.RawCursor},
        configure=configure,
        check=ConnectionPool.check_connection,  # one its server closed is not handed out
        timeout=options.connect_timeout_s,
        open=True,
    )


def server_version(conn: psycopg.Connection[Any]) -> str:
    row = conn.execute("SHOW server_version").fetchone()
    return str(row[0]) if row else "?"


def describe(options: PostgresOptions) -> str:
    """`PostgreSQL <version> (<isolation>)`, and where reads go when there is a standby:
    never a dsn (it may hold a password)."""
    with connect(options) as conn:
        version = server_version(conn)
    note = reads_note(options)
    return f"PostgreSQL {version} ({options.isolation}{'; ' + note if note else ''})"


class HeldBlocking:
    """Held's blocking twin: a psycopg pool's connection, taken again from the pool (within
    `timeout_s`) on the first use after its server closed it."""

    __slots__ = ("held", "pool", "timeout_s")

    def __init__(self, pool: ConnectionPool[Any], held: Any, timeout_s: float) -> None:
        self.pool = pool
        self.held: psycopg.Connection[Any] | None = held
        self.timeout_s = timeout_s

    def live(self) -> psycopg.Connection[Any]:
        """The connection, a fresh one if the held one is gone (StoreError: none)."""
        if self.held is not None and not self.held.closed:
            return self.held
        self.release()
        try:
            self.held = self.pool.getconn(timeout=self.timeout_s)
        except Exception as exc:
            raise StoreError(f"no PostgreSQL connection: {first_line(exc)}") from None
        return self.held

    def release(self) -> None:
        """Back to its pool, which drops it when it is closed."""
        held, self.held = self.held, None
        if held is not None:
            self.pool.putconn(held)


def loop_pools(options: PostgresOptions, **server_settings: str) -> LoopPools:
    """The per-loop asyncpg pools of these options. Every connection's transactions run at
    the options' isolation, sent as the session's default when it starts; `server_settings`
    add to (or replace) the settings sent."""
    return LoopPools(
        asyncpg_dsn(options.dsn),
        server_of(options.dsn),
        options.pool_max,
        options.connect_timeout_s,
        {"default_transaction_isolation": options.isolation, **server_settings},
    )


def create_tables(options: PostgresOptions, advisory_lock: int, schema: str) -> None:
    """Run `schema` (CREATE ... IF NOT EXISTS) under an advisory lock (two coordinators
    creating one database's schema at once), then check the options' replica."""
    with connect(options, first_contact=True) as conn:
        conn.execute("SELECT pg_advisory_lock(%s)", (advisory_lock,))
        try:
            conn.execute(schema)
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (advisory_lock,))
    check_replica(options)


def has_tables(options: PostgresOptions, tables: tuple[str, ...]) -> bool:
    """Whether the current schema holds every one of `tables` (then the options' replica
    is checked too)."""
    with connect(options, first_contact=True) as conn:
        have = conn.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = "
            "current_schema() AND table_name = ANY(%s)",
            (list(tables),),
        ).fetchone()
    if have is None or have[0] < len(tables):
        return False
    check_replica(options)
    return True


def tx_loop_pools(
    options: PostgresOptions, lock_timeout_ms: int
) -> tuple[LoopPools, LoopPools | None]:
    """A transactional binding's per-loop pools, writes and (with a replica) reads, their
    sessions waiting `lock_timeout_ms` at most for a lock."""
    timeout = {"lock_timeout": f"{lock_timeout_ms}ms"}
    replica = reads_options(options)
    return loop_pools(options, **timeout), loop_pools(replica, **timeout) if replica else None
