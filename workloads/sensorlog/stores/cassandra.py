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
import re
import time
from collections.abc import Callable, Iterable
from functools import cached_property
from typing import Annotated, Any, ClassVar, Literal

from cassandra import ConsistencyLevel, DriverException, ReadFailure, ReadTimeout
from cassandra.cluster import (
    EXEC_PROFILE_DEFAULT,
    Cluster,
    ExecutionProfile,
    NoHostAvailable,
    ResultSet,
    Session,
)
from cassandra.concurrent import execute_concurrent, execute_concurrent_with_args
from cassandra.policies import DCAwareRoundRobinPolicy, TokenAwarePolicy, WhiteListRoundRobinPolicy
from cassandra.pool import Host
from cassandra.query import (
    BatchStatement,
    BatchType,
    PreparedStatement,
    TraceUnavailable,
    tuple_factory,
)
from pydantic import BaseModel, ConfigDict, Field, field_validator

from bgbench.errors import StoreError
from bgbench.workloads.futures import DriverCallbacks
from bgbench.workloads.loading import beating
from bgbench.workloads.sensorlog.config import SensorLogDatabaseConfig
from bgbench.workloads.sensorlog.generator import Rows
from bgbench.workloads.sensorlog.store import Concurrency, FragmentLog, Query, Reading

LEVELS = {"strong": ConsistencyLevel.QUORUM, "weak": ConsistencyLevel.ONE}
LOAD_ATTEMPTS = 4
INDEX_POLL_S = 0.1
TRACE_WAIT_S = 30.0
PLAN_ROWS = 100
RING = (-(2**63), 2**63 - 1)  # Murmur3's tokens: (RING[0], RING[1]] holds every key's
SPLIT_CONCURRENCY = 4  # token-range counts of one split Q3 in flight
# Q2's page: each page is a request of its own under the server's read timeout, which a
# 5,000-row SAI page (the driver's default) can outlive on a busy node.
PAGE_ROWS = 1000
Call = tuple[Any, tuple[Any, ...]]  # a statement and its arguments, for execute_concurrent

TABLE = (
    "CREATE TABLE IF NOT EXISTS {ks}.measures (m int, s int, bt bigint, et bigint, mv double, "
    "PRIMARY KEY ((m, s), bt))"
)
INDEX = "CREATE INDEX IF NOT EXISTS measures_mv ON {ks}.measures (mv) USING 'sai'"
INDEX_NAME = "measures_mv"
COLUMNS = "m, s, bt, et, mv"


class CassandraSensorOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    hosts: list[str] = Field(["127.0.0.1"], description="contact points, or one comma list")
    port: Annotated[int, Field(ge=1, le=65535)] = 9042
    keyspace: str = Field("bgbench_sensorlog", pattern=r"^[A-Za-z][A-Za-z0-9_]{0,47}$")
    replication_factor: Annotated[int, Field(ge=1)] = 1
    consistency: Literal["strong", "weak"] = Field(
        "weak", description="strong: QUORUM reads and writes; weak: ONE (the commit log mode "
        "is the server's)",
    )  # fmt: skip
    load_concurrency: Annotated[int, Field(ge=1, le=2048)] = 64
    load_batch: Annotated[
        int, Field(ge=1, le=1000, description="rows per unlogged batch (one partition)")
    ] = 256
    fetch_size: Annotated[int, Field(ge=1, description="rows per page of Q2")] = PAGE_ROWS
    timeout_s: Annotated[float, Field(gt=0, description="per request")] = 30.0
    query_timeout_s: Annotated[
        float, Field(gt=0, description="per request of the studies' Q2 and Q3")
    ] = 600.0
    q3_splits: Annotated[
        int,
        Field(
            ge=1,
            le=4096,
            description="the studies' Q3 as this many token-range counts, "
            "summed (1: one count(*)); for counts the server's read timeout cuts short",
        ),
    ] = 1
    index_timeout_s: Annotated[
        float, Field(gt=0, description="how long an index build may take")
    ] = 3600.0

    @field_validator("hosts", mode="before")
    @classmethod
    def _split(cls, value: object) -> object:
        if isinstance(value, str):
            return [h.strip() for h in value.split(",") if h.strip()]
        return value

    @field_validator("hosts")
    @classmethod
    def _some(cls, value: list[str]) -> list[str]:
        if not value:
            raise ValueError("name at least one contact point")
        return value

    @field_validator("keyspace")
    @classmethod
    def _fold(cls, value: str) -> str:
        return value.lower()  # as CQL folds an unquoted name


class Statements:
    """Every statement at the binding's consistency level, prepared on first use (the
    queries on mv cannot be prepared before measures_mv exists)."""

    def __init__(self, session: Session, options: CassandraSensorOptions) -> None:
        self.session = session
        self.keyspace = options.keyspace
        self.level = LEVELS[options.consistency]
        self.fetch_size = options.fetch_size

    def _prep(self, cql: str) -> PreparedStatement:
        statement = self.session.prepare(cql.format(ks=self.keyspace))
        statement.consistency_level = self.level
        return statement

    @cached_property
    def insert(self) -> PreparedStatement:
        return self._prep(f"INSERT INTO {{ks}}.measures ({COLUMNS}) VALUES (?, ?, ?, ?, ?)")

    @cached_property
    def wipe(self) -> PreparedStatement:
        return self._prep("DELETE FROM {ks}.measures USING TIMESTAMP ? WHERE m = ? AND s = ?")

    @cached_property
    def q1(self) -> PreparedStatement:
        return self._prep(f"SELECT {COLUMNS} FROM {{ks}}.measures WHERE m = ? AND s = ? AND bt = ?")

    @cached_property
    def q2(self) -> PreparedStatement:
        statement = self._prep(f"SELECT {COLUMNS} FROM {{ks}}.measures WHERE mv > ?")
        statement.fetch_size = self.fetch_size
        return statement

    @cached_property
    def scan(self) -> PreparedStatement:
        return self._prep("SELECT mv FROM {ks}.measures WHERE mv > ?")

    @cached_property
    def q3(self) -> PreparedStatement:
        return self._prep("SELECT count(*) FROM {ks}.measures WHERE mv > ?")

    @cached_property
    def q3_range(self) -> PreparedStatement:
        return self._prep(
            "SELECT count(*) FROM {ks}.measures WHERE token(m, s) > ? AND token(m, s) <= ? "
            "AND mv > ?"
        )

    @cached_property
    def count_above(self) -> PreparedStatement:
        return self._prep(
            "SELECT count(*) FROM {ks}.measures WHERE mv > ? AND m >= ? AND m < ? ALLOW FILTERING"
        )

    @cached_property
    def series(self) -> PreparedStatement:
        return self._prep(
            "SELECT DISTINCT m, s FROM {ks}.measures WHERE m >= ? AND m < ? ALLOW FILTERING"
        )

    def prepare_all(self) -> None:
        """Every statement now (the rating's schema is complete): socialites never prepare."""
        for name in ("insert", "wipe", "q1", "count_above", "series"):
            getattr(self, name)


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
        self.cluster = self._cluster(TokenAwarePolicy(DCAwareRoundRobinPolicy()))
        self._session: Session | None = None
        self._ddl_cluster: Cluster | None = None
        self._ddl: Session | None = None
        self.statements: Statements | None = None

    def _cluster(self, policy: object) -> Cluster:
        profile = ExecutionProfile(
            load_balancing_policy=policy,
            consistency_level=LEVELS[self.options.consistency],
            request_timeout=self.options.timeout_s,
            row_factory=tuple_factory,
        )
        return Cluster(
            self.options.hosts, port=self.options.port, protocol_version=5,
            execution_profiles={EXEC_PROFILE_DEFAULT: profile},
            connect_timeout=self.options.timeout_s,
            control_connection_timeout=self.options.timeout_s,
        )  # fmt: skip

    def _where(self) -> str:
        return f"{','.join(self.options.hosts)}:{self.options.port}"

    @property
    def session(self) -> Session:
        if self._session is None:
            try:
                self._session = self.cluster.connect()
            except (DriverException, NoHostAvailable) as exc:
                raise StoreError(f"cannot reach Cassandra at {self._where()}: {exc}") from None
        return self._session

    @property
    def ddl(self) -> Session:
        """A session on the first contact point only: Cassandra 5.0 can create one table
        twice with different ids when two coordinators race."""
        if self._ddl is None:
            self._ddl_cluster = self._cluster(WhiteListRoundRobinPolicy(self.options.hosts[:1]))
            try:
                self._ddl = self._ddl_cluster.connect()
            except (DriverException, NoHostAvailable) as exc:
                raise StoreError(f"cannot reach Cassandra at {self._where()}: {exc}") from None
        return self._ddl

    def _ready(self) -> Statements:
        if self.statements is None:
            self.statements = Statements(self.session, self.options)
        return self.statements

    def _prepared(self, what: str, name: str) -> PreparedStatement:
        """A statement by name, prepared now if not yet."""
        try:
            statement: PreparedStatement = getattr(self._ready(), name)
            return statement
        except (DriverException, NoHostAvailable) as exc:
            raise StoreError(
                f"cannot prepare {what} in Cassandra at {self._where()} (is the schema "
                f"there?): {exc}"
            ) from None

    def _run(self, what: str, statement: Any, args: tuple[Any, ...] = (), **kw: Any) -> ResultSet:
        try:
            return self.session.execute(statement, args, **kw)
        except (DriverException, NoHostAvailable) as exc:
            raise self._fault(what, exc) from None

    def _fault(self, what: str, exc: Exception) -> StoreError:
        hint = ""
        if isinstance(exc, (ReadFailure, ReadTimeout)):
            hint = " (the server cancels a read that outlives its read timeout: see its log)"
        return StoreError(f"{what} in Cassandra at {self._where()}: {exc}{hint}")

    # -- schema ----------------------------------------------------------------------
    def _define(self, drop: bool, index: bool) -> None:
        ks = self.options.keyspace
        want = str(self.options.replication_factor)
        try:
            self.ddl.execute(
                f"CREATE KEYSPACE IF NOT EXISTS {ks} WITH replication = "
                f"{{'class': 'SimpleStrategy', 'replication_factor': {want}}}"
            )
            have = self.ddl.execute(
                "SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = %s", (ks,)
            ).one()[0]
            if have.get("replication_factor") != want:
                raise StoreError(
                    f"keyspace {ks} has replication {dict(have)}, the options ask for "
                    f"replication_factor {want}: drop it or name another keyspace"
                )
            if drop:
                self.ddl.execute(f"DROP TABLE IF EXISTS {ks}.measures")
            self.ddl.execute(TABLE.format(ks=ks))
            if index:
                self.ddl.execute(INDEX.format(ks=ks))
        except (DriverException, NoHostAvailable) as exc:
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
            except (DriverException, NoHostAvailable) as exc:
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
        except (DriverException, NoHostAvailable, TraceUnavailable) as exc:
            raise StoreError(f"reading the trace of {query} from Cassandra: {exc}") from None
        return summarise_trace([e.description for e in trace.events]) + note

    # -- the rating ------------------------------------------------------------------
    def create_schema(self, db: SensorLogDatabaseConfig) -> None:
        self._define(drop=False, index=True)
        self.use_schema(db)

    def use_schema(self, db: SensorLogDatabaseConfig) -> None:
        try:
            self._ready().prepare_all()
        except (DriverException, NoHostAvailable) as exc:
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
        nodes = len(self.cluster.metadata.all_hosts())
        level = LEVELS[o.consistency]
        commitlog = self._commitlog()
        wanted = "batch" if o.consistency == "strong" else "periodic"
        warning = ""
        if not commitlog.startswith(wanted):
            warning = f"; NOT the {wanted} commit log {o.consistency} asks of the server"
        return (
            f"Cassandra {version.one()[0]} ({nodes} node{'s' * (nodes != 1)}, "
            f"RF {o.replication_factor}, {o.consistency}: reads and writes "
            f"{ConsistencyLevel.value_to_name[level]}, commit log {commitlog}{warning})"
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
        if self._ddl_cluster is not None:
            self._ddl_cluster.shutdown()
        self.cluster.shutdown()


def _number(pattern: str, text: str) -> int | None:
    found = re.search(pattern, text)
    return int(found.group(1)) if found else None


def summarise_trace(events: list[str]) -> str:
    """A query trace in one short line: the index scanned, the token ranges asked, the
    SSTable indexes searched, the rows the index post-filtered and the rows read (summed
    over replicas); for a key lookup, the partition read and the sstables merged."""
    steps: list[str] = []
    live = tombstones = filtered = partitions = sstables = 0
    single = indexed = False
    for e in events:
        if "Scanning with " in e:
            steps.append("SAI " + e.rsplit("Scanning with ", 1)[1].rstrip("."))
        elif (n := _number(r"Submitting range requests on (\d+) ranges", e)) is not None:
            steps.append(f"{n} ranges")
        elif e.startswith("Executing single-partition query"):
            single = True
        elif (n := _number(r"Read (\d+) live rows", e)) is not None:
            live += n
            tombstones += _number(r"and (\d+) tombstone", e) or 0
        elif (n := _number(r"post-filtered (\d+) rows", e)) is not None:
            indexed = True
            filtered += n
            partitions += _number(r"rows in (\d+) partitions", e) or 0
            sstables = max(sstables, _number(r"(\d+) SSTable ind", e) or 0)
        elif (n := _number(r"Merged data from memtables and (\d+) sstables", e)) is not None:
            sstables = max(sstables, n)
    if indexed:
        steps.append(f"{sstables} SSTable index{'es' * (sstables != 1)}")
        steps.append(f"{filtered} rows in {partitions} partitions post-filtered")
    elif single and not steps:
        steps += ["single-partition read", f"memtable + {sstables} sstable{'s' * (sstables != 1)}"]
    read = f"{live} row{'s' * (live != 1)} read"
    steps.append(f"{read}, {tombstones} tombstones" if tombstones else read)
    return "; ".join(steps)


class CassandraSensorConnection(DriverCallbacks):
    """A socialite task's view of the shared session (DriverCallbacks hands each answer
    from the driver's I/O thread over to the task's loop)."""

    __slots__ = ("execute", "st")

    def __init__(
        self, session: Session, statements: Statements, loop: asyncio.AbstractEventLoop
    ) -> None:
        super().__init__(loop)
        self.execute = session.execute_async
        self.st = statements

    def _call(self, statement: PreparedStatement, args: tuple[Any, ...]) -> asyncio.Future[Any]:
        return self._answer(self.execute(statement, args))

    async def insert(self, row: Reading) -> None:
        await self._call(self.st.insert, tuple(row))

    async def newest(self, m: int, s: int, bt: int) -> bool:
        return bool(await self._call(self.st.q1, (m, s, bt)))

    async def count_above(self, x: float, m_lo: int, m_hi: int) -> int:
        rows = await self._call(self.st.count_above, (x, m_lo, m_hi))
        if not rows:  # None: a retry policy ignored an error
            raise StoreError(f"count of machines [{m_lo}, {m_hi}) above {x}: no answer")
        return int(rows[0][0])

    async def close(self) -> None:
        pass
