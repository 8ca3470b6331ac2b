"""SQLite for the EHR workload: the embedded default.

Two tables, patients and results, and an index on results (patient, effective_ms DESC,
id DESC) that serves "the 5 most recent of a patient" and its count from the index
alone. One database file shared by every load process (WAL, a busy timeout), one
connection per socialite thread, autocommit. A READ is one statement, so its rows and its
count come from one snapshot. Schema changes and loads take a file lock beside the
database, one process at a time (SQLite has one writer).
"""

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from pydantic import BaseModel

from bgbench.drivers import sqlite as lite
from bgbench.workloads.ehr.config import EHRDatabaseConfig
from bgbench.workloads.ehr.store import Concurrency, FragmentRows, LabResult
from bgbench.workloads.ehr.stores.options import SQLiteOptions

IDS_PER_BEAT = 10_000

SCHEMA = """
CREATE TABLE IF NOT EXISTS patients (
    id INTEGER PRIMARY KEY, family TEXT NOT NULL, given TEXT NOT NULL,
    address TEXT NOT NULL, telephone TEXT NOT NULL, birth_date TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS results (
    id INTEGER PRIMARY KEY, patient INTEGER NOT NULL, code TEXT NOT NULL,
    value REAL NOT NULL, unit TEXT NOT NULL, effective_ms INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS results_recent ON results (patient, effective_ms DESC, id DESC);
"""

# The count is a scalar subquery of the same statement: the same snapshot as the rows. A
# patient without results gives no row, and then its count in that snapshot is 0.
RECENT_SQL = (
    "SELECT id, patient, code, value, unit, effective_ms, "
    "(SELECT count(*) FROM results WHERE patient = ?1) "
    "FROM results WHERE patient = ?1 ORDER BY effective_ms DESC, id DESC LIMIT ?2"
)
INSERT_SQL = "INSERT INTO results VALUES (?, ?, ?, ?, ?, ?)"


class SQLiteConnection:
    """One socialite thread's connection."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def recent_results(self, patient: int, k: int) -> tuple[list[LabResult], int]:
        rows = self.conn.execute(RECENT_SQL, (patient, k)).fetchall()
        if not rows:
            return [], 0
        return [LabResult(*r[:6]) for r in rows], int(rows[0][6])

    def insert_result(self, row: LabResult) -> None:
        self.conn.execute(INSERT_SQL, row)

    def close(self) -> None:
        self.conn.close()


class SQLiteBinding:
    name: ClassVar[str] = "sqlite"
    # Its driver only blocks: one thread per socialite (the store's calls release the GIL).
    concurrency: ClassVar[Concurrency] = "threads"
    suspends: ClassVar[bool] = True
    embedded: ClassVar[bool] = True
    can_read_back: ClassVar[bool] = True
    Options: ClassVar[type[BaseModel]] = SQLiteOptions
    file_options: ClassVar[tuple[str, ...]] = ("path",)

    def __init__(self, options: SQLiteOptions) -> None:
        self.options = options
        self.path = Path(options.path)

    def _open(self) -> sqlite3.Connection:
        return lite.open_database(self.options, f"synchronous={self.options.synchronous}")

    def _first_open(self) -> sqlite3.Connection:
        """The first contact: a path that cannot hold a database is the user's to fix."""
        return lite.first_open(self.options, f"synchronous={self.options.synchronous}")

    def create_schema(self, db: EHRDatabaseConfig) -> None:
        conn = self._first_open()
        try:
            with lite.exclusive(self.path):
                conn.execute("PRAGMA journal_mode=WAL")
                conn.executescript(SCHEMA)
                # Patients beyond this database's (a larger one loaded here before) would
                # keep results whose keys new inserts may take.
                conn.execute("BEGIN IMMEDIATE")
                conn.execute("DELETE FROM results WHERE patient >= ?", (db.patients,))
                conn.execute("DELETE FROM patients WHERE id >= ?", (db.patients,))
                conn.execute("COMMIT")
        finally:
            conn.close()

    def use_schema(self, db: EHRDatabaseConfig) -> None:
        conn = self._first_open()
        try:
            have = conn.execute(
                "SELECT count(*) FROM sqlite_master WHERE name IN ('patients', 'results')"
            ).fetchone()[0]
        finally:
            conn.close()
        if have < 2:
            # A file of this host's own (agents on several hosts): the first agent made the
            # schema in another.
            self.create_schema(db)

    def load_fragment(self, fragment: FragmentRows, progress: Callable[[], None]) -> None:
        with lite.exclusive(self.path, progress):
            conn = self._open()
            try:
                conn.execute("BEGIN IMMEDIATE")
                self._mark(conn, fragment, progress)
                in_frag = "IN (SELECT id FROM temp.frag)"
                conn.execute(f"DELETE FROM results WHERE patient {in_frag}")
                conn.execute(f"DELETE FROM patients WHERE id {in_frag}")
                for patients in fragment.patient_batches():
                    progress()
                    conn.executemany("INSERT INTO patients VALUES (?, ?, ?, ?, ?, ?)", patients)
                for results in fragment.result_batches():
                    progress()
                    conn.executemany(INSERT_SQL, results)
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
        conn: sqlite3.Connection, fragment: FragmentRows, progress: Callable[[], None]
    ) -> None:
        """The fragment's patient ids in temp.frag."""
        conn.execute("CREATE TEMP TABLE IF NOT EXISTS frag (id INTEGER PRIMARY KEY)")
        conn.execute("DELETE FROM temp.frag")
        ids = fragment.patients.tolist()
        for lo in range(0, len(ids), IDS_PER_BEAT):
            progress()
            conn.executemany(
                "INSERT INTO temp.frag VALUES (?)", ((p,) for p in ids[lo : lo + IDS_PER_BEAT])
            )

    def read_back(self, fragment: FragmentRows, progress: Callable[[], None]) -> dict[int, int]:
        conn = self._open()
        try:
            conn.execute("BEGIN")  # one consistent snapshot
            self._mark(conn, fragment, progress)
            rows = conn.execute(
                "SELECT patient, count(*) FROM results "
                "WHERE patient IN (SELECT id FROM temp.frag) GROUP BY patient"
            ).fetchall()
            conn.execute("COMMIT")
        finally:
            conn.close()
        return {int(p): int(n) for p, n in rows}

    # -- running ---------------------------------------------------------------------------
    def connect(self) -> SQLiteConnection:
        return SQLiteConnection(self._open())

    async def connect_async(self) -> SQLiteConnection:
        raise NotImplementedError("the SQLite binding runs socialites as threads")

    async def aclose(self) -> None:
        pass

    def describe(self) -> str:
        return lite.describe(self.options)

    def counters(self) -> dict[str, int]:
        return {}

    def close(self) -> None:
        pass
