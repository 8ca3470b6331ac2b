"""PostgreSQL for the sensor-log workload.

    measures (m integer, s integer, bt bigint, et bigint, mv double precision)
    measures_key UNIQUE (m, s, bt)        measures_mv (mv)

A heap table with both indexes separate from it, so that "indexes before" and "indexes
after" differ only in when the two CREATE INDEX run.

Bulk path: one COPY ... FROM STDIN WITH (FORMAT csv) per load, the rows of each batch sent
as CSV text. The paper loaded CSV files with each system's own bulk command; with CSV the
server parses the text into columns as it would from such a file, and the client only
formats it (repr of each float: round-trip exact, so thresholds select exact counts).
CSV also ran faster here than psycopg's per-row write_row of the text format.

Consistency (the paper's Table 1):

    strong  a logged table (WAL), the COPY in a SERIALIZABLE transaction,
            synchronous_commit=on; the rating's statements serializable too
    weak    an UNLOGGED table (no WAL, its indexes neither), synchronous_commit=off,
            read committed (PostgreSQL's lowest level: it has no dirty reads)

The option `isolation` overrides the level that goes with the consistency. The local test
server runs with fsync=off, which describe() reports: there, strong costs the WAL's
writes, not its flushes.

Queries: Q1 is one lookup in measures_key; Q2 fetches the rows with mv > x to the client,
Q3 counts them in the server; the planner picks an index (only) scan, a bitmap scan of
measures_mv or a (parallel) sequential scan by the estimated selectivity. So that its
choice is a real one, and the same in every run, a bulk load ends with VACUUM (ANALYZE),
inside the load's time (some 5% of it): statistics, and the visibility map and hint bits
that autovacuum or the first scans would otherwise set at some moment of the queries
(autovacuum would turn Q3 into an index-only scan midway). The study's connection never
prepares statements: each query is planned for its own threshold.

The rating: create_schema makes the table and both indexes if missing (under an advisory
lock: two coordinators on one database), switching an existing table to LOGGED or
UNLOGGED as the consistency asks (a rewrite, no data lost). load_fragment deletes the
fragment's machines and COPYs its rows in one read-committed transaction (two load
processes' serializable DELETEs would predicate-lock the whole table and abort each
other), then ANALYZE. Socialites are asyncio tasks, each holding one connection of its
event loop's asyncpg pool; count_above is one statement, so one snapshot. The pool plans
every statement for its own parameters (plan_cache_mode=force_custom_plan): a cached
generic plan for `mv > $1 AND m >= $2 AND m < $3` would scan the fragment's whole key range.

With `read_from: replica` (consistency strong with a non-serializable isolation: a standby
has no unlogged table and runs no serializable transaction) each socialite holds a second
connection, to the hot standby of `replica_dsn`, where newest and count_above run; inserts
stay on the primary, as do the studies.
"""

import re
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from typing import Any, ClassVar

import psycopg

from bgbench.drivers import postgres as pg
from bgbench.drivers.postgres_options import server_of
from bgbench.errors import StoreError
from bgbench.workloads.sensorlog.config import SensorLogDatabaseConfig
from bgbench.workloads.sensorlog.generator import Rows
from bgbench.workloads.sensorlog.store import Concurrency, FragmentLog, Query, Reading
from bgbench.workloads.sensorlog.stores.options import PostgresSensorOptions

ADVISORY_LOCK = 7031  # two coordinators creating the schema of one database at once
COLUMNS = (
    "(m integer NOT NULL, s integer NOT NULL, bt bigint NOT NULL, et bigint NOT NULL, "
    "mv double precision NOT NULL)"
)
INDEXES = (
    "CREATE UNIQUE INDEX IF NOT EXISTS measures_key ON measures (m, s, bt)",
    "CREATE INDEX IF NOT EXISTS measures_mv ON measures (mv)",
)
COPY = "COPY measures (m, s, bt, et, mv) FROM STDIN WITH (FORMAT csv)"
# $n parameters: asyncpg's, and psycopg's RawCursor on the study connection.
Q1 = "SELECT m, s, bt, et, mv FROM measures WHERE m = $1 AND s = $2 AND bt = $3"
Q2 = "SELECT m, s, bt, et, mv FROM measures WHERE mv > $1"
Q3 = "SELECT count(*) FROM measures WHERE mv > $1"
NEWEST = "SELECT EXISTS (SELECT 1 FROM measures WHERE m = $1 AND s = $2 AND bt = $3)"
COUNT_ABOVE = "SELECT count(*) FROM measures WHERE mv > $1 AND m >= $2 AND m < $3"
INSERT = "INSERT INTO measures (m, s, bt, et, mv) VALUES ($1, $2, $3, $4, $5)"

SYNCHRONOUS_COMMIT = {"strong": "on", "weak": "off"}
PLAN_CHARS = 110  # beyond this a plan loses its conditions, then its row estimates
COST = re.compile(r"\s*\(cost=[\d.]+ rows=(\d+) width=\d+\)")


def csv_text(rows: Rows) -> str:
    """A batch as CSV lines; repr keeps every float exact."""
    cols = (rows.m.tolist(), rows.s.tolist(), rows.bt.tolist(), rows.et.tolist(), rows.mv.tolist())
    return "".join(f"{m},{s},{bt},{et},{mv!r}\n" for m, s, bt, et, mv in zip(*cols, strict=True))


def one_line(explain: list[str]) -> str:
    """EXPLAIN's lines as one: each node with its estimated rows and its conditions; when
    that is too long for a table cell, the nodes only, then without their estimates."""
    steps = [(COST.sub(r" (rows=\1)", line).strip().removeprefix("->").strip(), line)
             for line in explain]  # fmt: skip
    full = "; ".join(step for step, _ in steps)
    if len(full) <= PLAN_CHARS:
        return full
    nodes = [step for k, (step, line) in enumerate(steps) if k == 0 or "->" in line]
    short = "; ".join(nodes)
    return short if len(short) <= PLAN_CHARS else re.sub(r" \(rows=\d+\)", "", short)


class PostgresSensorBinding:
    name: ClassVar[str] = "postgres"
    concurrency: ClassVar[Concurrency] = "asyncio"
    suspends: ClassVar[bool] = True
    embedded: ClassVar[bool] = False
    Options: ClassVar[type[PostgresSensorOptions]] = PostgresSensorOptions
    file_options: ClassVar[tuple[str, ...]] = ()
    consistency_settings: ClassVar[dict[str, str]] = {
        "strong": "logged table (WAL), COPY in a SERIALIZABLE transaction, synchronous_commit=on",
        "weak": "UNLOGGED table (no WAL), synchronous_commit=off, read committed "
        "(PostgreSQL has no dirty reads)",
    }

    def __init__(self, options: PostgresSensorOptions) -> None:
        self.options = options
        self.weak = options.consistency == "weak"
        self._study: psycopg.Connection | None = None
        self._ready = False
        # One asyncpg pool per event loop (a pool is bound to its loop); the first task of a
        # loop to ask makes it, the others await the same future.
        settings = {
            "default_transaction_isolation": options.level,
            "synchronous_commit": SYNCHRONOUS_COMMIT[options.consistency],
            "plan_cache_mode": "force_custom_plan",
        }
        self._loop_pools = pg.loop_pools(options, **settings)
        replica = pg.reads_options(options)  # where the reads go with read_from replica
        self._read_loop_pools = pg.loop_pools(replica, **settings) if replica else None

    @property
    def where(self) -> str:
        return server_of(self.options.dsn)

    def _connect(self, **kwargs: Any) -> psycopg.Connection[Any]:
        conn = pg.connect(self.options, **kwargs)
        try:
            with self._errors("session settings"):  # constants: no parameters needed
                conn.execute(
                    f"SET synchronous_commit TO {SYNCHRONOUS_COMMIT[self.options.consistency]}"
                )
        except BaseException:
            conn.close()
            raise
        return conn

    def _errors(self, what: str) -> AbstractContextManager[None]:
        return pg.errors(self.options, what)

    def _table(self, if_not_exists: bool) -> str:
        kind = "UNLOGGED TABLE" if self.weak else "TABLE"
        return f"CREATE {kind} {'IF NOT EXISTS ' if if_not_exists else ''}measures {COLUMNS}"

    # -- studies ---------------------------------------------------------------------
    @property
    def study(self) -> psycopg.Connection:
        if self._study is None:
            conn = self._connect(prepare_threshold=None, cursor_factory=psycopg.RawCursor)
            with self._errors("session settings"):
                conn.execute(f"SET default_transaction_isolation TO '{self.options.level}'")
            self._study = conn
        return self._study

    def reset(self, indexes: bool) -> None:
        with self._errors("reset"):
            c = self.study
            c.execute("DROP TABLE IF EXISTS measures")
            c.execute(self._table(if_not_exists=False))
            if indexes:
                for ddl in INDEXES:
                    c.execute(ddl)

    def bulk_load(self, batches: Iterable[Rows], progress: Callable[[], None]) -> int:
        n = 0
        with self._errors("bulk load"):
            c = self.study
            # BEGIN at the session's default level: serializable when strong.
            with c.transaction(), c.cursor().copy(COPY) as copy:
                for rows in batches:
                    progress()
                    copy.write(csv_text(rows))  # sent as the buffer fills
                    n += len(rows)
            progress()
            c.execute("VACUUM (ANALYZE) measures")
        return n

    def build_indexes(self) -> None:
        with self._errors("build indexes"):
            for ddl in INDEXES:
                self.study.execute(ddl)

    def q1(self, m: int, s: int, bt: int) -> Reading | None:
        with self._errors("Q1"):
            row = self.study.execute(Q1, (m, s, bt)).fetchone()
        return Reading(*row) if row else None

    def q2(self, x: float) -> int:
        with self._errors("Q2"):
            return len(self.study.execute(Q2, (x,)).fetchall())

    def q3(self, x: float) -> int:
        with self._errors("Q3"):
            row = self.study.execute(Q3, (x,)).fetchone()
        return int(row[0]) if row else 0

    def plan(self, query: Query, x: float = 0.0, key: tuple[int, int, int] = (0, 0, 0)) -> str:
        sql, args = {"Q1": (Q1, key), "Q2": (Q2, (x,)), "Q3": (Q3, (x,))}[query]
        with self._errors(f"EXPLAIN {query}"):
            # an unnamed statement: planned for these parameters, as the query itself
            lines = self.study.execute(f"EXPLAIN {sql}", args).fetchall()
        return one_line([str(line[0]) for line in lines])

    # -- the rating ------------------------------------------------------------------
    def create_schema(self, db: SensorLogDatabaseConfig) -> None:
        with self._connect() as conn, self._errors("create schema"):
            conn.execute("SELECT pg_advisory_lock(%s)", (ADVISORY_LOCK,))
            try:
                conn.execute(self._table(if_not_exists=True))
                row = conn.execute(
                    "SELECT relpersistence FROM pg_class WHERE oid = 'measures'::regclass"
                ).fetchone()
                if row is not None and (row[0] == "u") != self.weak:
                    conn.execute(
                        f"ALTER TABLE measures SET {'UNLOGGED' if self.weak else 'LOGGED'}"
                    )
                for ddl in INDEXES:
                    conn.execute(ddl)
            finally:
                conn.execute("SELECT pg_advisory_unlock(%s)", (ADVISORY_LOCK,))
        pg.check_replica(self.options)
        self._ready = True

    def use_schema(self, db: SensorLogDatabaseConfig) -> None:
        with self._connect() as conn, self._errors("use schema"):
            row = conn.execute("SELECT to_regclass('measures') IS NOT NULL").fetchone()
        if not (row and row[0]):
            raise StoreError(f"no sensorlog table in {self.where}: create_schema must run first")
        pg.check_replica(self.options)
        self._ready = True

    def load_fragment(self, fragment: FragmentLog, progress: Callable[[], None]) -> None:
        machines = fragment.machines
        with self._connect() as conn, self._errors(f"loading fragment {fragment.index}"):
            with conn.transaction():
                conn.execute(
                    "DELETE FROM measures WHERE m >= %s AND m < %s", (machines.start, machines.stop)
                )
                with conn.cursor().copy(COPY) as copy:
                    for rows in fragment.batches():
                        progress()
                        copy.write(csv_text(rows))
            progress()
            conn.execute("ANALYZE measures")
        pg.await_replica(self.options, progress)  # reads from a standby see the load

    def connect(self) -> "PostgresSensorConnection":
        raise NotImplementedError("the PostgreSQL binding runs socialites as asyncio tasks")

    async def connect_async(self) -> "PostgresSensorConnection":
        if not self._ready:
            raise StoreError("create_schema or use_schema must run before connect")
        writes, reads = await pg.acquire_pair(self._loop_pools, self._read_loop_pools)
        return PostgresSensorConnection(writes, reads)

    async def aclose(self) -> None:
        await self._loop_pools.aclose()
        if self._read_loop_pools is not None:
            await self._read_loop_pools.aclose()

    def describe(self) -> str:
        with self._connect() as conn, self._errors("describe"):
            row = conn.execute(
                "SELECT current_setting('server_version'), current_setting('fsync')"
            ).fetchone()
        version, fsync = row if row else ("?", "?")
        o = self.options
        extra = f"; isolation set to {o.isolation}" if o.isolation else ""
        extra += "; server fsync=off" if fsync == "off" else ""
        note = pg.reads_note(o)
        extra += f"; {note}" if note else ""
        return (
            f"PostgreSQL {version} at {self.where} "
            f"({o.consistency}: {self.consistency_settings[o.consistency]}{extra})"
        )

    def counters(self) -> dict[str, int]:
        return {}

    def close(self) -> None:
        if self._study is not None:
            self._study.close()
            self._study = None
        self._loop_pools.clear()  # a loop's pool is closed by aclose() on that loop
        if self._read_loop_pools is not None:
            self._read_loop_pools.clear()


class PostgresSensorConnection(pg.HeldPair):
    """One socialite task's asyncpg connection (`writes`), held for its run and taken again
    after its server closed it; with a standby to read from, a second one there (`reads`),
    which its reads use."""

    __slots__ = ()

    async def insert(self, row: Reading) -> None:
        # asyncpg encodes by exact Python type: no numpy scalars
        await self.writes.execute(
            INSERT, int(row.m), int(row.s), int(row.bt), int(row.et), float(row.mv)
        )

    async def newest(self, m: int, s: int, bt: int) -> bool:
        found = await (await self.reads.live()).fetchval(NEWEST, int(m), int(s), int(bt))
        return bool(found)

    async def count_above(self, x: float, m_lo: int, m_hi: int) -> int:
        reads = await self.reads.live()
        return int(await reads.fetchval(COUNT_ABOVE, float(x), int(m_lo), int(m_hi)))
