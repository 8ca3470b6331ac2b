"""Cassandra (cassandra-driver): one cluster and session per binding, shared by its load
threads and event loops, a DDL session on the first contact point, and the bridge that
hands the driver's answers (on its own I/O thread) to asyncio futures.

Answers are plain tuples: the default named_tuple_factory builds a namedtuple class for
every answer (~90 us of client CPU per call, the largest part of a View Profile).
"""

import asyncio
from typing import Any, Generic, TypeVar

from cassandra import ConsistencyLevel, DriverException
from cassandra.cluster import (
    EXEC_PROFILE_DEFAULT,
    Cluster,
    ExecutionProfile,
    NoHostAvailable,
    Session,
)
from cassandra.policies import DCAwareRoundRobinPolicy, TokenAwarePolicy, WhiteListRoundRobinPolicy
from cassandra.query import tuple_factory

from bgbench.drivers.cassandra_options import CassandraOptions, Level
from bgbench.errors import StoreError

__all__ = [
    "DRIVER_ERRORS",
    "Cassandra",
    "CassandraOptions",
    "DriverCallbacks",
    "Level",
    "level",
]

DRIVER_ERRORS = (DriverException, NoHostAvailable)


def level(name: str) -> int:
    """The driver's consistency level of a name (ONE, QUORUM...)."""
    return int(getattr(ConsistencyLevel, name))


def level_name(value: int) -> str:
    return str(ConsistencyLevel.value_to_name[value])


class Cassandra:
    """A binding's cluster: `session` for its work (token-aware by default), `ddl` for
    schema changes. DDL from every load process goes to the first contact point only:
    Cassandra 5.0 can create one table twice with different ids when two coordinators race.
    """

    def __init__(self, options: CassandraOptions, read_level: str, policy: Any = None) -> None:
        self.options = options
        self.read_level = read_level
        self.cluster = self._cluster(policy or TokenAwarePolicy(DCAwareRoundRobinPolicy()))
        self._session: Session | None = None
        self._ddl_cluster: Cluster | None = None
        self._ddl: Session | None = None

    def _cluster(self, policy: Any) -> Cluster:
        o = self.options
        profile = ExecutionProfile(
            load_balancing_policy=policy,
            consistency_level=level(self.read_level),
            request_timeout=o.timeout_s,
            row_factory=tuple_factory,
        )
        return Cluster(
            o.hosts, port=o.port, protocol_version=5,
            execution_profiles={EXEC_PROFILE_DEFAULT: profile},
            connect_timeout=o.timeout_s, control_connection_timeout=o.timeout_s,
        )  # fmt: skip

    def where(self) -> str:
        return self.options.where()

    def _connect(self, cluster: Cluster) -> Session:
        try:
            return cluster.connect()
        except DRIVER_ERRORS as exc:
            raise StoreError(f"cannot reach Cassandra at {self.where()}: {exc}") from None

    @property
    def session(self) -> Session:
        if self._session is None:
            self._session = self._connect(self.cluster)
        return self._session

    @property
    def ddl(self) -> Session:
        if self._ddl is None:
            if self._ddl_cluster is None:
                first = WhiteListRoundRobinPolicy(self.options.hosts[:1])
                self._ddl_cluster = self._cluster(first)
            self._ddl = self._connect(self._ddl_cluster)
        return self._ddl

    def close_ddl(self) -> None:
        if self._ddl_cluster is not None:
            self._ddl_cluster.shutdown()
        self._ddl_cluster, self._ddl = None, None

    def ensure_keyspace(self, replication: dict[str, str]) -> None:
        """CREATE KEYSPACE IF NOT EXISTS with this replication; one that exists with
        another is refused (its data would be kept at another replication)."""
        ks = self.options.keyspace
        pairs = ", ".join(f"'{k}': '{v}'" for k, v in replication.items())
        self.ddl.execute(f"CREATE KEYSPACE IF NOT EXISTS {ks} WITH replication = {{{pairs}}}")
        row = self.ddl.execute(
            "SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = %s", (ks,)
        ).one()
        have = dict(row[0]) if row else {}
        if have != replication:
            raise StoreError(
                f"keyspace {ks} has replication {have}, the options ask for {replication}: "
                "drop it or name another keyspace"
            )

    def release_version(self) -> str:
        row = self.session.execute("SELECT release_version FROM system.local").one()
        return str(row[0]) if row else "?"

    def nodes(self) -> str:
        """`N node(s)`: the hosts the driver knows of."""
        n = len(self.cluster.metadata.all_hosts())
        return f"{n} node{'s' * (n != 1)}"

    def shutdown(self) -> None:
        self.close_ddl()
        self.cluster.shutdown()


def resolve(fut: "asyncio.Future[Any]", value: Any) -> None:
    if not fut.done():
        fut.set_result(value)


def reject(fut: "asyncio.Future[Any]", exc: BaseException) -> None:
    if not fut.done():
        fut.set_exception(exc)


class DriverCallbacks:
    """Base of a connection whose driver answers on its own I/O thread (cassandra-driver's
    ResponseFuture): `_answer(rf)` is an asyncio future on the connection's loop that the
    driver's callbacks complete. A future already done was cancelled at the end of a run:
    the late answer is dropped."""

    __slots__ = ("fail", "future", "ok")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.future = loop.create_future
        post = loop.call_soon_threadsafe

        # try/except rather than contextlib.suppress: these run once per answer.
        def ok(value: Any, fut: "asyncio.Future[Any]") -> None:
            try:  # noqa: SIM105
                post(resolve, fut, value)
            except RuntimeError:  # the loop closed while the call was out
                pass

        def fail(exc: BaseException, fut: "asyncio.Future[Any]") -> None:
            try:  # noqa: SIM105
                post(reject, fut, exc)
            except RuntimeError:
                pass

        self.ok, self.fail = ok, fail

    def _answer(self, rf: Any) -> "asyncio.Future[Any]":
        fut: asyncio.Future[Any] = self.future()
        rf.add_callback(self.ok, fut)
        rf.add_errback(self.fail, fut)
        return fut


Statements = TypeVar("Statements")


class SessionConnection(DriverCallbacks, Generic[Statements]):
    """A socialite task's view of the shared session: `execute` is its execute_async,
    `st` the workload's prepared statements (DriverCallbacks hands each answer from the
    driver's I/O thread over to the task's loop)."""

    __slots__ = ("execute", "st")

    def __init__(
        self, session: Session, statements: Statements, loop: asyncio.AbstractEventLoop
    ) -> None:
        super().__init__(loop)
        self.execute = session.execute_async
        self.st = statements
