"""Cassandra (cassandra-driver) for the sensor-log workload: a series per partition,
clustered by time, and a storage-attached index (SAI) on the value.

    measures ((m, s), bt)    et bigint, mv double          m, s int; bt bigint (ms)
    measures_mv              CREATE INDEX ... ON measures (mv) USING 'sai'

The key index is the table's own primary key: it cannot be built after the rows, so
"indexes after" loads into the keyed table and then builds only measures_mv. An SAI index
builds in the background: build_indexes (and reset, create_schema) wait until every node
that is up reports it queryable (system_views.sai_column_indexes).

Bulk path: per machine's batch of rows, unlogged batches of one partition each (a single
mutation on its replicas, `load_batch` rows at most, so never size-checked as a batch)
sent by execute_concurrent (`load_concurrency` in flight); failed ones go again, fewer at
a time.

Consistency (the paper's Table 1; `consistency`):

    strong  reads and writes at QUORUM; commit log synced before a write is acknowledged
    weak    reads and writes at ONE; commit log synced periodically

The commit log mode (commitlog_sync: batch or periodic) is a server setting no client can
change: the binding reads it from system_views.settings, and describe() says what is in
force and when it is not the one the consistency asks for. `deploy/local/servers.py start
cassandra-batch DIR` starts a node in batch mode for the strong runs.

Queries, all through SAI (which reads every matching row by its own primary key: "N rows
in N partitions post-filtered" in the plans, so a query costs per row selected): Q2 is
`SELECT ... WHERE mv > ?`, paged (`fetch_size` rows a page), the rows of every page counted
on arrival; Q3 is `SELECT count(*) ... WHERE mv > ?`, counted by the coordinator. Cassandra
5.0 cancels a whole count that outlives the server's read timeout (seen at 5 s,
read_request_timeout's default: some 10,000s of rows on a small node), so a large Q3 fails
with a read failure, while each page of Q2 is a request of its own. `q3_splits` > 1 makes
Q3 that many counts of token ranges (`token(m, s) > ? AND token(m, s) <= ? AND mv > ?`),
SPLIT_CONCURRENCY at a time, summed: each within the timeout, as bulk tools count.

The rating's count over machines m_lo <= m < m_hi is one statement, `... WHERE mv > ? AND
m >= ? AND m < ? ALLOW FILTERING`: m is part of the partition key, which Cassandra cannot
range-restrict, and `m IN (...)` is refused beside an index, so SAI selects the rows above
x of the WHOLE table, reads each, and drops those of other machines: a fragment's count
costs the table's count. (An SAI index on m too would intersect the two; measured, it was
no faster at the rating's 0.2% and would cost every insert a second index.)

plan() traces the query (Cassandra has no EXPLAIN) and condenses the trace's events: the
index scanned, the token ranges, the SSTable indexes searched, the rows post-filtered and
read. A trace costs ~3 events per row, so Q2 and Q3 are traced over their first page of
PLAN_ROWS rows.

Reset drops the table; under the server's default auto_snapshot: true each drop keeps a
snapshot (hard links) of the dropped data on disk until `nodetool clearsnapshot`.
Socialites are tasks on the load process's loop, bridged from execute_async as the EHR
binding does.
"""

import asyncio
import itertools
import time
from collections.abc import Callable, Iterable
from typing import Any, ClassVar

from cassandra import ReadFailure, ReadTimeout
from cassandra.cluster import NoHostAvailable, ResultSet, Session
from cassandra.concurrent import execute_concurrent, execute_concurrent_with_args
from cassandra.pool import Host
from cassandra.query import BatchStatement, BatchType, PreparedStatement, TraceUnavailable
from pydantic import BaseModel

from bgbench.drivers.cassandra import DRIVER_ERRORS, Cassandra, level_name
from bgbench.errors import StoreError
from bgbench.workloads.loading import beating
from bgbench.workloads.sensorlog.config import SensorLogDatabaseConfig
from bgbench.workloads.sensorlog.generator import Rows
from bgbench.workloads.sensorlog.store import Concurrency, FragmentLog, Query, Reading
from bgbench.workloads.sensorlog.stores.cassandra_queries import (
    INDEX,
    INDEX_NAME,
    LEVEL_NAMES,
    LEVELS,
    PLAN_ROWS,
    TABLE,
    Call,
    CassandraSensorConnection,
    Statements,
    summarise_trace,
)
from bgbench.workloads.sensorlog.stores.options import CassandraSensorOptions

LOAD_ATTEMPTS = 4
INDEX_POLL_S = 0.1
TRACE_WAIT_S = 30.0
RING = (-(2**63), 2**63 - 1)  # Murmur3's tokens: (RING[0], RING[1]] holds every key's
SPLIT_CONCURRENCY = 4  # token-range counts of one split Q3 in flight


class CassandraSensorBinding:
    name: ClassVar[str] = "cassandra"
    concurrency: ClassVar[Concurrency] = "asyncio"
    suspends: ClassVar[bool] = True
    embedded: ClassVar[bool] = False
    Options: ClassVar[type[BaseModel]] = CassandraSensorOptions
    file_options: ClassVar[tuple[str, ...]] = ()
    consistency_settings: ClassVar[dict[str, str]] = {
        "strong": "reads and writes at QUORUM; commit log synced before each write is "
        "acknowledged (commitlog_sync: batch, a server setting describe() reads back)",
        "weak": "reads and writes at ONE; commit log synced periodically (commitlog_sync: "
        "periodic, a server setting describe() reads back)",
    }

    def __init__(self, options: CassandraSensorOptions) -> None:
        self.options = options
        self.cassandra = Cassandra(options, LEVEL_NAMES[options.consistency])
        self.cluster = self.cassandra.cluster
        self.statements: Statements | None = None

    def _where(self) -> str:
        return self.cassandra.where()

    @property
    def session(self) -> Session:
        return self.cassandra.session

    @property
    def ddl(self) -> Session:
        """A session on the first contact point only: Cassandra 5.0 can create one table
        twice with different ids when two coordinators race."""
        return self.cassandra.ddl

    def _ready(self) -> Statements:
        if self.statements is None:
            self.statements = Statements(self.session, self.options)
        return self.statements

    def _prepared(self, what: str, name: str) -> PreparedStatement:
        """A statement by name, prepared now if not yet."""
        try:
            statement: PreparedStatement = getattr(self._ready(), name)
            return statement
        except DRIVER_ERRORS as exc:
            raise StoreError(
                f"cannot prepare {what} in Cassandra at {self._where()} (is the schema "
                f"there?): {exc}"
            ) from None

    def _run(self, what: str, statement: Any, args: tuple[Any, ...] = (), **kw: Any) -> ResultSet:
        try:
            return self.session.execute(statement, args, **kw)
        except DRIVER_ERRORS as exc:
            raise self._fault(what, exc) from None

    def _fault(self, what: str, exc: Exception) -> StoreError:
        hint = ""
        if isinstance(exc, (ReadFailure, ReadTimeout)):
            hint = " (the server cancels a read that outlives its read timeout: see its log)"
        return StoreError(f"{what} in Cassandra at {self._where()}: {exc}{hint}")

    # -- schema ----------------------------------------------------------------------
    def _define(self, drop: bool, index: bool) -> None:
        ks = self.options.keyspace
        try:
            self.cassandra.ensure_keyspace(self.options.replication())
            if drop:
                self.ddl.execute(f"DROP TABLE IF EXISTS {ks}.measures")
            self.ddl.execute(TABLE.format(ks=ks))
            if index:
                self.ddl.execute(INDEX.format(ks=ks))
        except DRIVER_ERRORS as exc:
            raise StoreError(
                f"cannot define the sensor-log schema in Cassandra at {self._where()}: {exc}"
            ) from None
        self.statements = None  # the table may be new: prepare against it again
        if index:
            self._wait_for_index()

    def _wait_for_index(self) -> None:
        """Until every node that is up says measures_mv is queryable (an SAI index builds
        in the background after its CREATE INDEX returns)."""
        deadline = time.monotonic() + self.options.index_timeout_s
        pending = self._nodes()
        while pending:
            pending = [h for h in pending if not self._queryable(h)]
            if pending and time.monotonic() > deadline:
                raise StoreError(
                    f"index {INDEX_NAME} not queryable after {self.options.index_timeout_s:g} s "
                    f"on {', '.join(str(h.endpoint) for h in pending)}: see the server's log"
                )
            if pending:
                time.sleep(INDEX_POLL_S)

    def _nodes(self) -> list[Host]:
        """The nodes that are up and that the session talks to (its data centre's): each
        answers system_views (node-local tables) for itself."""
        return [h for h in self.session.get_pool_state() if h.is_up]

    def _queryable(self, host: Host) -> bool:
        rows = self._run(
            f"waiting for index {INDEX_NAME}",
            "SELECT is_queryable FROM system_views.sai_column_indexes "
            "WHERE keyspace_name = %s AND index_name = %s",
            (self.options.keyspace, INDEX_NAME),
            host=host,
        )
        return any(r[0] for r in rows)

    # -- studies ---------------------------------------------------------------------
    def reset(self, indexes: bool) -> None:
        self._define(drop=True, index=indexes)

    def bulk_load(self, batches: Iterable[Rows], progress: Callable[[], None]) -> int:
        insert, n = self._prepared("the insert", "insert"), 0
        for rows in batches:
            progress()
            self._execute(self._partition_batches(insert, rows), progress)
            n += len(rows)
        return n

    def _partition_batches(self, insert: PreparedStatement, rows: Rows) -> list[Call]:
        """The rows (in key order, so a series' are consecutive) as unlogged batches of one
        partition each, `load_batch` rows at most."""
        out: list[Call] = []
        batch: BatchStatement | None = None
        series, size, limit = None, 0, self.options.load_batch
        level = LEVELS[self.options.consistency]
        for row in rows.tuples():
            if batch is None or row[:2] != series or size == limit:
                batch = BatchStatement(BatchType.UNLOGGED, consistency_level=level)
                out.append((batch, ()))
                series, size = row[:2], 0
            batch.add(insert, row)
            size += 1
        return out

    def _execute(self, statements: list[Call], progress: Callable[[], None]) -> None:
        """Every statement, `load_concurrency` in flight; each is idempotent, so those that
        fail (a busy node times writes out) go again, a quarter as many at a time."""
        concurrency = self.options.load_concurrency
        failed: list[BaseException] = []
        for _attempt in range(LOAD_ATTEMPTS):
            try:
                results = execute_concurrent(
                    self.session,
                    beating(statements, progress),  # a beat as each statement goes out
                    concurrency=concurrency,
                    raise_on_first_error=False,
                )
            except NoHostAvailable as exc:
                raise StoreError(f"loading into Cassandra at {self._where()}: {exc}") from None
            failed = [r.result_or_exc for r in results if not r.success]
            statements = [s for s, r in zip(statements, results, strict=True) if not r.success]
            if not statements:
                return
            concurrency = max(1, concurrency // 4)
        raise StoreError(
            f"loading into Cassandra at {self._where()}: {len(failed)} writes still failing "
            f"after {LOAD_ATTEMPTS} attempts: {failed[0]}"
        )

    def build_indexes(self) -> None:
        self._define(drop=False, index=True)

    def q1(self, m: int, s: int, bt: int) -> Reading | None:
        row = self._run("Q1", self._prepared("Q1", "q1"), (m, s, bt)).one()
        return Reading(*row) if row else None

    def q2(self, x: float) -> int:
        rs = self._run("Q2", self._prepared("Q2", "q2"), (x,), timeout=self.options.query_timeout_s)
        n = len(rs.current_rows)
        while rs.has_more_pages:
            try:
                rs.fetch_next_page()
            except DRIVER_ERRORS as exc:
                raise self._fault("Q2", exc) from None
            n += len(rs.current_rows)
        return n

    def q3(self, x: float) -> int:
        splits = self.options.q3_splits
        if splits == 1:
            statement = self._prepared("Q3", "q3")
            rs = self._run("Q3", statement, (x,), timeout=self.options.query_timeout_s)
            return int(rs.one()[0])
        lo, hi = RING
        bounds = [lo + (hi - lo) * i // splits for i in range(splits)] + [hi]
        try:
            results = execute_concurrent_with_args(
                self.session,
                self._prepared("Q3", "q3_range"),
                [(a, b, x) for a, b in itertools.pairwise(bounds)],
                concurrency=SPLIT_CONCURRENCY,
                raise_on_first_error=False,
            )
        except NoHostAvailable as exc:
            raise self._fault("Q3", exc) from None
        total = 0
        for r in results:
            if not r.success:
                raise self._fault(f"Q3 (one of {splits} token ranges)", r.result_or_exc)
            total += int(r.result_or_exc.one()[0])
        return total

    def plan(self, query: Query, x: float = 0.0, key: tuple[int, int, int] = (0, 0, 0)) -> str:
        """Cassandra has no EXPLAIN: the query runs traced and its trace is condensed. A
        trace writes ~3 events per row read, so Q2 is traced over its first page of
        PLAN_ROWS rows, and Q3 over the first such page of the reads its count makes (the
        coordinator counts pages of `SELECT mv ... WHERE mv > ?` through the index)."""
        if query == "Q1":
            bound, end, note = self._prepared("Q1", "q1").bind(key), "live rows", ""
        else:
            name = "q2" if query == "Q2" else "scan"
            bound, end = self._prepared(query, name).bind((x,)), "Index query accessed"
            bound.fetch_size = PLAN_ROWS
            whose = "the count's " if query == "Q3" else ""
            note = f" ({whose}first {PLAN_ROWS} rows traced)"
        rs = self._run(f"tracing {query}", bound, trace=True)
        deadline = time.monotonic() + TRACE_WAIT_S
        try:
            trace = rs.get_query_trace(max_wait_sec=TRACE_WAIT_S)
            # The events are written in the background, after the session completes.
            while not any(end in e.description for e in trace.events):
                if time.monotonic() > deadline:
                    break
                time.sleep(INDEX_POLL_S)
                trace.populate(max_wait=TRACE_WAIT_S)
        except (*DRIVER_ERRORS, TraceUnavailable) as exc:
            raise StoreError(f"reading the trace of {query} from Cassandra: {exc}") from None
        return summarise_trace([e.description for e in trace.events]) + note

    # -- the rating ------------------------------------------------------------------
    def create_schema(self, db: SensorLogDatabaseConfig) -> None:
        self._define(drop=False, index=True)
        self.use_schema(db)

    def use_schema(self, db: SensorLogDatabaseConfig) -> None:
        try:
            self._ready().prepare_all()
        except DRIVER_ERRORS as exc:
            raise StoreError(
                f"cannot prepare the sensor-log statements in Cassandra at {self._where()} "
                f"(is the schema there?): {exc}"
            ) from None

    def load_fragment(self, fragment: FragmentLog, progress: Callable[[], None]) -> None:
        """Every series of the fragment's machines deleted (those found there, and those the
        generator makes, in case a replica the search did not ask holds one), stamped before
        any new row, so the order the deletes and rows arrive in does not matter."""
        insert, wipe = self._prepared("the insert", "insert"), self._prepared("the delete", "wipe")
        series = self._prepared("the series search", "series")
        lo, hi = fragment.machines.start, fragment.machines.stop
        found = self._run("finding the fragment's series", series, (lo, hi)).all()
        wiped = {(int(m), int(s)) for m, s in found}
        stamp = int(time.time() * 1e6) - 1
        progress()
        self._execute([(wipe, (stamp, m, s)) for m, s in sorted(wiped)], progress)
        for rows in fragment.batches():
            progress()
            new = set(zip(rows.m.tolist(), rows.s.tolist(), strict=True)) - wiped
            wiped |= new
            wipes: list[Call] = [(wipe, (stamp, m, s)) for m, s in sorted(new)]
            self._execute(wipes + self._partition_batches(insert, rows), progress)

    def connect(self) -> "CassandraSensorConnection":
        raise NotImplementedError("the Cassandra binding runs socialites as asyncio tasks")

    async def connect_async(self) -> "CassandraSensorConnection":
        # The session is thread-safe and shared by every loop; only the asyncio futures a
        # connection makes belong to its loop.
        statements = self._ready()
        return CassandraSensorConnection(self.session, statements, asyncio.get_running_loop())

    async def aclose(self) -> None:
        pass

    def describe(self) -> str:
        o = self.options
        version = self._run("reading the version", "SELECT release_version FROM system.local")
        nodes = self.cassandra.nodes()
        level = LEVELS[o.consistency]
        commitlog = self._commitlog()
        wanted = "batch" if o.consistency == "strong" else "periodic"
        warning = ""
        if not commitlog.startswith(wanted):
            warning = f"; NOT the {wanted} commit log {o.consistency} asks of the server"
        return (
            f"Cassandra {version.one()[0]} ({nodes}, "
            f"RF {o.replication_factor}, {o.consistency}: reads and writes "
            f"{level_name(level)}, commit log {commitlog}{warning})"
        )

    def _commitlog(self) -> str:
        """The commit log modes of the nodes, as system_views.settings says."""
        modes = set()
        for host in self._nodes():
            rows = self._run(
                "reading the commit log settings",
                "SELECT name, value FROM system_views.settings WHERE name IN "
                "('commitlog_sync', 'commitlog_sync_period', 'commitlog_sync_group_window')",
                host=host,
            ).all()
            settings = dict(rows)
            mode = settings.get("commitlog_sync", "unknown")
            if mode == "periodic":
                mode = f"periodic, every {settings.get('commitlog_sync_period', '?')}"
            elif mode == "group":
                mode = f"group, window {settings.get('commitlog_sync_group_window', '?')}"
            modes.add(mode)
        return " / ".join(sorted(modes)) or "unknown"

    def counters(self) -> dict[str, int]:
        return {}

    def close(self) -> None:
        self.cassandra.shutdown()
