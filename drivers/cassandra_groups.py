"""Entity groups on Cassandra (drivers/groups.py): one partition per group.

    {keyspace}.{table} ((g), k)   value blob; version bigint STATIC

A commit is one conditional batch on the group's partition, a lightweight transaction
(Paxos): `UPDATE ... SET version = v + 1 WHERE g = ? IF version = v` with the entries'
INSERTs and DELETEs, which apply with it or not at all. Version 0 (no group yet) is the
same batch conditioned `IF version = null`. A read is one unpaged SELECT of the
partition at SERIAL, so it sees every commit Paxos accepted (an in-flight one is
completed first) and reconciles the partition once: the version with its entries.

A commit that times out (WriteTimeout, type CAS) may still apply: it is raised, an
unknown outcome, never taken for a conflict. Socialites are tasks: calls go out through
execute_async and their answers come back through the connection's loop
(DriverCallbacks). Schema and loading use the blocking session.
"""

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from cassandra import ConsistencyLevel
from cassandra.concurrent import execute_concurrent_with_args
from cassandra.query import BatchStatement, BatchType, PreparedStatement

from bgbench.drivers.cassandra import DRIVER_ERRORS, Cassandra, DriverCallbacks
from bgbench.drivers.cassandra_options import CassandraOptions
from bgbench.drivers.groups import GroupData
from bgbench.errors import StoreError

__all__ = ["CassandraGroupAdmin", "CassandraGroupKV", "CassandraGroups", "group_data"]

COMMIT_LEVEL = "QUORUM"
MAX_ROWS = 1_000_000


def group_data(rows: Sequence[Any]) -> GroupData:
    """A partition's rows (version, k, value), checked (a server's answer is untrusted);
    a partition with only its static row has one row whose k is null."""
    if not rows:
        return GroupData(0, {})
    if len(rows) > MAX_ROWS:
        raise StoreError(f"a Cassandra group of {len(rows)} rows")
    version = rows[0][0]
    if version is None:  # entries without a version: written outside bgbench
        raise StoreError("a Cassandra group without its version")
    entries = {k: bytes(value or b"") for _, k, value in rows if k is not None}
    return GroupData(int(version), entries)


class Statements:
    """The prepared statements of one table of groups."""

    def __init__(self, cassandra: Cassandra, table: str) -> None:
        prepare = cassandra.session.prepare
        self.read: PreparedStatement = prepare(f"SELECT version, k, value FROM {table} WHERE g = ?")
        self.read.consistency_level = ConsistencyLevel.SERIAL
        self.read.fetch_size = None  # one page: one reconciliation of the partition
        self.advance = prepare(f"UPDATE {table} SET version = ? WHERE g = ? IF version = ?")
        self.create = prepare(f"UPDATE {table} SET version = 1 WHERE g = ? IF version = null")
        self.put = prepare(f"INSERT INTO {table} (g, k, value) VALUES (?, ?, ?)")
        self.remove = prepare(f"DELETE FROM {table} WHERE g = ? AND k = ?")

    def commit(
        self, group: str, version: int, puts: Mapping[str, bytes], deletes: Sequence[str]
    ) -> BatchStatement:
        batch = BatchStatement(
            batch_type=BatchType.UNLOGGED,  # one partition: no batch log needed
            consistency_level=getattr(ConsistencyLevel, COMMIT_LEVEL),
            serial_consistency_level=ConsistencyLevel.SERIAL,
        )
        if version == 0:
            batch.add(self.create, (group,))
        else:
            batch.add(self.advance, (version + 1, group, version))
        for key in deletes:
            if key not in puts:
                batch.add(self.remove, (group, key))
        for key, value in puts.items():
            batch.add(self.put, (group, key, value))
        return batch


def applied(rows: Sequence[Any]) -> bool:
    """A lightweight transaction's answer: its first column is [applied]."""
    return bool(rows and rows[0][0] is True)


class CassandraGroupKV(DriverCallbacks):
    """One socialite task's handle (AsyncGroupKV) on one table of groups."""

    __slots__ = ("execute", "st")

    def __init__(self, groups: "CassandraGroups", loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(loop)
        self.execute = groups.cassandra.session.execute_async
        self.st = groups.statements()

    async def read(self, group: str) -> GroupData:
        rows = await self._answer(self.execute(self.st.read.bind((group,))))
        return group_data(rows)

    async def commit(
        self, group: str, version: int, puts: Mapping[str, bytes], deletes: Sequence[str] = ()
    ) -> bool:
        rows = await self._answer(self.execute(self.st.commit(group, version, puts, deletes)))
        return applied(rows)

    async def close(self) -> None:
        """Nothing of its own: the session is the binding's."""


class CassandraGroupAdmin:
    """Blocking schema and loading (GroupAdmin) of one table of groups."""

    def __init__(self, groups: "CassandraGroups") -> None:
        self.groups = groups
        self.cassandra = groups.cassandra

    def create_table(self) -> None:
        try:
            self.cassandra.ensure_keyspace(self.groups.options.replication())
            self.cassandra.ddl.execute(
                f"CREATE TABLE IF NOT EXISTS {self.groups.table} (g text, k text, value blob, "
                "version bigint STATIC, PRIMARY KEY ((g), k))"
            )
            self.cassandra.ddl.cluster.control_connection.wait_for_schema_agreement()
        except DRIVER_ERRORS as exc:
            raise StoreError(f"creating {self.groups.table}: {exc}") from None

    def _each(self, statement: str, args: Iterable[tuple[Any, ...]]) -> None:
        session = self.cassandra.session
        prepared = session.prepare(statement)
        concurrency = self.groups.options.load_concurrency
        for ok, result in execute_concurrent_with_args(
            session, prepared, list(args), concurrency=concurrency, raise_on_first_error=False
        ):
            if not ok:
                raise StoreError(f"loading Cassandra groups: {result}")

    def replace(self, groups: Iterable[tuple[str, Mapping[str, bytes]]]) -> None:
        """Each partition deleted, then written afresh: separate statements, so the
        driver's increasing client timestamps put the new rows after the deletion."""
        table = self.groups.table
        try:
            pending = list(groups)
            self._each(f"DELETE FROM {table} WHERE g = ?", ((g,) for g, _ in pending))
            self._each(f"UPDATE {table} SET version = 1 WHERE g = ?", ((g,) for g, _ in pending))
            self._each(
                f"INSERT INTO {table} (g, k, value) VALUES (?, ?, ?)",
                ((g, k, v) for g, entries in pending for k, v in entries.items()),
            )
        except DRIVER_ERRORS as exc:
            raise StoreError(f"loading Cassandra groups: {exc}") from None

    def delete(self, groups: Iterable[str]) -> None:
        try:
            self._each(f"DELETE FROM {self.groups.table} WHERE g = ?", ((g,) for g in groups))
        except DRIVER_ERRORS as exc:
            raise StoreError(f"deleting Cassandra groups: {exc}") from None

    def read_many(self, groups: Sequence[str]) -> dict[str, GroupData]:
        st = self.groups.statements()
        session = self.cassandra.session
        try:
            answers = execute_concurrent_with_args(
                session, st.read, [(g,) for g in groups],
                concurrency=self.groups.options.load_concurrency, raise_on_first_error=True,
            )  # fmt: skip
            return {g: group_data(list(rows)) for g, (_, rows) in zip(groups, answers, strict=True)}
        except DRIVER_ERRORS as exc:
            raise StoreError(f"reading Cassandra groups: {exc}") from None

    def describe(self) -> str:
        return self.groups.describe()

    def close(self) -> None:
        self.cassandra.close_ddl()


class CassandraGroups:
    """A binding's table of groups on Cassandra: one cluster and session, shared by the
    load process's loops and threads."""

    concurrency = "asyncio"

    def __init__(self, options: CassandraOptions, table: str) -> None:
        self.options = options
        self.table = f"{options.keyspace}.{table}"
        self.cassandra = Cassandra(options, COMMIT_LEVEL)
        self._statements: Statements | None = None

    def statements(self) -> Statements:
        if self._statements is None:
            self._statements = Statements(self.cassandra, self.table)
        return self._statements

    def admin(self) -> CassandraGroupAdmin:
        return CassandraGroupAdmin(self)

    async def connect_async(self) -> CassandraGroupKV:
        return CassandraGroupKV(self, asyncio.get_running_loop())

    async def aclose(self) -> None:
        """Nothing per loop: the session serves every loop (close() shuts it down)."""

    def close(self) -> None:
        self.cassandra.shutdown()

    def describe(self) -> str:
        return f"Cassandra at {self.cassandra.where()}"
