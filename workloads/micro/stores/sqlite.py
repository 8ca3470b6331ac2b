"""SQLite for the Micro workload: the embedded default.

Three tables: groups (key, version, total, the next message key), items (group, item,
value) and messages (group, key, sender, body). One database file shared by every load
process (WAL, a busy timeout), one connection per socialite thread.

Concurrency control (`store.options.concurrency_control`):

- pessimistic: the update runs in one `BEGIN IMMEDIATE` transaction: SQLite's one write
  lock, so whole-database locking rather than item locking. A transaction that waited the
  busy timeout for it aborts as "lock_timeout".
- optimistic: the group's version, total and items are read in a deferred (snapshot)
  transaction and the new values buffered; the write transaction then sets them only if
  `UPDATE groups SET version = version + 1 ... WHERE id = ? AND version = ?` found the
  version unchanged, else it aborts as "conflict" with nothing written.

Message keys come from the group's counter (`next_message`), taken in the same
transaction as the insert: unique within the group (Strudel 4.2). Reads are one deferred
transaction: one WAL snapshot. Schema changes and loads take a file lock beside the
database, one process at a time.
"""

import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import ClassVar, TypeVar

from pydantic import BaseModel

from bgbench import sdk
from bgbench.drivers import sqlite as lite
from bgbench.workloads.micro.config import MicroDatabaseConfig
from bgbench.workloads.micro.store import Concurrency, FragmentGroups, GroupView
from bgbench.workloads.micro.stores.options import SQLiteMicroOptions

R = TypeVar("R")
IDS_PER_BEAT = 10_000

SCHEMA = """
CREATE TABLE IF NOT EXISTS groups (
    id INTEGER PRIMARY KEY, version INTEGER NOT NULL, total INTEGER NOT NULL,
    next_message INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS items (
    grp INTEGER NOT NULL, item INTEGER NOT NULL, value INTEGER NOT NULL,
    PRIMARY KEY (grp, item)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS messages (
    grp INTEGER NOT NULL, id INTEGER NOT NULL, sender INTEGER NOT NULL, body INTEGER NOT NULL,
    PRIMARY KEY (grp, id)) WITHOUT ROWID;
"""
GROUP_SQL = (
    "SELECT version, total, next_message, (SELECT count(*) FROM messages WHERE grp = ?1) "
    "FROM groups WHERE id = ?1"
)
ITEMS_SQL = "SELECT item, value FROM items WHERE grp = ?"
ADD_SQL = "UPDATE items SET value = value + ? WHERE grp = ? AND item = ?"
SET_SQL = "UPDATE items SET value = ? WHERE grp = ? AND item = ?"
INSERT_MESSAGE_SQL = "INSERT INTO messages VALUES (?, ?, ?, ?)"


class Snapshot:
    """What the read phase of an optimistic transaction saw of a group."""

    __slots__ = ("next_message", "total", "values", "version")

    def __init__(self, version: int, total: int, next_message: int, values: list[int]) -> None:
        self.version = version
        self.total = total
        self.next_message = next_message
        self.values = values


class SQLiteMicroConnection:
    """One socialite thread's connection; every call is one transaction attempt."""

    def __init__(self, conn: sqlite3.Connection, optimistic: bool) -> None:
        self.conn = conn
        self.optimistic = optimistic

    def run(self, begin: str, body: Callable[[sqlite3.Connection], R]) -> R:
        """`body` in one transaction opened by `begin`; a busy database aborts it as a lock
        timeout, and anything raised rolls it back."""
        return lite.transaction_attempt(self.conn, begin, body, "lock_timeout")

    # -- reads ---------------------------------------------------------------------------------
    def read_group(self, group: int) -> GroupView:
        def read(conn: sqlite3.Connection) -> GroupView:
            row = _group_row(conn, group)
            values = {int(i): int(v) for i, v in conn.execute(ITEMS_SQL, (group,))}
            return GroupView(values, int(row[1]), int(row[3]))

        return self.run("BEGIN", read)

    def snapshot(self, group: int, items: Sequence[int]) -> Snapshot:
        """The group's version, total, next message key and these items' values, from one
        snapshot (the read phase of an optimistic transaction)."""

        def read(conn: sqlite3.Connection) -> Snapshot:
            version, total, next_message, _ = _group_row(conn, group)
            return Snapshot(version, total, next_message, _item_values(conn, group, items))

        return self.run("BEGIN", read)

    # -- writes --------------------------------------------------------------------------------
    def update_items(self, group: int, items: Sequence[int], delta: int) -> list[int]:
        if self.optimistic:
            return self._update_optimistic(group, items, delta)

        def update(conn: sqlite3.Connection) -> list[int]:
            before = _item_values(conn, group, items)
            conn.executemany(ADD_SQL, [(delta, group, i) for i in items])
            conn.execute(
                "UPDATE groups SET total = total + ?, version = version + 1 WHERE id = ?",
                (delta * len(items), group),
            )
            return before

        return self.run("BEGIN IMMEDIATE", update)

    def _update_optimistic(self, group: int, items: Sequence[int], delta: int) -> list[int]:
        seen = self.snapshot(group, items)

        def write(conn: sqlite3.Connection) -> None:
            self.compare_and_set(conn, group, seen, total=seen.total + delta * len(items))
            conn.executemany(
                SET_SQL, [(v + delta, group, i) for i, v in zip(items, seen.values, strict=True)]
            )

        self.run("BEGIN IMMEDIATE", write)
        return seen.values

    def send_message(self, group: int, sender: int, body: int) -> int:
        if self.optimistic:
            seen = self.snapshot(group, ())

            def write(conn: sqlite3.Connection) -> int:
                key = seen.next_message
                self.compare_and_set(conn, group, seen, next_message=key + 1)
                conn.execute(INSERT_MESSAGE_SQL, (group, key, sender, body))
                return key

            return self.run("BEGIN IMMEDIATE", write)

        def send(conn: sqlite3.Connection) -> int:
            row = conn.execute(
                "UPDATE groups SET next_message = next_message + 1, version = version + 1 "
                "WHERE id = ? RETURNING next_message",
                (group,),
            ).fetchone()
            if row is None:
                raise LookupError(f"group {group} is not in the store")
            key = int(row[0]) - 1
            conn.execute(INSERT_MESSAGE_SQL, (group, key, sender, body))
            return key

        return self.run("BEGIN IMMEDIATE", send)

    @staticmethod
    def compare_and_set(
        conn: sqlite3.Connection,
        group: int,
        seen: Snapshot,
        total: int | None = None,
        next_message: int | None = None,
    ) -> None:
        """Move the group's version on from the one `seen`, with its new total and message
        counter; abort as a conflict when another transaction moved it first."""
        cur = conn.execute(
            "UPDATE groups SET version = version + 1, total = ?, next_message = ? "
            "WHERE id = ? AND version = ?",
            (
                seen.total if total is None else total,
                seen.next_message if next_message is None else next_message,
                group,
                seen.version,
            ),
        )
        if cur.rowcount != 1:
            raise sdk.Abort("conflict", f"group {group} moved past version {seen.version}")

    def close(self) -> None:
        self.conn.close()


def _group_row(conn: sqlite3.Connection, group: int) -> tuple[int, int, int, int]:
    row = conn.execute(GROUP_SQL, (group,)).fetchone()
    if row is None:
        raise LookupError(f"group {group} is not in the store")
    return int(row[0]), int(row[1]), int(row[2]), int(row[3])


def _item_values(conn: sqlite3.Connection, group: int, items: Sequence[int]) -> list[int]:
    if not items:
        return []
    marks = ",".join("?" * len(items))
    found = dict(
        conn.execute(
            f"SELECT item, value FROM items WHERE grp = ? AND item IN ({marks})",
            (group, *items),
        ).fetchall()
    )
    missing = [i for i in items if i not in found]
    if missing:
        raise LookupError(f"group {group} has no item {missing[0]}")
    return [int(found[i]) for i in items]


class SQLiteMicroBinding:
    name: ClassVar[str] = "sqlite"
    # Its driver only blocks: one thread per socialite (the store's calls release the GIL).
    concurrency: ClassVar[Concurrency] = "threads"
    suspends: ClassVar[bool] = True
    embedded: ClassVar[bool] = True
    can_read_back: ClassVar[bool] = True
    Options: ClassVar[type[BaseModel]] = SQLiteMicroOptions
    file_options: ClassVar[tuple[str, ...]] = ("path",)
    # The connection class a socialite gets (test bindings substitute their own).
    connection_class: ClassVar[type[SQLiteMicroConnection]] = SQLiteMicroConnection

    def __init__(self, options: SQLiteMicroOptions) -> None:
        self.options = options
        self.path = Path(options.path)

    def _open(self) -> sqlite3.Connection:
        return lite.open_database(self.options, f"synchronous={self.options.synchronous}")

    def create_schema(self, db: MicroDatabaseConfig) -> None:
        conn = lite.first_open(self.options, f"synchronous={self.options.synchronous}")
        try:
            with lite.exclusive(self.path):
                conn.execute("PRAGMA journal_mode=WAL")
                conn.executescript(SCHEMA)
        finally:
            conn.close()

    def use_schema(self, db: MicroDatabaseConfig) -> None:
        conn = lite.first_open(self.options, f"synchronous={self.options.synchronous}")
        try:
            have = conn.execute(
                "SELECT count(*) FROM sqlite_master WHERE name IN ('groups', 'items', 'messages')"
            ).fetchone()[0]
        finally:
            conn.close()
        if have < 3:
            # A file of this host's own (agents on several hosts): the first agent made the
            # schema in another.
            self.create_schema(db)

    def load_fragment(self, fragment: FragmentGroups, progress: Callable[[], None]) -> None:
        with lite.exclusive(self.path, progress):
            conn = self._open()
            try:
                conn.execute("BEGIN IMMEDIATE")
                self._mark(conn, fragment, progress)
                for table, key in (("items", "grp"), ("messages", "grp"), ("groups", "id")):
                    conn.execute(f"DELETE FROM {table} WHERE {key} IN (SELECT id FROM temp.frag)")
                for batch in fragment.group_batches():
                    progress()
                    conn.executemany(
                        "INSERT INTO groups VALUES (?, 0, ?, 0)",
                        [(g.group, sum(g.values)) for g in batch],
                    )
                    conn.executemany(
                        "INSERT INTO items VALUES (?, ?, ?)",
                        [(g.group, i, v) for g in batch for i, v in enumerate(g.values)],
                    )
                # Inside the write transaction: on its own it would read, then find another
                # connection's commit in the way of its write and fail without waiting.
                conn.execute("PRAGMA optimize")
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            finally:
                conn.close()

    @staticmethod
    def _mark(
        conn: sqlite3.Connection, fragment: FragmentGroups, progress: Callable[[], None]
    ) -> None:
        """The fragment's group keys in temp.frag."""
        conn.execute("CREATE TEMP TABLE IF NOT EXISTS frag (id INTEGER PRIMARY KEY)")
        conn.execute("DELETE FROM temp.frag")
        keys = list(fragment.group_keys())
        for lo in range(0, len(keys), IDS_PER_BEAT):
            progress()
            conn.executemany(
                "INSERT INTO temp.frag VALUES (?)", ((g,) for g in keys[lo : lo + IDS_PER_BEAT])
            )

    def read_back(
        self, fragment: FragmentGroups, progress: Callable[[], None]
    ) -> dict[int, GroupView]:
        conn = self._open()
        try:
            conn.execute("BEGIN")  # one consistent snapshot
            self._mark(conn, fragment, progress)
            in_frag = "IN (SELECT id FROM temp.frag)"
            views = {
                int(g): GroupView({}, int(total), int(n))
                for g, total, n in conn.execute(
                    "SELECT id, total, (SELECT count(*) FROM messages WHERE grp = groups.id) "
                    f"FROM groups WHERE id {in_frag}"
                )
            }
            for g, i, v in conn.execute(f"SELECT grp, item, value FROM items WHERE grp {in_frag}"):
                views[int(g)].values[int(i)] = int(v)
            conn.execute("COMMIT")
        finally:
            conn.close()
        return views

    # -- running ---------------------------------------------------------------------------
    def connect(self) -> SQLiteMicroConnection:
        optimistic = self.options.concurrency_control == "optimistic"
        return self.connection_class(self._open(), optimistic)

    async def connect_async(self) -> SQLiteMicroConnection:
        raise NotImplementedError("the SQLite binding runs socialites as threads")

    async def aclose(self) -> None:
        pass

    def describe(self) -> str:
        return f"{lite.describe(self.options)}, {self.options.concurrency_control}"

    def counters(self) -> dict[str, int]:
        return {}

    def close(self) -> None:
        pass
