"""BG's Cassandra socialites through acsylla (`store.options.driver = "acsylla"`): the
same statements, answers and errors-as-failures as CassandraAsyncConnection, one acsylla
session per event loop (drivers/cassandra_acsylla.py). The actions are
CassandraAsyncConnection's; only how a statement runs differs."""

from typing import Any

from bgbench.drivers.cassandra_acsylla import LoopSessions, consistency, logged_batch
from bgbench.errors import StoreError
from bgbench.workloads.bg.stores.cassandra_actions import CQL, CassandraAsyncConnection, Changes
from bgbench.workloads.bg.stores.options import CassandraOptions


class AcsyllaStatements:
    """The socialites' statements of CQL, prepared on one session: (prepared, level)."""

    def __init__(self, options: CassandraOptions) -> None:
        self.options = options
        self.write_level = consistency(options.write_consistency)
        self.read_level = consistency(options.read_consistency)
        self.page_size: int | None = None  # rows per page of a read: the driver's default

    async def prepare(self, session: Any) -> "AcsyllaStatements":
        for name, (cql, writes) in CQL.items():
            prepared = await session.create_prepared(cql.format(ks=self.options.keyspace))
            setattr(self, name, (prepared, self.write_level if writes else self.read_level))
        return self


def sessions(options: CassandraOptions) -> LoopSessions[AcsyllaStatements]:
    return LoopSessions(options, lambda session: AcsyllaStatements(options).prepare(session))


class CassandraAcsyllaConnection(CassandraAsyncConnection):
    """A socialite task's view of its loop's acsylla session."""

    __slots__ = ("execute_batch", "prepared")

    def __init__(self, session: Any, statements: AcsyllaStatements) -> None:
        self.execute = session.execute
        self.execute_batch = session.execute_batch
        self.st = statements  # type: ignore[assignment]
        self.prepared = statements  # the same, as its own type

    async def _rows(self, statement: Any, args: tuple[Any, ...]) -> list[Any]:
        prepared, level = statement
        bound = prepared.bind(args, page_size=self.prepared.page_size, consistency=level)
        result = await self.execute(bound)
        rows = [row.as_tuple() for row in result]
        while result.has_more_pages():
            bound.set_page_state(result.page_state())
            result = await self.execute(bound)
            rows += [row.as_tuple() for row in result]
        return rows

    async def _one(self, statement: Any, args: tuple[Any, ...], what: str) -> tuple[Any, ...]:
        prepared, level = statement
        result = await self.execute(prepared.bind(args, consistency=level))
        row = result.first()
        if row is None:
            raise StoreError(f"{what}: no matching row")
        return row.as_tuple()  # type: ignore[no-any-return]

    async def _run(self, statement: Any, args: tuple[Any, ...]) -> None:
        prepared, level = statement
        await self.execute(prepared.bind(args, consistency=level))

    async def _batch(self, changes: Changes) -> None:
        batch = logged_batch(self.st.write_level)
        for (prepared, _level), args in changes:
            batch.add_statement(prepared.bind(args))
        await self.execute_batch(batch)
