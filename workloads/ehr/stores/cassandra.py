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
from typing import Annotated, Any, ClassVar, Literal

from cassandra import ConsistencyLevel, DriverException
from cassandra.cluster import (
    EXEC_PROFILE_DEFAULT,
    Cluster,
    ExecutionProfile,
    NoHostAvailable,
    Session,
)
from cassandra.concurrent import execute_concurrent
from cassandra.policies import (
    DCAwareRoundRobinPolicy,
    RoundRobinPolicy,
    TokenAwarePolicy,
    WhiteListRoundRobinPolicy,
)
from cassandra.query import BatchStatement, BatchType, PreparedStatement, tuple_factory
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from bgbench.errors import StoreError
from bgbench.workloads.ehr.config import EHRDatabaseConfig
from bgbench.workloads.ehr.store import Concurrency, FragmentRows, LabResult
from bgbench.workloads.futures import DriverCallbacks
from bgbench.workloads.loading import beating

Level = Literal["ONE", "TWO", "THREE", "QUORUM", "LOCAL_QUORUM", "EACH_QUORUM", "ALL", "LOCAL_ONE"]
PRESETS: dict[str, tuple[Level, Level]] = {  # (read, write)
    "strong": ("LOCAL_QUORUM", "EACH_QUORUM"),
    "eventual": ("ONE", "ONE"),
}
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


class CassandraEHROptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    hosts: list[str] = Field(["127.0.0.1"], description="contact points, or one comma list")
    port: Annotated[int, Field(ge=1, le=65535)] = 9042
    keyspace: str = Field("bgbench_ehr", pattern=r"^[A-Za-z][A-Za-z0-9_]{0,47}$")
    replication_factor: Annotated[int, Field(ge=1)] = 1
    datacenters: dict[str, Annotated[int, Field(ge=1)]] | None = Field(
        None, description="replicas per data centre (NetworkTopologyStrategy), as a map or "
        "dc1:1,dc2:1; replaces replication_factor",
    )  # fmt: skip
    consistency: Literal["strong", "eventual"] = Field(
        "strong", description="strong (EACH_QUORUM / LOCAL_QUORUM) or eventual (ONE / ONE)"
    )
    coordinators: Literal["local_dc", "every_dc"] = Field(
        "local_dc", description="local_dc: nodes of the first contact point's data centre "
        "coordinate (the paper's clients); every_dc: every node, round robin",
    )  # fmt: skip
    read_consistency: Level | None = Field(None, description="default: the preset's")
    write_consistency: Level | None = Field(None, description="default: the preset's")
    load_concurrency: Annotated[int, Field(ge=1, le=2048)] = 128
    timeout_s: Annotated[float, Field(gt=0)] = 10.0

    @field_validator("hosts", mode="before")
    @classmethod
    def _split(cls, value: object) -> object:
        return (
            [h.strip() for h in value.split(",") if h.strip()] if isinstance(value, str) else value
        )

    @field_validator("keyspace")
    @classmethod
    def _fold(cls, value: str) -> str:
        return value.lower()  # as CQL folds an unquoted name

    @field_validator("datacenters", mode="before")
    @classmethod
    def _pairs(cls, value: object) -> object:
        """Also "dc1:1,dc2:1,dc3:1", as one -p value."""
        if not isinstance(value, str):
            return value
        pairs = [p.partition(":") for p in value.split(",") if p.strip()]
        if any(not sep or not n.strip().isdigit() for _, sep, n in pairs):
            raise ValueError(f"{value!r}: write replicas per data centre as dc1:1,dc2:1")
        return {dc.strip(): int(n) for dc, _, n in pairs}

    @field_validator("datacenters")
    @classmethod
    def _names(cls, value: dict[str, int] | None) -> dict[str, int] | None:
        if value is not None:
            if not value:
                raise ValueError("name at least one data centre, or leave datacenters out")
            for name in value:
                if not name.replace("_", "").replace("-", "").isalnum():
                    raise ValueError(f"data centre name {name!r}: letters, digits, - and _ only")
        return value

    @model_validator(mode="after")
    def _levels(self) -> "CassandraEHROptions":
        if self.levels()[0] == "EACH_QUORUM":
            raise ValueError("EACH_QUORUM is for writes only: use QUORUM or LOCAL_QUORUM for reads")
        return self

    def levels(self) -> tuple[Level, Level]:
        """The read and write consistency levels: the preset's, each overridden when set."""
        read, write = PRESETS[self.consistency]
        return self.read_consistency or read, self.write_consistency or write

    def replication(self) -> dict[str, str]:
        """The keyspace's replication map, as system_schema.keyspaces holds it."""
        if self.datacenters is None:
            return {
                "class": "org.apache.cassandra.locator.SimpleStrategy",
                "replication_factor": str(self.replication_factor),
            }
        return {
            "class": "org.apache.cassandra.locator.NetworkTopologyStrategy",
            **{dc: str(n) for dc, n in self.datacenters.items()},
        }


def _level(name: str) -> int:
    return int(getattr(ConsistencyLevel, name))


class Statements:
    """Every statement, prepared once per load process, with its consistency level."""

    def __init__(self, session: Session, options: CassandraEHROptions) -> None:
        ks = options.keyspace
        read_name, write_name = options.levels()
        read, self.write_level = _level(read_name), _level(write_name)

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
        self.cluster = self._cluster(
            TokenAwarePolicy(DCAwareRoundRobinPolicy())
            if options.coordinators == "local_dc"
            else RoundRobinPolicy()
        )
        self._session: Session | None = None
        self.statements: Statements | None = None

    def _cluster(self, policy: object) -> Cluster:
        # Plain tuples: the default named_tuple_factory builds a class for every answer.
        profile = ExecutionProfile(
            load_balancing_policy=policy,
            consistency_level=_level(self.options.levels()[0]),
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

    # -- schema and load -------------------------------------------------------------------
    def create_schema(self, db: EHRDatabaseConfig) -> None:
        """Patients beyond `db.patients` left by a larger database stay: a result's key is
        unique within its patient's partition only, and no READ or WRITE reaches them."""
        # DDL goes to the first contact point only: Cassandra 5.0 can create one table twice
        # with different ids when two coordinators race.
        ddl = self._cluster(WhiteListRoundRobinPolicy(self.options.hosts[:1]))
        ks, want = self.options.keyspace, self.options.replication()
        replication = ", ".join(f"'{k}': '{v}'" for k, v in want.items())
        try:
            session = ddl.connect()
            session.execute(
                f"CREATE KEYSPACE IF NOT EXISTS {ks} WITH replication = {{{replication}}}"
            )
            for table in TABLES:
                session.execute(table.format(ks=ks))
            have = dict(
                session.execute(
                    "SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = %s",
                    (ks,),
                ).one()[0]
            )
        except (DriverException, NoHostAvailable) as exc:
            raise StoreError(
                f"cannot create the EHR schema in Cassandra at {self._where()}: {exc}"
            ) from None
        finally:
            ddl.shutdown()
        if have != want:
            raise StoreError(
                f"keyspace {ks} has replication {have}, the options ask for {want}: "
                "drop it or name another keyspace"
            )
        self.use_schema(db)

    def use_schema(self, db: EHRDatabaseConfig) -> None:
        try:
            self.statements = Statements(self.session, self.options)
        except (DriverException, NoHostAvailable) as exc:
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
        version = self.session.execute("SELECT release_version FROM system.local").one()[0]
        nodes = len(self.cluster.metadata.all_hosts())
        o = self.options
        read, write = o.levels()
        if o.datacenters is None:
            replicas = f"RF {o.replication_factor}"
        else:
            replicas = "RF " + ", ".join(f"{dc} {n}" for dc, n in o.datacenters.items())
        spread = ", every node coordinates" * (o.coordinators == "every_dc")
        return (
            f"Cassandra {version} ({nodes} node{'s' * (nodes != 1)}, {replicas}, "
            f"reads {read}, writes {write}{spread})"
        )

    def counters(self) -> dict[str, int]:
        return {}

    def close(self) -> None:
        self.cluster.shutdown()


class CassandraEHRConnection(DriverCallbacks):
    """A socialite task's view of the shared session (DriverCallbacks hands each answer
    from the driver's I/O thread over to the task's loop)."""

    __slots__ = ("execute", "st")

    def __init__(
        self, session: Session, statements: Statements, loop: asyncio.AbstractEventLoop
    ) -> None:
        super().__init__(loop)
        self.execute = session.execute_async
        self.st = statements

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
