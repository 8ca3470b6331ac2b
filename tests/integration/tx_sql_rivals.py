"""A rival transaction for test_tx_sql_bindings: a blocking connection of its own (psycopg,
PyMySQL) that locks or writes a group's rows and holds them while a binding's attempt
runs into them, so that a lock timeout, a deadlock or a conflict happens for certain."""

import asyncio
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

WAIT_S = 120.0
TABLES = {"micro": ("micro_items", "grp", "item", "micro_groups", "id")}


class Rival:
    def __init__(self, kind: str, conn: Any, ident: int, table: tuple[str, ...], group: int):
        self.kind = kind
        self.conn = conn
        self.ident = ident  # the server's id of this session
        self.items, self.group_col, self.item_col, self.groups, self.key = table
        self.group = group
        self.thread: threading.Thread | None = None

    def execute(self, sql: str, *args: Any) -> None:
        if self.kind == "postgres":
            self.conn.execute(sql.replace("?", "%s"), args)
        else:
            with self.conn.cursor() as cursor:
                cursor.execute(sql.replace("?", "%s"), args)

    def lock(self, item: int) -> None:
        self.execute(
            f"SELECT 1 FROM {self.items} WHERE {self.group_col} = ? AND {self.item_col} = ? "
            "FOR UPDATE",
            self.group,
            item,
        )

    def write(self, item: int) -> None:
        """What a binding's transaction does: the item, the group's total and version."""
        self.execute(
            f"UPDATE {self.items} SET value = value + 1 WHERE {self.group_col} = ? AND "
            f"{self.item_col} = ?",
            self.group,
            item,
        )
        self.execute(
            f"UPDATE {self.groups} SET total = total + 1, version = version + 1 "
            f"WHERE {self.key} = ?",
            self.group,
        )

    def lock_later(self, item: int) -> None:
        """Ask for the item's lock on a thread: it waits (a deadlock's other half)."""
        self.thread = threading.Thread(target=self.lock, args=(item,), daemon=True)
        self.thread.start()

    def commit(self) -> None:
        self.conn.commit()


def _connect(store: tuple[str, dict]) -> tuple[Any, int]:
    name, options = store
    if name == "postgres":
        import psycopg

        conn = psycopg.connect(options["dsn"])  # a transaction opens with the first statement
        conn.execute("SET deadlock_timeout = '1h'")  # so the binding's session finds it
        row = conn.execute("SELECT pg_backend_pid()").fetchone()
        return conn, int(row[0])
    import pymysql

    conn = pymysql.connect(
        host=options.get("host", "127.0.0.1"),
        port=int(options["port"]),
        user=options.get("user", "root"),
        password=options.get("password") or "",
        database=options["database"],
        autocommit=False,
        read_timeout=WAIT_S,
        write_timeout=WAIT_S,
    )
    with conn.cursor() as cursor:
        cursor.execute("SET SESSION innodb_lock_wait_timeout = 3600")
        cursor.execute("SELECT CONNECTION_ID()")
        return conn, int(cursor.fetchone()[0])


@contextmanager
def holding(
    store: tuple[str, dict], workload: str, group: int, items: list[int], write: bool = False
) -> Iterator[Rival]:
    """A rival transaction that locked (or, with `write`, wrote) the group's items; rolled
    back on leaving unless it committed."""
    conn, ident = _connect(store)
    rival = Rival(store[0], conn, ident, TABLES[workload], group)
    try:
        for item in items:
            rival.write(item) if write else rival.lock(item)
        yield rival
    finally:
        try:
            if rival.thread is not None:  # its lock comes once the binding's attempt is
                rival.thread.join(WAIT_S)  # gone; one connection serves one thread at once
            conn.rollback()
        finally:
            conn.close()


def _others_waiting(store: tuple[str, dict], rival: Rival) -> int:
    name = store[0]
    conn, _ = _connect(store)
    try:
        if name == "postgres":
            row = conn.execute(
                "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
                "WHERE NOT l.granted AND a.datname = current_database() AND l.pid <> %s",
                (rival.ident,),
            ).fetchone()
            return int(row[0])
        with conn.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM information_schema.INNODB_TRX "
                "WHERE trx_state = 'LOCK WAIT' AND trx_mysql_thread_id <> %s",
                (rival.ident,),
            )
            return int(cursor.fetchone()[0])
    finally:
        conn.close()


async def until_waiting(store: tuple[str, dict], rival: Rival) -> None:
    """Return once a session other than the rival's waits for a lock (polled)."""
    deadline = time.monotonic() + WAIT_S
    while not _others_waiting(store, rival):
        assert time.monotonic() < deadline, "the binding's attempt never waited for a lock"
        # InnoDB refreshes INNODB_TRX only when it was last read over 0.1 s ago: a faster
        # poll keeps reading the snapshot taken before the binding's attempt began to wait
        await asyncio.sleep(0.25)
