"""PostgreSQL for the EHR workload: two tables and the index that serves a READ.

    patients (id PK, family, given, address, telephone, birth_date)
    results  (id PK, patient, code, value, unit, effective_ms)
             index results_recent (patient, effective_ms DESC, id DESC)

A READ is one statement: the patient's `k` newest results from the index, and their
count as a scalar subquery of the same statement. Every statement of PostgreSQL reads
one snapshot (at any isolation level, read committed included), so the rows and the
count are one picture of the patient. A WRITE is one INSERT; a taken key fails on the
primary key. The isolation level (an option) is the connections' default, as in BG's
binding: each statement is its own transaction at that level.

Socialites are tasks on the load process's event loop, each holding one connection of
its loop's asyncpg pool; statements have $n parameters, so asyncpg prepares each once per
connection. Schema, loading, read-back and describe are blocking, on psycopg: loading
streams the generated rows with COPY inside the transaction that deleted the fragment's
old ones (BG's binding says why not asyncpg's COPY).

With `read_from: replica` each socialite holds a second connection, to the hot standby of
`replica_dsn`, where its READs run; its WRITEs stay on the primary.
"""

from collections.abc import Callable
from typing import Any, ClassVar

import psycopg

from bgbench.drivers import postgres as pg
from bgbench.drivers.postgres_options import PostgresOptions, server_of
from bgbench.errors import StoreError
from bgbench.workloads.ehr.config import EHRDatabaseConfig
from bgbench.workloads.ehr.store import Concurrency, FragmentRows, LabResult

ADVISORY_LOCK = 7014  # two coordinators creating the schema of one database at once

SCHEMA = """
CREATE TABLE IF NOT EXISTS patients (
    id BIGINT PRIMARY KEY, family TEXT NOT NULL, given TEXT NOT NULL, address TEXT NOT NULL,
    telephone TEXT NOT NULL, birth_date DATE NOT NULL);
CREATE TABLE IF NOT EXISTS results (
    id BIGINT PRIMARY KEY, patient BIGINT NOT NULL, code TEXT NOT NULL,
    value DOUBLE PRECISION NOT NULL, unit TEXT NOT NULL, effective_ms BIGINT NOT NULL);
CREATE INDEX IF NOT EXISTS results_recent ON results (patient, effective_ms DESC, id DESC);
"""

# One statement, one snapshot: a patient without results gives no row, and then its count
# in that snapshot is 0.
RECENT = (
    "SELECT id, patient, code, value, unit, effective_ms, "
    "(SELECT count(*) FROM results WHERE patient = $1) "
    "FROM results WHERE patient = $1 ORDER BY effective_ms DESC, id DESC LIMIT $2"
)
INSERT = "INSERT INTO results VALUES ($1, $2, $3, $4, $5, $6)"


class PostgresEHRBinding:
    name: ClassVar[str] = "postgres"
    concurrency: ClassVar[Concurrency] = "asyncio"
    suspends: ClassVar[bool] = True
    embedded: ClassVar[bool] = False
    can_read_back: ClassVar[bool] = True
    Options: ClassVar[type[PostgresOptions]] = PostgresOptions
    file_options: ClassVar[tuple[str, ...]] = ()

    def __init__(self, options: PostgresOptions) -> None:
        self.options = options
        self._ready = False
        # One asyncpg pool per event loop (a pool is bound to its loop); the first task of a
        # loop to ask makes it, the others await the same future.
        self._loop_pools = pg.loop_pools(options)
        replica = pg.reads_options(options)  # where READs go with read_from replica
        self._read_loop_pools = pg.loop_pools(replica) if replica else None

    def _connect(self, first_contact: bool = False) -> psycopg.Connection[Any]:
        """On first contact (preparing), a server that cannot be reached is the user's to fix;
        later it is a fault of the store."""
        return pg.connect(self.options, first_contact)

    # -- schema and load -------------------------------------------------------------------
    def create_schema(self, db: EHRDatabaseConfig) -> None:
        with self._connect(first_contact=True) as conn:
            conn.execute("SELECT pg_advisory_lock(%s)", (ADVISORY_LOCK,))
            try:
                conn.execute(SCHEMA)
                # A larger database loaded here before left patients whose results hold keys
                # this one's inserts will take.
                with conn.transaction():
                    conn.execute("DELETE FROM results WHERE patient >= %s", (db.patients,))
                    conn.execute("DELETE FROM patients WHERE id >= %s", (db.patients,))
            finally:
                conn.execute("SELECT pg_advisory_unlock(%s)", (ADVISORY_LOCK,))
        pg.check_replica(self.options)
        self._ready = True

    def use_schema(self, db: EHRDatabaseConfig) -> None:
        with self._connect(first_contact=True) as conn:
            have = conn.execute(
                "SELECT count(*) FROM information_schema.tables WHERE table_schema = "
                "current_schema() AND table_name IN ('patients', 'results')"
            ).fetchone()
        if have is None or have[0] < 2:
            raise StoreError(
                f"no EHR schema in {server_of(self.options.dsn)}: create_schema must run first"
            )
        pg.check_replica(self.options)
        self._ready = True

    def load_fragment(self, fragment: FragmentRows, progress: Callable[[], None]) -> None:
        ids = fragment.patients.tolist()
        with self._connect() as conn, conn.transaction():
            pg.fragment_table(conn, ids, progress)
            conn.execute("DELETE FROM results WHERE patient IN (SELECT id FROM frag)")
            conn.execute("DELETE FROM patients WHERE id IN (SELECT id FROM frag)")
            # COPY sends its buffer as it fills: a beat per generated batch.
            with conn.cursor().copy("COPY patients FROM STDIN") as copy:
                for patients in fragment.patient_batches():
                    progress()
                    for patient in patients:
                        copy.write_row(patient)
            with conn.cursor().copy("COPY results FROM STDIN") as copy:
                for results in fragment.result_batches():
                    progress()
                    for row in results:
                        copy.write_row(row)
        with self._connect() as conn:
            conn.execute("ANALYZE patients, results")
        pg.await_replica(self.options, progress)  # reads from a standby see the load

    def read_back(self, fragment: FragmentRows, progress: Callable[[], None]) -> dict[int, int]:
        progress()
        with self._connect() as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            rows = conn.execute(
                "SELECT patient, count(*) FROM results WHERE patient = ANY(%s) GROUP BY patient",
                (fragment.patients.tolist(),),
            ).fetchall()
        return {int(p): int(n) for p, n in rows}

    # -- running ---------------------------------------------------------------------------
    def connect(self) -> "PostgresEHRConnection":
        raise NotImplementedError("the PostgreSQL binding runs socialites as asyncio tasks")

    async def connect_async(self) -> "PostgresEHRConnection":
        if not self._ready:
            raise StoreError("create_schema or use_schema must run before connect")
        writes, reads = await pg.acquire_pair(self._loop_pools, self._read_loop_pools)
        return PostgresEHRConnection(writes, reads)

    async def aclose(self) -> None:
        await self._loop_pools.aclose()
        if self._read_loop_pools is not None:
            await self._read_loop_pools.aclose()

    def describe(self) -> str:
        return pg.describe(self.options)

    def counters(self) -> dict[str, int]:
        return {}

    def close(self) -> None:
        self._loop_pools.clear()  # a loop's pool is closed by aclose() on that loop
        if self._read_loop_pools is not None:
            self._read_loop_pools.clear()


class PostgresEHRConnection(pg.HeldPair):
    """One socialite task's asyncpg connection (`writes`), held for its run and taken again
    after its server closed it; with a standby to read from, a second one there (`reads`),
    which its READs use."""

    __slots__ = ()

    async def recent_results(self, patient: int, k: int) -> tuple[list[LabResult], int]:
        rows = await self.reads.fetch(RECENT, patient, k)
        if not rows:
            return [], 0
        return [LabResult(r[0], r[1], r[2], r[3], r[4], r[5]) for r in rows], int(rows[0][6])

    async def insert_result(self, row: LabResult) -> None:
        await self.writes.execute(INSERT, *row)
