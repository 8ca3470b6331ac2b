"""MySQL (MariaDB) for the sensor-log workload.

    measures (m INT, s INT, bt BIGINT, et BIGINT, mv DOUBLE)  InnoDB
    measures_key UNIQUE (m, s, bt)        measures_mv (mv)

InnoDB keeps a table in a B-tree on its primary key or, without one, on its first unique
index of NOT NULL columns: here measures_key, so the rows are stored in key order and Q1
is one descent of the table itself. With "indexes after", the table is loaded on InnoDB's
hidden row id and ALTER TABLE then rebuilds it on measures_key (and builds measures_mv):
that rebuild is what "indexes after" costs on InnoDB.

Bulk path: LOAD DATA LOCAL INFILE, InnoDB's own bulk command (the paper loaded CSV files
with each system's), one per generated batch: the batch is written as a CSV file (repr
of each float: round-trip exact, so thresholds select exact counts) and PyMySQL sends
it. The server must allow local_infile (MariaDB's default; the one deploy/local starts
does).

Consistency (the paper's Table 1 has no MySQL; these are InnoDB's two ends):

    strong  SERIALIZABLE; a bulk load is one transaction
    weak    READ UNCOMMITTED (dirty reads: MySQL's lowest level); a transaction per batch

The option `isolation` overrides the level that goes with the consistency. Commits are
as durable as the server's innodb_flush_log_at_trx_commit, a global setting no session
can change, which describe() reports (the local server runs 2: the log is written at
each commit and flushed once a second).

Queries: Q1 is one lookup in measures_key; Q2 streams the rows with mv > x to the client
(an unbuffered cursor), Q3 counts them in the server; the optimizer picks a range scan of
measures_mv or a full scan by its estimate, so a bulk load ends with ANALYZE TABLE.

The rating: create_schema makes the table and both indexes if missing (under a named
lock: two coordinators on one database). load_fragment deletes the fragment's machines
and loads its rows in one READ COMMITTED transaction (InnoDB then takes no gap locks,
which two load processes' neighbouring key ranges would deadlock on), then ANALYZE
TABLE. Socialites are asyncio tasks, each holding one connection of its event loop's
asyncmy pool; count_above is one statement, so one snapshot.
"""

import os
import tempfile
from collections.abc import Callable, Iterable
from typing import Any, ClassVar

import pymysql.cursors

from bgbench.drivers import mysql
from bgbench.errors import StoreError
from bgbench.workloads.sensorlog.config import SensorLogDatabaseConfig
from bgbench.workloads.sensorlog.generator import Rows
from bgbench.workloads.sensorlog.store import Concurrency, FragmentLog, Query, Reading
from bgbench.workloads.sensorlog.stores.options import MySQLSensorOptions

SCHEMA_LOCK = "bgbench_sensorlog_schema"
LOCK_WAIT_S = 300
TABLE = (
    "CREATE TABLE {exists}measures (m INT NOT NULL, s INT NOT NULL, bt BIGINT NOT NULL, "
    "et BIGINT NOT NULL, mv DOUBLE NOT NULL{indexes}) ENGINE=InnoDB"
)
INDEX_COLUMNS = ", UNIQUE KEY measures_key (m, s, bt), KEY measures_mv (mv)"
INDEXES = (
    "CREATE UNIQUE INDEX IF NOT EXISTS measures_key ON measures (m, s, bt)",
    "CREATE INDEX IF NOT EXISTS measures_mv ON measures (mv)",
)
LOAD = (
    "LOAD DATA LOCAL INFILE %s INTO TABLE measures "
    "FIELDS TERMINATED BY ',' LINES TERMINATED BY '\\n' (m, s, bt, et, mv)"
)
Q1 = "SELECT m, s, bt, et, mv FROM measures WHERE m = %s AND s = %s AND bt = %s"
Q2 = "SELECT m, s, bt, et, mv FROM measures WHERE mv > %s"
Q3 = "SELECT count(*) FROM measures WHERE mv > %s"
NEWEST = "SELECT EXISTS (SELECT 1 FROM measures WHERE m = %s AND s = %s AND bt = %s)"
COUNT_ABOVE = "SELECT count(*) FROM measures WHERE mv > %s AND m >= %s AND m < %s"
INSERT = "INSERT INTO measures (m, s, bt, et, mv) VALUES (%s, %s, %s, %s, %s)"
FETCH_ROWS = 10_000
PLAN_CHARS = 110


def csv_text(rows: Rows) -> str:
    """A batch as CSV lines; repr keeps every float exact."""
    cols = (rows.m.tolist(), rows.s.tolist(), rows.bt.tolist(), rows.et.tolist(), rows.mv.tolist())
    return "".join(f"{m},{s},{bt},{et},{mv!r}\n" for m, s, bt, et, mv in zip(*cols, strict=True))


def one_line(rows: list[tuple[Any, ...]]) -> str:
    """EXPLAIN's rows (id, select_type, table, type, possible_keys, key, key_len, ref,
    rows, Extra) as one line: the access type, the index, the estimated rows, Extra."""
    steps = []
    for row in rows:
        access, key, estimate, extra = row[3], row[5], row[8], row[9]
        step = f"{access or '?'}{' on ' + str(key) if key else ''} (rows={estimate})"
        steps.append(f"{step}: {extra}" if extra else step)
    return "; ".join(steps)[:PLAN_CHARS]


class MySQLSensorBinding:
    name: ClassVar[str] = "mysql"
    concurrency: ClassVar[Concurrency] = "asyncio"
    suspends: ClassVar[bool] = True
    embedded: ClassVar[bool] = False
    Options: ClassVar[type[MySQLSensorOptions]] = MySQLSensorOptions
    file_options: ClassVar[tuple[str, ...]] = ()
    consistency_settings: ClassVar[dict[str, str]] = {
        "strong": "InnoDB, SERIALIZABLE, a bulk load in one transaction",
        "weak": "InnoDB, READ UNCOMMITTED (dirty reads), a transaction per loaded batch",
    }

    def __init__(self, options: MySQLSensorOptions) -> None:
        self.options = options
        self._study: Any = None
        self._ready = False
        self._loop_pools = mysql.loop_pools(options)

    def _connect(self, first_contact: bool = False, with_database: bool = True) -> Any:
        return mysql.connect(self.options, first_contact, with_database, local_infile=True)

    def _errors(self, what: str) -> Any:
        return mysql.errors(self.options, what)

    # -- studies ---------------------------------------------------------------------
    @property
    def study(self) -> Any:
        if self._study is None:
            mysql.create_database(self.options)
            self._study = self._connect(first_contact=True)
        return self._study

    def reset(self, indexes: bool) -> None:
        with self._errors("reset"):
            cursor = self.study.cursor()
            cursor.execute("DROP TABLE IF EXISTS measures")
            cursor.execute(TABLE.format(exists="", indexes=INDEX_COLUMNS if indexes else ""))

    def bulk_load(self, batches: Iterable[Rows], progress: Callable[[], None]) -> int:
        conn = self.study
        with self._errors("bulk load"):
            if self.options.consistency == "strong":
                conn.begin()  # else each LOAD commits on its own (autocommit)
            n = self._load(conn, batches, progress)
            conn.commit()
            progress()
            self._analyze(conn)
        return n

    @staticmethod
    def _load(conn: Any, batches: Iterable[Rows], progress: Callable[[], None]) -> int:
        """LOAD DATA of each batch through a CSV file of this process, in the caller's
        transaction (rolled back on an error); the rows loaded."""
        n = 0
        fd, path = tempfile.mkstemp(prefix="bgbench-measures-", suffix=".csv")
        os.close(fd)
        try:
            cursor = conn.cursor()
            for rows in batches:
                progress()
                with open(path, "w") as out:
                    out.write(csv_text(rows))
                cursor.execute(LOAD, (path,))
                n += len(rows)
        except BaseException:
            conn.rollback()
            raise
        finally:
            os.unlink(path)
        return n

    @staticmethod
    def _analyze(conn: Any) -> None:
        cursor = conn.cursor()
        cursor.execute("ANALYZE TABLE measures")
        cursor.fetchall()

    def build_indexes(self) -> None:
        with self._errors("build indexes"):
            cursor = self.study.cursor()
            for ddl in INDEXES:
                cursor.execute(ddl)

    def q1(self, m: int, s: int, bt: int) -> Reading | None:
        with self._errors("Q1"):
            cursor = self.study.cursor()
            cursor.execute(Q1, (m, s, bt))
            row = cursor.fetchone()
        if row is None:
            return None
        return Reading(int(row[0]), int(row[1]), int(row[2]), int(row[3]), float(row[4]))

    def q2(self, x: float) -> int:
        n = 0
        with self._errors("Q2"), self.study.cursor(pymysql.cursors.SSCursor) as cursor:
            cursor.execute(Q2, (x,))
            while rows := cursor.fetchmany(FETCH_ROWS):
                n += len(rows)
        return n

    def q3(self, x: float) -> int:
        with self._errors("Q3"):
            cursor = self.study.cursor()
            cursor.execute(Q3, (x,))
            row = cursor.fetchone()
        return int(row[0]) if row else 0

    def plan(self, query: Query, x: float = 0.0, key: tuple[int, int, int] = (0, 0, 0)) -> str:
        sql, args = {"Q1": (Q1, key), "Q2": (Q2, (x,)), "Q3": (Q3, (x,))}[query]
        with self._errors(f"EXPLAIN {query}"):
            cursor = self.study.cursor()
            cursor.execute(f"EXPLAIN {sql}", args)
            rows = list(cursor.fetchall())
        return one_line(rows)

    # -- the rating ------------------------------------------------------------------
    def create_schema(self, db: SensorLogDatabaseConfig) -> None:
        mysql.create_database(self.options)
        with self._connect(first_contact=True) as conn, self._errors("create schema"):
            cursor = conn.cursor()
            cursor.execute("SELECT GET_LOCK(%s, %s)", (SCHEMA_LOCK, LOCK_WAIT_S))
            try:
                cursor.execute(TABLE.format(exists="IF NOT EXISTS ", indexes=INDEX_COLUMNS))
                for ddl in INDEXES:
                    cursor.execute(ddl)
            finally:
                cursor.execute("SELECT RELEASE_LOCK(%s)", (SCHEMA_LOCK,))
        self._ready = True

    def use_schema(self, db: SensorLogDatabaseConfig) -> None:
        with self._connect(first_contact=True) as conn, self._errors("use schema"):
            cursor = conn.cursor()
            cursor.execute(
                "SELECT count(*) FROM information_schema.tables "
                "WHERE table_schema = DATABASE() AND table_name = 'measures'"
            )
            row = cursor.fetchone()
        if not (row and int(row[0])):
            raise StoreError(
                f"no sensorlog table in {self.options.where}: create_schema must run first"
            )
        self._ready = True

    def load_fragment(self, fragment: FragmentLog, progress: Callable[[], None]) -> None:
        machines = fragment.machines
        with self._connect() as conn, self._errors(f"loading fragment {fragment.index}"):
            cursor = conn.cursor()
            cursor.execute("SET SESSION tx_isolation = 'READ-COMMITTED'")
            conn.begin()
            cursor.execute(
                "DELETE FROM measures WHERE m >= %s AND m < %s", (machines.start, machines.stop)
            )
            self._load(conn, fragment.batches(), progress)
            conn.commit()
            progress()
            self._analyze(conn)

    def connect(self) -> "MySQLSensorConnection":
        raise NotImplementedError("the MySQL binding runs socialites as asyncio tasks")

    async def connect_async(self) -> "MySQLSensorConnection":
        if not self._ready:
            raise StoreError("create_schema or use_schema must run before connect")
        return MySQLSensorConnection(await mysql.Held.acquire(self._loop_pools))

    async def aclose(self) -> None:
        await self._loop_pools.aclose()

    def describe(self) -> str:
        with self._connect(with_database=False) as conn, self._errors("describe"):
            cursor = conn.cursor()
            cursor.execute("SELECT VERSION(), @@innodb_flush_log_at_trx_commit")
            row = cursor.fetchone()
        version, flush = (str(row[0])[:100], str(row[1])[:8]) if row else ("?", "?")
        o = self.options
        extra = f"; isolation set to {o.isolation}" if o.isolation else ""
        return (
            f"{mysql.product(version)} at {o.where} ({o.consistency}: "
            f"{self.consistency_settings[o.consistency]}{extra}; server "
            f"innodb_flush_log_at_trx_commit={flush})"
        )

    def counters(self) -> dict[str, int]:
        return {}

    def close(self) -> None:
        if self._study is not None:
            self._study.close()
            self._study = None
        self._loop_pools.clear()  # a loop's pool is closed by aclose() on that loop


class MySQLSensorConnection:
    """One socialite task's asyncmy connection, held for its run and taken again after it
    was lost."""

    __slots__ = ("held",)

    def __init__(self, held: mysql.Held) -> None:
        self.held = held

    async def _one(self, sql: str, args: tuple[Any, ...]) -> Any:
        async with (await self.held.live()).cursor() as cursor:
            await cursor.execute(sql, args)
            row = await cursor.fetchone()
        return row[0] if row else None

    async def insert(self, row: Reading) -> None:
        async with (await self.held.live()).cursor() as cursor:
            await cursor.execute(
                INSERT, (int(row.m), int(row.s), int(row.bt), int(row.et), float(row.mv))
            )

    async def newest(self, m: int, s: int, bt: int) -> bool:
        return bool(await self._one(NEWEST, (int(m), int(s), int(bt))))

    async def count_above(self, x: float, m_lo: int, m_hi: int) -> int:
        return int(await self._one(COUNT_ABOVE, (float(x), int(m_lo), int(m_hi))) or 0)

    async def close(self) -> None:
        await self.held.release()
