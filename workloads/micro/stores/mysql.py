"""MySQL (MariaDB, InnoDB) for the Micro benchmark: the tables of the PostgreSQL binding.

    micro_groups   (id PK, total, next_message, version)
    micro_items    (grp, item, value; PK (grp, item))
    micro_messages (grp, msg, sender, body; PK (grp, msg))

Every writing transaction adds 1 to its group row's `version`. `concurrency_control`:
- pessimistic (item locking): update_items takes its items' row locks with SELECT ... FOR
  UPDATE, one item after another (a UNION ALL of one locking read per item), by item
  number (`lock_order` sorted: no deadlock between two of them) or in the order the
  workload drew them (given: opposite orders deadlock, InnoDB refuses one at once with
  error 1213); a lock held longer than innodb_lock_wait_timeout (lock_timeout_ms) fails the
  statement (1205), and the binding rolls the transaction back before it raises Abort;
- optimistic (Strudel's per-group compare-and-set, Figure 10): read the group's version
  and the items in one statement (a consistent read, no locks), then in one transaction
  `UPDATE micro_groups ... WHERE id = ? AND version = ?` first: no row changed means
  another transaction committed on the group since the read, Abort("conflict"); else the
  writes follow under that row's lock.
A message's key is the group row's `next_message`, taken and advanced in the transaction
that inserts the message: unique within the group. Socialites hold asyncmy connections;
schema, loading and read-back are blocking, on PyMySQL.
"""

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, ClassVar

from bgbench import sdk
from bgbench.drivers import mysql
from bgbench.errors import StoreError
from bgbench.workloads.micro.store import Concurrency, FragmentGroups, GroupView
from bgbench.workloads.micro.stores.options_sql import MySQLMicroOptions
from bgbench.workloads.micro.stores.sql_common import TABLES, distinct

if TYPE_CHECKING:
    from bgbench.workloads.micro.config import MicroDatabaseConfig

GROUPS_PER_STATEMENT = 1000

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS micro_groups (id BIGINT PRIMARY KEY, total BIGINT NOT NULL, "
    "next_message BIGINT NOT NULL, version BIGINT NOT NULL) ENGINE=InnoDB",
    "CREATE TABLE IF NOT EXISTS micro_items (grp BIGINT NOT NULL, item INT NOT NULL, "
    "value BIGINT NOT NULL, PRIMARY KEY (grp, item)) ENGINE=InnoDB",
    "CREATE TABLE IF NOT EXISTS micro_messages (grp BIGINT NOT NULL, msg BIGINT NOT NULL, "
    "sender BIGINT NOT NULL, body BIGINT NOT NULL, PRIMARY KEY (grp, msg)) ENGINE=InnoDB",
)
READ_GROUP = (
    "SELECT g.total, (SELECT count(*) FROM micro_messages m WHERE m.grp = g.id), i.item, "
    "i.value FROM micro_groups g LEFT JOIN micro_items i ON i.grp = g.id WHERE g.id = %s"
)
LOCK_ONE = "(SELECT item, value FROM micro_items WHERE grp = %s AND item = %s FOR UPDATE)"
READ_VERSION = (
    "SELECT g.version, i.item, i.value FROM micro_groups g JOIN micro_items i "
    "ON i.grp = g.id WHERE g.id = %s AND i.item IN %s"
)
COMPARE_AND_SET = (
    "UPDATE micro_groups SET version = version + 1, total = total + %s "
    "WHERE id = %s AND version = %s"
)
ADD_TOTAL = "UPDATE micro_groups SET version = version + 1, total = total + %s WHERE id = %s"
ADD_DELTA = "UPDATE micro_items SET value = value + %s WHERE grp = %s AND item IN %s"
SLOT = "SELECT version, next_message FROM micro_groups WHERE id = %s"
TAKE_SLOT = (
    "UPDATE micro_groups SET version = version + 1, next_message = next_message + 1 "
    "WHERE id = %s AND version = %s"
)
LOCK_SLOT = SLOT + " FOR UPDATE"
INSERT_MESSAGE = "INSERT INTO micro_messages VALUES (%s, %s, %s, %s)"


class MySQLMicroBinding:
    name: ClassVar[str] = "mysql"
    concurrency: ClassVar[Concurrency] = "asyncio"
    suspends: ClassVar[bool] = True
    embedded: ClassVar[bool] = False
    can_read_back: ClassVar[bool] = True
    Options: ClassVar[type[MySQLMicroOptions]] = MySQLMicroOptions
    file_options: ClassVar[tuple[str, ...]] = ()

    def __init__(self, options: MySQLMicroOptions) -> None:
        self.options = options
        self._ready = False
        self._loop_pools = mysql.loop_pools(options)

    # -- schema and load -------------------------------------------------------------------
    def create_schema(self, db: "MicroDatabaseConfig") -> None:
        mysql.create_tables(self.options, SCHEMA)
        self._ready = True

    def use_schema(self, db: "MicroDatabaseConfig") -> None:
        if not mysql.has_tables(self.options, TABLES):
            raise StoreError(f"no Micro schema in {self.options.where}: create_schema first")
        self._ready = True

    def load_fragment(self, fragment: FragmentGroups, progress: Callable[[], None]) -> None:
        keys = tuple(int(k) for k in fragment.group_keys())
        with mysql.connect(self.options) as conn, mysql.errors(self.options, "loading"):
            cursor = conn.cursor()
            # READ COMMITTED: the deletes of absent keys take no gap locks, so two
            # fragments loading at once do not deadlock on each other's inserts.
            cursor.execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
            conn.begin()
            for lo in range(0, len(keys), GROUPS_PER_STATEMENT):
                progress()
                chunk = (keys[lo : lo + GROUPS_PER_STATEMENT],)
                for table, column in (("micro_messages", "grp"), ("micro_items", "grp")):
                    cursor.execute(f"DELETE FROM {table} WHERE {column} IN %s", chunk)
                cursor.execute("DELETE FROM micro_groups WHERE id IN %s", chunk)
            for batch in fragment.group_batches():
                progress()
                cursor.executemany(
                    "INSERT INTO micro_groups VALUES (%s, %s, 0, 0)",
                    [(rows.group, sum(rows.values)) for rows in batch],
                )
                cursor.executemany(
                    "INSERT INTO micro_items VALUES (%s, %s, %s)",
                    [(rows.group, i, v) for rows in batch for i, v in enumerate(rows.values)],
                )
            conn.commit()

    def read_back(
        self, fragment: FragmentGroups, progress: Callable[[], None]
    ) -> dict[int, GroupView]:
        keys = tuple(int(k) for k in fragment.group_keys())
        views: dict[int, GroupView] = {}
        with mysql.connect(self.options) as conn, mysql.errors(self.options, "read-back"):
            cursor = conn.cursor()
            cursor.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY")
            for lo in range(0, len(keys), GROUPS_PER_STATEMENT):
                progress()
                cursor.execute(
                    READ_GROUP.replace("g.id = %s", "g.id IN %s").replace(
                        "SELECT g.total", "SELECT g.id, g.total"
                    ),
                    (keys[lo : lo + GROUPS_PER_STATEMENT],),
                )
                for group, total, messages, item, value in cursor.fetchall():
                    view = views.setdefault(int(group), GroupView({}, int(total), int(messages)))
                    if item is not None:
                        view.values[int(item)] = int(value)
            conn.commit()
        return views

    # -- running ---------------------------------------------------------------------------
    def connect(self) -> "MySQLMicroConnection":
        raise NotImplementedError("the MySQL binding runs socialites as asyncio tasks")

    async def connect_async(self) -> "MySQLMicroConnection":
        if not self._ready:
            raise StoreError("create_schema or use_schema must run before connect")
        held = await mysql.Held.acquire(self._loop_pools)
        locks = self.options.concurrency_control == "pessimistic"
        return MySQLMicroConnection(held, locks, self.options.lock_order == "sorted")

    async def aclose(self) -> None:
        await self._loop_pools.aclose()

    def describe(self) -> str:
        control = self.options.concurrency_control
        how = "SELECT ... FOR UPDATE" if control == "pessimistic" else "group version CAS"
        return f"{mysql.describe(self.options)}, {control}: {how}"

    def counters(self) -> dict[str, int]:
        return {}

    def close(self) -> None:
        self._loop_pools.clear()


def raise_conflict(group: int) -> None:
    raise sdk.Abort("conflict", f"group {group}'s version moved since the read")


class MySQLMicroConnection:
    """One socialite task's asyncmy connection, held for its run."""

    __slots__ = ("held", "locks", "sort")

    def __init__(self, held: mysql.Held, locks: bool, sort: bool) -> None:
        self.held = held
        self.locks = locks
        self.sort = sort

    async def read_group(self, group: int) -> GroupView:
        rows = await mysql.rows_of(await self.held.live(), READ_GROUP, (group,))
        if not rows:
            raise StoreError(f"no group {group} in the Micro tables")
        values = {int(r[2]): int(r[3]) for r in rows if r[2] is not None}
        return GroupView(values, int(rows[0][0]), int(rows[0][1]))

    async def update_items(self, group: int, items: Sequence[int], delta: int) -> list[int]:
        chosen = distinct(items)
        con = await self.held.live()
        if self.locks:
            async with mysql.Transaction(con):
                lock = " UNION ALL ".join([LOCK_ONE] * len(chosen))
                order = sorted(chosen) if self.sort else chosen
                rows = await mysql.rows_of(con, lock, tuple(x for i in order for x in (group, i)))
                found = {int(r[0]): int(r[1]) for r in rows}
                self._check(group, chosen, found)
                await mysql.changed(con, ADD_DELTA, (delta, group, tuple(chosen)))
                await mysql.changed(con, ADD_TOTAL, (delta * len(chosen), group))
            return [found[i] for i in chosen]
        rows = await mysql.rows_of(con, READ_VERSION, (group, tuple(chosen)))
        found = {int(r[1]): int(r[2]) for r in rows}
        self._check(group, chosen, found)
        async with mysql.Transaction(con):
            if not await mysql.changed(
                con, COMPARE_AND_SET, (delta * len(chosen), group, rows[0][0])
            ):
                raise_conflict(group)
            await mysql.changed(con, ADD_DELTA, (delta, group, tuple(chosen)))
        return [found[i] for i in chosen]

    @staticmethod
    def _check(group: int, chosen: list[int], found: dict[int, int]) -> None:
        if len(found) != len(chosen):
            raise StoreError(f"group {group} lacks some of the items {chosen}")

    async def send_message(self, group: int, sender: int, body: int) -> int:
        con = await self.held.live()
        if self.locks:
            async with mysql.Transaction(con):
                slot = await mysql.rows_of(con, LOCK_SLOT, (group,))
                if slot:
                    await mysql.changed(con, TAKE_SLOT, (group, slot[0][0]))
                    await mysql.changed(con, INSERT_MESSAGE, (group, slot[0][1], sender, body))
        else:
            slot = await mysql.rows_of(con, SLOT, (group,))
            if slot:
                async with mysql.Transaction(con):
                    if not await mysql.changed(con, TAKE_SLOT, (group, slot[0][0])):
                        raise_conflict(group)
                    await mysql.changed(con, INSERT_MESSAGE, (group, slot[0][1], sender, body))
        if not slot:
            raise StoreError(f"no group {group} in the Micro tables")
        return int(slot[0][1])

    async def close(self) -> None:
        await self.held.release()
