"""SQLite for the sensor-log workload: the embedded default.

    measures (m INTEGER, s INTEGER, bt INTEGER, et INTEGER, mv REAL)
    measures_key UNIQUE (m, s, bt)        measures_mv (mv)

A plain rowid table with both indexes separate from it, so that "indexes before" and
"indexes after" differ only in when the two CREATE INDEX run (SQLite cannot add a primary
key to a table afterwards). Bulk loading is executemany in large transactions, one per
machine's batch.

Consistency (the paper's Table 1 for an embedded relational store):

    strong  synchronous=FULL, journal_mode=DELETE (a rollback journal, fsync at commit)
    weak    synchronous=OFF, journal_mode=OFF (no journal, no fsync)

SQLite runs every transaction serializably; "weak" gives up durability and atomicity
on a crash, which a bulk load that starts again from empty can afford.

The rating shares one database file between load processes (journal_mode=WAL there:
readers beside the writer), one connection per socialite thread, autocommit.
"""

import sqlite3
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import ClassVar

from pydantic import BaseModel

from bgbench.drivers import sqlite as lite
from bgbench.workloads.sensorlog.config import SensorLogDatabaseConfig
from bgbench.workloads.sensorlog.generator import Rows
from bgbench.workloads.sensorlog.store import Concurrency, FragmentLog, Query, Reading
from bgbench.workloads.sensorlog.stores.options import SQLiteSensorOptions

TABLE = (
    "CREATE TABLE IF NOT EXISTS measures (m INTEGER NOT NULL, s INTEGER NOT NULL, "
    "bt INTEGER NOT NULL, et INTEGER NOT NULL, mv REAL NOT NULL)"
)
INDEXES = (
    "CREATE UNIQUE INDEX IF NOT EXISTS measures_key ON measures (m, s, bt)",
    "CREATE INDEX IF NOT EXISTS measures_mv ON measures (mv)",
)
INSERT = "INSERT INTO measures VALUES (?, ?, ?, ?, ?)"
Q1 = "SELECT m, s, bt, et, mv FROM measures WHERE m = ? AND s = ? AND bt = ?"
Q2 = "SELECT m, s, bt, et, mv FROM measures WHERE mv > ?"
Q3 = "SELECT count(*) FROM measures WHERE mv > ?"
Q3_RANGE = "SELECT count(*) FROM measures INDEXED BY measures_mv WHERE mv > ? AND m >= ? AND m < ?"
PRAGMAS = {
    "strong": ("PRAGMA journal_mode=DELETE", "PRAGMA synchronous=FULL"),
    "weak": ("PRAGMA journal_mode=OFF", "PRAGMA synchronous=OFF"),
}


class SQLiteSensorConnection:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def insert(self, row: Reading) -> None:
        self.conn.execute(INSERT, row)

    def newest(self, m: int, s: int, bt: int) -> bool:
        return self.conn.execute(Q1, (m, s, bt)).fetchone() is not None

    def count_above(self, x: float, m_lo: int, m_hi: int) -> int:
        return int(self.conn.execute(Q3_RANGE, (x, m_lo, m_hi)).fetchone()[0])

    def close(self) -> None:
        self.conn.close()


class SQLiteSensorBinding:
    name: ClassVar[str] = "sqlite"
    concurrency: ClassVar[Concurrency] = "threads"
    suspends: ClassVar[bool] = True
    embedded: ClassVar[bool] = True
    Options: ClassVar[type[BaseModel]] = SQLiteSensorOptions
    file_options: ClassVar[tuple[str, ...]] = ("path",)
    consistency_settings: ClassVar[dict[str, str]] = {
        "strong": "synchronous=FULL, rollback journal (serializable, durable)",
        "weak": "synchronous=OFF, journal_mode=OFF (no journal, no fsync)",
    }

    def __init__(self, options: SQLiteSensorOptions) -> None:
        self.options = options
        self.path = Path(options.path)
        self._study: sqlite3.Connection | None = None

    def _open(self) -> sqlite3.Connection:
        """A path that cannot hold a database is the user's to fix."""
        return lite.first_open(self.options, check_same_thread=False)

    # -- studies ---------------------------------------------------------------------
    @property
    def study(self) -> sqlite3.Connection:
        if self._study is None:
            self._study = self._open()
        return self._study

    def reset(self, indexes: bool) -> None:
        if self._study is not None:
            self._study.close()
            self._study = None
        for suffix in ("", "-journal", "-wal", "-shm"):
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)  # empty: a new file
        c = self.study
        for pragma in PRAGMAS[self.options.consistency]:
            c.execute(pragma)
        c.execute(TABLE)
        if indexes:
            for ddl in INDEXES:
                c.execute(ddl)

    def bulk_load(self, batches: Iterable[Rows], progress: Callable[[], None]) -> int:
        c, n = self.study, 0
        for rows in batches:
            progress()
            c.execute("BEGIN")
            c.executemany(INSERT, rows.tuples())
            c.execute("COMMIT")
            n += len(rows)
        return n

    def build_indexes(self) -> None:
        for ddl in INDEXES:
            self.study.execute(ddl)

    def q1(self, m: int, s: int, bt: int) -> Reading | None:
        row = self.study.execute(Q1, (m, s, bt)).fetchone()
        return Reading(*row) if row else None

    def q2(self, x: float) -> int:
        return len(self.study.execute(Q2, (x,)).fetchall())

    def q3(self, x: float) -> int:
        return int(self.study.execute(Q3, (x,)).fetchone()[0])

    def plan(self, query: Query, x: float = 0.0, key: tuple[int, int, int] = (0, 0, 0)) -> str:
        sql, args = {"Q1": (Q1, key), "Q2": (Q2, (x,)), "Q3": (Q3, (x,))}[query]
        rows = self.study.execute(f"EXPLAIN QUERY PLAN {sql}", args).fetchall()
        return "; ".join(str(r[-1]) for r in rows)

    # -- the rating ------------------------------------------------------------------
    @contextmanager
    def _writer(self, waiting: Callable[[], None] | None = None) -> Iterator[sqlite3.Connection]:
        """One process at a time changes the schema or loads (SQLite has one writer);
        `waiting` is called while another holds the lock (alive, not hung)."""
        conn = self._open()
        try:
            with lite.exclusive(self.path, *([waiting] if waiting else [])):
                yield conn
        finally:
            conn.close()

    def create_schema(self, db: SensorLogDatabaseConfig) -> None:
        with self._writer() as c:
            c.execute("PRAGMA journal_mode=WAL")
            c.execute(TABLE)
            for ddl in INDEXES:
                c.execute(ddl)

    def use_schema(self, db: SensorLogDatabaseConfig) -> None:
        pass

    def load_fragment(self, fragment: FragmentLog, progress: Callable[[], None]) -> None:
        sync = "FULL" if self.options.consistency == "strong" else "OFF"
        with self._writer(progress) as c:
            c.execute(f"PRAGMA synchronous={sync}")
            c.execute("BEGIN IMMEDIATE")
            c.execute(
                "DELETE FROM measures WHERE m >= ? AND m < ?",
                (fragment.machines.start, fragment.machines.stop),
            )
            try:
                for rows in fragment.batches():
                    progress()
                    c.executemany(INSERT, rows.tuples())
                c.execute("COMMIT")
            except BaseException:
                if c.in_transaction:
                    c.execute("ROLLBACK")
                raise

    def connect(self) -> SQLiteSensorConnection:
        conn = self._open()
        sync = "FULL" if self.options.consistency == "strong" else "OFF"
        conn.execute(f"PRAGMA synchronous={sync}")
        return SQLiteSensorConnection(conn)

    async def connect_async(self) -> SQLiteSensorConnection:
        raise NotImplementedError("SQLite runs socialites as threads")

    async def aclose(self) -> None:
        pass

    def describe(self) -> str:
        return (
            f"SQLite {sqlite3.sqlite_version} (file {self.path}, {self.options.consistency}: "
            f"{self.consistency_settings[self.options.consistency]})"
        )

    def counters(self) -> dict[str, int]:
        return {}

    def close(self) -> None:
        if self._study is not None:
            self._study.close()
            self._study = None
