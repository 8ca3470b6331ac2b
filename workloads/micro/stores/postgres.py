"""PostgreSQL for the Micro benchmark: a group is a row, its items rows keyed by the group.

    micro_groups   (id PK, total, next_message, version)
    micro_items    (grp, item, value; PK (grp, item))
    micro_messages (grp, msg, sender, body; PK (grp, msg))

Every operation is one transaction on asyncpg, at the level `concurrency_control` picks:
- pessimistic: READ COMMITTED; update_items locks its items with SELECT ... FOR UPDATE
  (item locking), by item number (`lock_order` sorted: no deadlock between two of them)
  or in the order the workload drew them (given: opposite orders deadlock, and
  PostgreSQL aborts one after its deadlock_timeout, 1 s by default), then adds the delta
  to them and to the group's total in one statement (the group row's lock is the last one
  taken, so it takes part in no deadlock);
- optimistic: SERIALIZABLE with plain reads: a concurrent commit on the same rows makes
  PostgreSQL refuse the attempt (serialization failure), an Abort("conflict").
A refused attempt raises `sdk.Abort` with the cause `drivers.postgres.abort_cause` finds
(40001 conflict, 40P01 deadlock, 55P03 lock_timeout: waited `lock_timeout_ms` for a row).
A message's key is the group row's `next_message`, taken and advanced by the statement
that inserts the message: unique within the group. read_group is one statement, one
snapshot. Schema, loading and read-back are blocking, on psycopg (COPY, as EHR's binding).
"""

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, ClassVar

from bgbench.drivers import postgres as pg
from bgbench.drivers.postgres_options import server_of
from bgbench.errors import StoreError
from bgbench.workloads.micro.store import Concurrency, FragmentGroups, GroupView
from bgbench.workloads.micro.stores.options_sql import PostgresMicroOptions
from bgbench.workloads.micro.stores.sql_common import TABLES, distinct

if TYPE_CHECKING:
    from bgbench.workloads.micro.config import MicroDatabaseConfig

ADVISORY_LOCK = 7028  # two coordinators creating the schema of one database at once
KEYS_PER_READ = 10_000
ISOLATION = {"pessimistic": "read_committed", "optimistic": "serializable"}

SCHEMA = """
CREATE TABLE IF NOT EXISTS micro_groups (
    id BIGINT PRIMARY KEY, total BIGINT NOT NULL, next_message BIGINT NOT NULL,
    version BIGINT NOT NULL);
CREATE TABLE IF NOT EXISTS micro_items (
    grp BIGINT NOT NULL, item INT NOT NULL, value BIGINT NOT NULL, PRIMARY KEY (grp, item));
CREATE TABLE IF NOT EXISTS micro_messages (
    grp BIGINT NOT NULL, msg BIGINT NOT NULL, sender BIGINT NOT NULL, body BIGINT NOT NULL,
    PRIMARY KEY (grp, msg));
"""

# One statement, one snapshot: the group row, its message count and its items.
READ_GROUP = (
    "SELECT g.total, (SELECT count(*) FROM micro_messages m WHERE m.grp = $1), i.item, i.value "
    "FROM micro_groups g LEFT JOIN micro_items i ON i.grp = g.id WHERE g.id = $1"
)
# The items in the order given (ORDER BY before the locking clause: rows are locked as
# they leave the sort, so in that order).
ITEMS = (
    "SELECT i.item, i.value FROM unnest($2::int[]) WITH ORDINALITY AS u(item, n) "
    "JOIN micro_items i ON i.grp = $1 AND i.item = u.item ORDER BY u.n"
)
LOCK_ITEMS = ITEMS + " FOR UPDATE OF i"
ADD_DELTA = (
    "WITH changed AS (UPDATE micro_items SET value = value + $3 "
    "WHERE grp = $1 AND item = ANY($2::int[]) RETURNING 1) "
    "UPDATE micro_groups SET total = total + $3 * (SELECT count(*) FROM changed), "
    "version = version + 1 WHERE id = $1"
)
SEND = (
    "WITH slot AS (UPDATE micro_groups SET next_message = next_message + 1, "
    "version = version + 1 WHERE id = $1 RETURNING next_message - 1 AS msg) "
    "INSERT INTO micro_messages SELECT $1, msg, $2, $3 FROM slot RETURNING msg"
)
READ_BACK = (
    "SELECT g.id, g.total, (SELECT count(*) FROM micro_messages m WHERE m.grp = g.id), "
    "i.item, i.value FROM micro_groups g LEFT JOIN micro_items i ON i.grp = g.id "
    "WHERE g.id = ANY(%s)"
)


class PostgresMicroBinding:
    name: ClassVar[str] = "postgres"
    concurrency: ClassVar[Concurrency] = "asyncio"
    suspends: ClassVar[bool] = True
    embedded: ClassVar[bool] = False
    can_read_back: ClassVar[bool] = True
    Options: ClassVar[type[PostgresMicroOptions]] = PostgresMicroOptions
    file_options: ClassVar[tuple[str, ...]] = ()

    def __init__(self, options: PostgresMicroOptions) -> None:
        self.options = options
        self._ready = False
        self._loop_pools, self._read_loop_pools = pg.tx_loop_pools(options, options.lock_timeout_ms)

    # -- schema and load -------------------------------------------------------------------
    def create_schema(self, db: "MicroDatabaseConfig") -> None:
        pg.create_tables(self.options, ADVISORY_LOCK, SCHEMA)
        self._ready = True

    def use_schema(self, db: "MicroDatabaseConfig") -> None:
        if not pg.has_tables(self.options, TABLES):
            raise StoreError(
                f"no Micro schema in {server_of(self.options.dsn)}: create_schema must run first"
            )
        self._ready = True

    def load_fragment(self, fragment: FragmentGroups, progress: Callable[[], None]) -> None:
        keys = [int(k) for k in fragment.group_keys()]
        with pg.connect(self.options) as conn, conn.transaction():
            pg.fragment_table(conn, keys, progress)
            for table, column in (("micro_messages", "grp"), ("micro_items", "grp")):
                conn.execute(f"DELETE FROM {table} WHERE {column} IN (SELECT id FROM frag)")
            conn.execute("DELETE FROM micro_groups WHERE id IN (SELECT id FROM frag)")
            for batch in fragment.group_batches():
                progress()
                with conn.cursor().copy("COPY micro_groups FROM STDIN") as copy:
                    for rows in batch:
                        copy.write_row((rows.group, sum(rows.values), 0, 0))
                with conn.cursor().copy("COPY micro_items FROM STDIN") as copy:
                    for rows in batch:
                        for item, value in enumerate(rows.values):
                            copy.write_row((rows.group, item, value))
        with pg.connect(self.options) as conn:
            conn.execute("ANALYZE micro_groups, micro_items, micro_messages")
        pg.await_replica(self.options, progress)

    def read_back(
        self, fragment: FragmentGroups, progress: Callable[[], None]
    ) -> dict[int, GroupView]:
        keys = [int(k) for k in fragment.group_keys()]
        views: dict[int, GroupView] = {}
        with pg.connect(self.options) as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            for lo in range(0, len(keys), KEYS_PER_READ):
                progress()
                rows = conn.execute(READ_BACK, (keys[lo : lo + KEYS_PER_READ],)).fetchall()
                for group, total, messages, item, value in rows:
                    view = views.setdefault(int(group), GroupView({}, int(total), int(messages)))
                    if item is not None:
                        view.values[int(item)] = int(value)
        return views

    # -- running ---------------------------------------------------------------------------
    def connect(self) -> "PostgresMicroConnection":
        raise NotImplementedError("the PostgreSQL binding runs socialites as asyncio tasks")

    async def connect_async(self) -> "PostgresMicroConnection":
        if not self._ready:
            raise StoreError("create_schema or use_schema must run before connect")
        writes, reads = await pg.acquire_pair(self._loop_pools, self._read_loop_pools)
        isolation = ISOLATION[self.options.concurrency_control]
        return PostgresMicroConnection(writes, reads, isolation, self.options.lock_order)

    async def aclose(self) -> None:
        await self._loop_pools.aclose()
        if self._read_loop_pools is not None:
            await self._read_loop_pools.aclose()

    def describe(self) -> str:
        with pg.connect(self.options) as conn:
            version = pg.server_version(conn)
        control = self.options.concurrency_control
        how = "SELECT ... FOR UPDATE" if control == "pessimistic" else "serializable"
        return f"PostgreSQL {version} ({control}: {how})"

    def counters(self) -> dict[str, int]:
        return {}

    def close(self) -> None:
        self._loop_pools.clear()
        if self._read_loop_pools is not None:
            self._read_loop_pools.clear()


class PostgresMicroConnection(pg.HeldPair):
    """One socialite task's asyncpg connection, held for its run."""

    __slots__ = ("isolation", "locks", "sort")

    def __init__(
        self, writes: pg.Held, reads: pg.Held | None, isolation: str, lock_order: str
    ) -> None:
        super().__init__(writes, reads)
        self.isolation = isolation
        self.locks = isolation == "read_committed"
        self.sort = lock_order == "sorted"

    async def read_group(self, group: int) -> GroupView:
        rows = await (await self.reads.live()).fetch(READ_GROUP, group)
        if not rows:
            raise StoreError(f"no group {group} in the Micro tables")
        values = {int(r[2]): int(r[3]) for r in rows if r[2] is not None}
        return GroupView(values, int(rows[0][0]), int(rows[0][1]))

    async def update_items(self, group: int, items: Sequence[int], delta: int) -> list[int]:
        chosen = distinct(items)
        con = await self.writes.live()
        async with pg.transaction_attempt(con, self.isolation):
            order = sorted(chosen) if self.sort else chosen
            rows = await con.fetch(LOCK_ITEMS if self.locks else ITEMS, group, order)
            found = {int(r[0]): int(r[1]) for r in rows}
            if len(found) != len(chosen):
                raise StoreError(f"group {group} lacks some of the items {chosen}")
            await con.execute(ADD_DELTA, group, chosen, delta)
        return [found[i] for i in chosen]

    async def send_message(self, group: int, sender: int, body: int) -> int:
        con = await self.writes.live()
        async with pg.transaction_attempt(con, self.isolation):
            msg = await con.fetchval(SEND, group, sender, body)
        if msg is None:
            raise StoreError(f"no group {group} in the Micro tables")
        return int(msg)
