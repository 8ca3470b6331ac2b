"""The sensor-log Cassandra binding's statements, a socialite's connection and the query
trace summary of its plans (cassandra.py is the binding)."""

import asyncio
import re
from functools import cached_property
from typing import Any

from cassandra.cluster import Session
from cassandra.query import PreparedStatement

from bgbench.drivers.cassandra import SessionConnection, level
from bgbench.errors import StoreError
from bgbench.workloads.sensorlog.store import Reading
from bgbench.workloads.sensorlog.stores.options import CassandraSensorOptions

LEVEL_NAMES = {"strong": "QUORUM", "weak": "ONE"}
LEVELS = {name: level(value) for name, value in LEVEL_NAMES.items()}
PLAN_ROWS = 100
Call = tuple[Any, tuple[Any, ...]]  # a statement and its arguments, for execute_concurrent

TABLE = (
    "CREATE TABLE IF NOT EXISTS {ks}.measures (m int, s int, bt bigint, et bigint, mv double, "
    "PRIMARY KEY ((m, s), bt))"
)
INDEX = "CREATE INDEX IF NOT EXISTS measures_mv ON {ks}.measures (mv) USING 'sai'"
INDEX_NAME = "measures_mv"
COLUMNS = "m, s, bt, et, mv"


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


class CassandraSensorConnection(SessionConnection[Statements]):
    """A socialite task's view of the shared session."""

    __slots__ = ()

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
