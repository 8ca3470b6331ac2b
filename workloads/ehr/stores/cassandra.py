"""Cassandra (cassandra-driver) for the EHR workload: a patient's results in its partition,
clustered newest first, so "the 5 most recent" is the head of one partition.

    patients ((id))                          family, given, address, telephone, birth_date
    results  ((patient), effective_ms, id)   code, value, unit
             WITH CLUSTERING ORDER BY (effective_ms DESC, id DESC)

A READ must give the rows and the count of one read (store.py). Two statements, a LIMIT k
slice and a count(*), are two reads in Cassandra, each reconciling the replicas it
reaches at its own moment: no snapshot joins them. So a READ is one statement, one read
at the read consistency level: every row of the patient's partition, unpaged (one
request, one reconciliation), newest first; the binding keeps the first k and counts the
rest. It costs reading the whole partition (0-20 rows when loaded, plus what runs
inserted) rather than k rows: the price of a count that vouches for the rows.

A WRITE is one INSERT at the write consistency level. Cassandra's INSERT is an upsert:
refusing a taken key would take a lightweight transaction (Paxos), another operation with
another consistency than the one rated, so this binding relies on the workload's keys
never colliding (they cannot: store.py) and never checks.

Consistency (`consistency`, the paper's Tables 1 and 2; each level may be set alone):

    strong    writes EACH_QUORUM, reads LOCAL_QUORUM (Table 1)
    eventual  writes ONE, reads ONE (Table 2)

EACH_QUORUM waits for a quorum in every data centre of the keyspace's replication:
`datacenters` ({name: replicas}) makes it NetworkTopologyStrategy (the paper's three data
centres), `replication_factor` alone SimpleStrategy, under which Cassandra takes
EACH_QUORUM as QUORUM.

Coordinators (`coordinators`): `local_dc` (the default) sends every request, token-aware,
to a node of the first contact point's data centre, as the paper's clients were spread
over "the three nodes in one of the sub-clusters"; `every_dc` spreads them round robin
over every node of every data centre, so that a ONE read may be coordinated by a replica
a ONE write has not reached yet (with one replica per data centre, `local_dc` reads and
writes the same replica, and ONE/ONE cannot be seen stale).

Socialites are tasks on the load process's event loop: each call goes out through the
driver's execute_async and its answer comes back from the driver's I/O thread through
call_soon_threadsafe (as BG's binding, whose notes measure the cost). Schema, loading
and read-back use the blocking session.
"""

import asyncio
import time
from collections.abc import Callable, Iterable
from typing import Any, ClassVar

from cassandra.cluster import Session
from cassandra.concurrent import execute_concurrent
from cassandra.policies import RoundRobinPolicy
from cassandra.query import BatchStatement, BatchType, PreparedStatement
from pydantic import BaseModel

from bgbench.drivers.cassandra import DRIVER_ERRORS, Cassandra, SessionConnection, level
from bgbench.errors import StoreError
from bgbench.workloads.ehr.config import EHRDatabaseConfig
from bgbench.workloads.ehr.store import Concurrency, FragmentRows, LabResult
from bgbench.workloads.ehr.stores.options import CassandraEHROptions
from bgbench.workloads.loading import beating

Call = tuple[Any, tuple[Any, ...]]  # a statement and its arguments, for execute_concurrent
LOAD_BATCH = 64  # statements per loading batch: below the server's batch size limits
LOAD_ATTEMPTS = 4
READ_BACK_CHUNK = 1000  # patients counted per execute_concurrent

TABLES = (
    """CREATE TABLE IF NOT EXISTS {ks}.patients (id bigint PRIMARY KEY, family text,
        given text, address text, telephone text, birth_date date)""",
    """CREATE TABLE IF NOT EXISTS {ks}.results (patient bigint, effective_ms bigint,
        id bigint, code text, value double, unit text,
        PRIMARY KEY ((patient), effective_ms, id))
        WITH CLUSTERING ORDER BY (effective_ms DESC, id DESC)""",
)


class Statements:
    """Every statement, prepared once per load process, with its consistency level."""

    def __init__(self, session: Session, options: CassandraEHROptions) -> None:
        ks = options.keyspace
        read_name, write_name = options.levels()
        read, self.write_level = level(read_name), level(write_name)

        def prep(cql: str, level: int) -> PreparedStatement:
            statement = session.prepare(cql.format(ks=ks))
            statement.consistency_level = level
            return statement

        # The whole partition in one response (no paging): one read, one reconciliation.
        self.partition = prep(
            "SELECT id, code, value, unit, effective_ms FROM {ks}.results WHERE patient = ?", read
        )
        self.partition.fetch_size = None
        self.count = prep("SELECT count(*) FROM {ks}.results WHERE patient = ?", read)
        self.insert = prep(
            "INSERT INTO {ks}.results (patient, effective_ms, id, code, value, unit) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            self.write_level,
        )
        self.put_patient = prep(
            "INSERT INTO {ks}.patients (id, family, given, address, telephone, birth_date) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            self.write_level,
        )
        self.wipe = prep(
            "DELETE FROM {ks}.results USING TIMESTAMP ? WHERE patient = ?", self.write_level
        )


def _results_of(
    patient: int, rows: list[tuple[Any, ...]] | None, k: int
) -> tuple[list[LabResult], int]:
    if not rows:  # None: a retry policy ignored an error
        return [], 0
    return [
        LabResult(rid, patient, code, value, unit, when)
        for rid, code, value, unit, when in rows[:k]
    ], len(rows)


class CassandraEHRBinding:
    name: ClassVar[str] = "cassandra"
    concurrency: ClassVar[Concurrency] = "asyncio"
    suspends: ClassVar[bool] = True
    embedded: ClassVar[bool] = False
    can_read_back: ClassVar[bool] = True
    Options: ClassVar[type[BaseModel]] = CassandraEHROptions
    file_options: ClassVar[tuple[str, ...]] = ()

    def __init__(self, options: CassandraEHROptions) -> None:
        self.options = options
        # local_dc: the first contact point's data centre coordinates (the paper's clients)
        policy = None if options.coordinators == "local_dc" else RoundRobinPolicy()
        self.cassandra = Cassandra(options, options.levels()[0], policy)
        self.cluster = self.cassandra.cluster
        self.statements: Statements | None = None

    def _where(self) -> str:
        return self.cassandra.where()

    @property
    def session(self) -> Session:
        return self.cassandra.session

    # -- schema and load -------------------------------------------------------------------
    def create_schema(self, db: EHRDatabaseConfig) -> None:
        """Patients beyond `db.patients` left by a larger database stay: a result's key is
        unique within its patient's partition only, and no READ or WRITE reaches them."""
        ks = self.options.keyspace
        try:
            self.cassandra.ensure_keyspace(self.options.replication())
            for table in TABLES:
                self.cassandra.ddl.execute(table.format(ks=ks))
        except DRIVER_ERRORS as exc:
            raise StoreError(
                f"cannot create the EHR schema in Cassandra at {self._where()}: {exc}"
            ) from None
        finally:
            self.cassandra.close_ddl()
        self.use_schema(db)

    def use_schema(self, db: EHRDatabaseConfig) -> None:
        try:
            self.statements = Statements(self.session, self.options)
        except DRIVER_ERRORS as exc:
            raise StoreError(
                f"cannot prepare the EHR statements in Cassandra at {self._where()}: {exc}"
            ) from None

    def _ready(self) -> Statements:
        if self.statements is None:
            raise StoreError("create_schema or use_schema must run before connect")
        return self.statements

    def load_fragment(self, fragment: FragmentRows, progress: Callable[[], None]) -> None:
        """First every patient's partition deleted, stamped before any of its new rows, and
        its patient row written; then the results, one unlogged batch per partition (a
        single mutation on its replicas). Each statement is idempotent: failed ones go
        again."""
        st = self._ready()
        now = int(time.time() * 1e6)
        for patients in fragment.patient_batches():
            progress()
            statements: list[Call] = []
            for p in patients:
                statements.append((st.wipe, (now - 1, p.id)))
                statements.append((st.put_patient, tuple(p)))
            self._execute(statements, progress)
        for results in fragment.result_batches():
            progress()
            self._execute(self._partition_batches(st, results), progress)

    def _partition_batches(self, st: Statements, rows: list[LabResult]) -> list[Call]:
        """The rows (a patient's are consecutive) as unlogged batches of one partition each."""
        out: list[Call] = []
        batch: BatchStatement | None = None
        patient, size = None, 0
        for r in rows:
            if batch is None or r.patient != patient or size == LOAD_BATCH:
                batch = BatchStatement(BatchType.UNLOGGED, consistency_level=st.write_level)
                out.append((batch, ()))
                patient, size = r.patient, 0
            batch.add(st.insert, (r.patient, r.effective_ms, r.id, r.code, r.value, r.unit))
            size += 1
        return out

    def _execute(self, statements: list[Call], progress: Callable[[], None]) -> None:
        concurrency = self.options.load_concurrency
        errors: list[BaseException] = []
        for _attempt in range(LOAD_ATTEMPTS):
            # The driver takes the statements one by one as earlier ones are answered: a
            # beat each, so a cold or busy server taking a batch's thousands is seen alive.
            results = execute_concurrent(
                self.session,
                beating(statements, progress),
                concurrency=concurrency,
                raise_on_first_error=False,
            )
            # A busy cluster times writes out; the failed ones go again, fewer at a time.
            errors = [r.result_or_exc for r in results if not r.success]
            statements = [s for s, r in zip(statements, results, strict=True) if not r.success]
            if not statements:
                return
            concurrency = max(1, concurrency // 4)
        raise StoreError(
            f"loading into Cassandra: {len(errors)} writes still failing after "
            f"{LOAD_ATTEMPTS} attempts: {errors[0]}"
        )

    def read_back(self, fragment: FragmentRows, progress: Callable[[], None]) -> dict[int, int]:
        st = self._ready()
        ids = fragment.patients.tolist()
        counts: dict[int, int] = {}
        for lo in range(0, len(ids), READ_BACK_CHUNK):
            progress()
            chunk = ids[lo : lo + READ_BACK_CHUNK]
            results = execute_concurrent(
                self.session,
                beating([(st.count, (p,)) for p in chunk], progress),
                concurrency=self.options.load_concurrency,
                raise_on_first_error=False,
            )
            for p, r in zip(chunk, results, strict=True):
                if not r.success:
                    raise StoreError(f"reading back patient {p}'s results: {r.result_or_exc}")
                n = r.result_or_exc.one()[0]
                if n:
                    counts[p] = int(n)
        return counts

    # -- running ---------------------------------------------------------------------------
    def connect(self) -> "CassandraEHRConnection":
        raise NotImplementedError("the Cassandra binding runs socialites as asyncio tasks")

    async def connect_async(self) -> "CassandraEHRConnection":
        # The session is thread-safe and shared by every loop; only the asyncio futures a
        # connection makes belong to its loop.
        statements = self._ready()  # the session exists by now: connecting never blocks here
        return CassandraEHRConnection(self.session, statements, asyncio.get_running_loop())

    async def aclose(self) -> None:
        pass  # nothing is bound to a loop but the futures of calls, done by now

    def describe(self) -> str:
        version, nodes = self.cassandra.release_version(), self.cassandra.nodes()
        o = self.options
        read, write = o.levels()
        if o.datacenters is None:
            replicas = f"RF {o.replication_factor}"
        else:
            replicas = "RF " + ", ".join(f"{dc} {n}" for dc, n in o.datacenters.items())
        spread = ", every node coordinates" * (o.coordinators == "every_dc")
        return f"Cassandra {version} ({nodes}, {replicas}, reads {read}, writes {write}{spread})"

    def counters(self) -> dict[str, int]:
        return {}

    def close(self) -> None:
        self.cassandra.shutdown()


class CassandraEHRConnection(SessionConnection[Statements]):
    """A socialite task's view of the shared session."""

    __slots__ = ()

    def _call(self, statement: PreparedStatement, args: Iterable[Any]) -> asyncio.Future[Any]:
        return self._answer(self.execute(statement, args))

    async def recent_results(self, patient: int, k: int) -> tuple[list[LabResult], int]:
        return _results_of(patient, await self._call(self.st.partition, (patient,)), k)

    async def insert_result(self, row: LabResult) -> None:
        await self._call(
            self.st.insert, (row.patient, row.effective_ms, row.id, row.code, row.value, row.unit)
        )

    async def close(self) -> None:
        pass
