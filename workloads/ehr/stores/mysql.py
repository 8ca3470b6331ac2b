"""MySQL (MariaDB) for the EHR workload: two InnoDB tables and the index that serves a READ.

    patients (id PK, family, given, address, telephone, birth_date)
    results  (id PK, patient, code, value, unit, effective_ms)
             index results_recent (patient, effective_ms DESC, id DESC)

A READ is one statement: the patient's `k` newest results from the index, and their
count as a scalar subquery of the same statement. InnoDB reads one snapshot per
statement (a consistent read at read committed and repeatable read, the levels a plain
autocommit SELECT reads at under serializable too), so the rows and the count are one
picture of the patient. A WRITE is one INSERT; a taken key fails on the primary key
(1062). The isolation level (an option) is each session's, as in PostgreSQL's binding.

Socialites are tasks on the load process's event loop, each holding one connection of
its loop's asyncmy pool. Schema, loading, read-back and describe block, on PyMySQL:
loading deletes the fragment's patients and their results and inserts the generated rows
(multi-row INSERTs) in one transaction at read committed, where InnoDB takes no gap
locks, so two load processes' fragments never deadlock on neighbouring keys.
"""

from collections.abc import Callable, Iterable, Iterator
from typing import Any, ClassVar

from bgbench.drivers import mysql
from bgbench.errors import StoreError
from bgbench.workloads.ehr.config import EHRDatabaseConfig
from bgbench.workloads.ehr.store import Concurrency, FragmentRows, LabResult
from bgbench.workloads.ehr.stores.options import MySQLEHROptions

IDS_PER_STATEMENT = 1000
SCHEMA_LOCK = "bgbench_ehr_schema"  # two coordinators creating the schema of one database
LOCK_WAIT_S = 300

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS patients (id BIGINT PRIMARY KEY, family VARCHAR(255) NOT NULL, "
    "given VARCHAR(255) NOT NULL, address VARCHAR(1024) NOT NULL, "
    "telephone VARCHAR(64) NOT NULL, birth_date DATE NOT NULL) ENGINE=InnoDB",
    "CREATE TABLE IF NOT EXISTS results (id BIGINT PRIMARY KEY, patient BIGINT NOT NULL, "
    "code VARCHAR(64) NOT NULL, value DOUBLE NOT NULL, unit VARCHAR(64) NOT NULL, "
    "effective_ms BIGINT NOT NULL, "
    "INDEX results_recent (patient, effective_ms DESC, id DESC)) ENGINE=InnoDB",
)
# One statement, one snapshot: a patient without results gives no row, and then its count
# in that snapshot is 0.
RECENT = (
    "SELECT id, patient, code, value, unit, effective_ms, "
    "(SELECT count(*) FROM results WHERE patient = %s) "
    "FROM results WHERE patient = %s ORDER BY effective_ms DESC, id DESC LIMIT %s"
)
INSERT = "INSERT INTO results VALUES (%s, %s, %s, %s, %s, %s)"
INSERT_PATIENT = "INSERT INTO patients VALUES (%s, %s, %s, %s, %s, %s)"


def chunks(ids: list[int], size: int = IDS_PER_STATEMENT) -> Iterator[list[int]]:
    for lo in range(0, len(ids), size):
        yield ids[lo : lo + size]


def in_list(n: int) -> str:
    return ", ".join(["%s"] * n)


class MySQLEHRBinding:
    name: ClassVar[str] = "mysql"
    concurrency: ClassVar[Concurrency] = "asyncio"
    suspends: ClassVar[bool] = True
    embedded: ClassVar[bool] = False
    can_read_back: ClassVar[bool] = True
    Options: ClassVar[type[MySQLEHROptions]] = MySQLEHROptions
    file_options: ClassVar[tuple[str, ...]] = ()

    def __init__(self, options: MySQLEHROptions) -> None:
        self.options = options
        self._ready = False
        self._loop_pools = mysql.loop_pools(options)

    def _errors(self, what: str) -> Any:
        return mysql.errors(self.options, what)

    # -- schema and load -------------------------------------------------------------------
    def create_schema(self, db: EHRDatabaseConfig) -> None:
        mysql.create_database(self.options)
        with mysql.connect(self.options, first_contact=True) as conn, self._errors("schema"):
            cursor = conn.cursor()
            cursor.execute("SELECT GET_LOCK(%s, %s)", (SCHEMA_LOCK, LOCK_WAIT_S))
            try:
                for ddl in SCHEMA:
                    cursor.execute(ddl)
                # A larger database loaded here before left patients whose results hold keys
                # this one's inserts will take.
                conn.begin()
                cursor.execute("DELETE FROM results WHERE patient >= %s", (db.patients,))
                cursor.execute("DELETE FROM patients WHERE id >= %s", (db.patients,))
                conn.commit()
            finally:
                cursor.execute("SELECT RELEASE_LOCK(%s)", (SCHEMA_LOCK,))
        self._ready = True

    def use_schema(self, db: EHRDatabaseConfig) -> None:
        with mysql.connect(self.options, first_contact=True) as conn, self._errors("schema"):
            cursor = conn.cursor()
            cursor.execute(
                "SELECT count(*) FROM information_schema.tables WHERE table_schema = "
                "DATABASE() AND table_name IN ('patients', 'results')"
            )
            have = cursor.fetchone()
        if have is None or int(have[0]) < 2:
            raise StoreError(f"no EHR schema in {self.options.where}: create_schema must run first")
        self._ready = True

    def load_fragment(self, fragment: FragmentRows, progress: Callable[[], None]) -> None:
        ids = fragment.patients.tolist()
        with mysql.connect(self.options) as conn, self._errors(f"loading {fragment.index}"):
            cursor = conn.cursor()
            cursor.execute("SET SESSION tx_isolation = 'READ-COMMITTED'")
            conn.begin()
            for part in chunks(ids):
                progress()
                marks = in_list(len(part))
                cursor.execute(f"DELETE FROM results WHERE patient IN ({marks})", part)
                cursor.execute(f"DELETE FROM patients WHERE id IN ({marks})", part)
            # executemany sends each batch as multi-row INSERTs: a beat per generated batch
            self._insert(cursor, INSERT_PATIENT, fragment.patient_batches(), progress)
            self._insert(cursor, INSERT, fragment.result_batches(), progress)
            conn.commit()
            cursor.execute("ANALYZE TABLE patients, results")
            cursor.fetchall()

    @staticmethod
    def _insert(
        cursor: Any, sql: str, batches: Iterable[list[Any]], progress: Callable[[], None]
    ) -> None:
        for batch in batches:
            progress()
            if batch:
                cursor.executemany(sql, [tuple(row) for row in batch])

    def read_back(self, fragment: FragmentRows, progress: Callable[[], None]) -> dict[int, int]:
        counts: dict[int, int] = {}
        with mysql.connect(self.options) as conn, self._errors("read-back"):
            cursor = conn.cursor()
            cursor.execute("SET SESSION tx_isolation = 'REPEATABLE-READ'")
            cursor.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
            for part in chunks(fragment.patients.tolist()):
                progress()
                cursor.execute(
                    "SELECT patient, count(*) FROM results "
                    f"WHERE patient IN ({in_list(len(part))}) GROUP BY patient",
                    part,
                )
                counts.update((int(p), int(n)) for p, n in cursor.fetchall())
            conn.commit()
        return counts

    # -- running ---------------------------------------------------------------------------
    def connect(self) -> "MySQLEHRConnection":
        raise NotImplementedError("the MySQL binding runs socialites as asyncio tasks")

    async def connect_async(self) -> "MySQLEHRConnection":
        if not self._ready:
            raise StoreError("create_schema or use_schema must run before connect")
        return MySQLEHRConnection(await mysql.Held.acquire(self._loop_pools))

    async def aclose(self) -> None:
        await self._loop_pools.aclose()

    def describe(self) -> str:
        return mysql.describe(self.options)

    def counters(self) -> dict[str, int]:
        return {}

    def close(self) -> None:
        self._loop_pools.clear()  # a loop's pool is closed by aclose() on that loop


class MySQLEHRConnection:
    """One socialite task's asyncmy connection, held for its run and taken again after it
    was lost."""

    __slots__ = ("held",)

    def __init__(self, held: mysql.Held) -> None:
        self.held = held

    async def recent_results(self, patient: int, k: int) -> tuple[list[LabResult], int]:
        async with (await self.held.live()).cursor() as cursor:
            await cursor.execute(RECENT, (patient, patient, k))
            rows = await cursor.fetchall()
        if not rows:
            return [], 0
        results = [
            LabResult(int(r[0]), int(r[1]), str(r[2]), float(r[3]), str(r[4]), int(r[5]))
            for r in rows
        ]
        return results, int(rows[0][6])

    async def insert_result(self, row: LabResult) -> None:
        async with (await self.held.live()).cursor() as cursor:
            await cursor.execute(INSERT, tuple(row))

    async def close(self) -> None:
        await self.held.release()
