"""Cassandra (cassandra-driver): a query-first design, one partition read per read action.

    member    ((mid), kind, other)  static attrs, pic, tpic, resources;
                                    rows: a confirmed friend (kind 0) or an inviter (kind 1),
                                    with that member's attributes and thumbnail copied in
    wall      ((wall), rid DESC)    creator
    comment   ((rid), mid)          commenter, content

View Profile reads the member's partition grouped by kind (counts and statics in one
read); List Friends and View Friend Requests read one clustering slice of it. BG never
changes a member's attributes, so copying them into friendship rows is safe. A write
reads the row it changes first and fails when it is absent (BG's writes must match a
row, as SQL's rowcount tells the other bindings); friendship changes spanning two
members go in one logged batch. Consistency levels of reads and writes and the
keyspace's replication factor are settings: they are what a rating of Cassandra is about.

Socialites run as tasks on the load process's event loop by default (`concurrency`),
through acsylla (the C++ driver, one session per loop: cassandra_acsylla.py) unless
`driver = "cassandra-driver"`, where each call goes out through execute_async and its
answer comes back from the driver's I/O thread through call_soon_threadsafe; `"threads"`
keeps one blocking thread per socialite on cassandra-driver. All send the same prepared
statements and give the same answers and the same kinds of errors
(drivers/cassandra_errors.py). acsylla is the default because it costs a quarter to a
tenth of cassandra-driver's client CPU per call and has no Python I/O thread contending
for the interpreter with the loop (benchmarks/nosql_drivers.py).
The statements and the actions on them are in cassandra_actions.py.
"""

import asyncio
import time
from typing import Any, ClassVar

from cassandra.cluster import Session
from cassandra.concurrent import execute_concurrent
from cassandra.query import BatchStatement, BatchType
from pydantic import BaseModel

from bgbench.drivers.cassandra import DRIVER_ERRORS, Cassandra
from bgbench.errors import StoreError
from bgbench.workloads.bg.config import BGDatabaseConfig
from bgbench.workloads.bg.generator import CONFIRMED, PENDING, Fragment
from bgbench.workloads.bg.store import FragmentContents
from bgbench.workloads.bg.stores.cassandra_actions import (
    FRIEND,
    INVITER,
    CassandraAsyncConnection,
    CassandraConnection,
    Statements,
)
from bgbench.workloads.bg.stores.options import CassandraOptions
from bgbench.workloads.loading import beating

LOAD_BATCH = 64  # statements per loading batch: below the server's batch size limits
LOAD_ATTEMPTS = 4


class CassandraBinding:
    name: ClassVar[str] = "cassandra"
    embedded: ClassVar[bool] = False
    full_answers: ClassVar[bool] = True
    can_read_back: ClassVar[bool] = True
    Options: ClassVar[type[BaseModel]] = CassandraOptions
    suspends: ClassVar[bool] = True
    concurrency: str = "asyncio"  # the default; per instance from the option

    def __init__(self, options: CassandraOptions) -> None:
        self.options = options
        self.concurrency = options.concurrency
        self.cassandra = Cassandra(options, options.read_consistency)
        self.cluster = self.cassandra.cluster
        self.statements: Statements | None = None
        self.acsylla: Any = None  # its LoopSessions when the socialites use acsylla

    @property
    def session(self) -> Session:
        return self.cassandra.session

    def create_schema(self, db: BGDatabaseConfig) -> None:
        ks = self.options.keyspace
        try:
            self.cassandra.ensure_keyspace(self.options.replication())
            for table in TABLES:
                self.cassandra.ddl.execute(table.format(ks=ks))
        except DRIVER_ERRORS as exc:
            raise StoreError(
                f"cannot create the BG schema in Cassandra at {self.cassandra.where()}: {exc}"
            ) from None
        finally:
            self.cassandra.close_ddl()
        self.statements = Statements(self.session, self.options)

    def use_schema(self, db: BGDatabaseConfig) -> None:
        try:
            self.statements = Statements(self.session, self.options)
        except DRIVER_ERRORS as exc:
            raise StoreError(
                f"cannot prepare the BG statements in Cassandra at {self.cassandra.where()}: {exc}"
            ) from None

    def load_fragment(self, fragment: Fragment) -> None:
        """One unlogged batch per partition (a single mutation on its replicas): the
        partition's delete, stamped before any of its new rows, then the rows."""
        st = self._ready()
        members = fragment.members.tolist()
        pic, tpic = fragment.profile_image, fragment.thumbnail
        attrs = {m: fragment.attributes(m) for m in members}
        rescount = dict.fromkeys(members, 0)
        walls: dict[int, list[tuple[Any, ...]]] = {m: [] for m in members}
        for rid, creator, wall in fragment.resources.tolist():
            rescount[wall] = rescount.get(wall, 0) + 1
            walls.setdefault(wall, []).append((wall, rid, creator))
        partitions: dict[int, list[tuple[Any, ...]]] = {
            m: [(m, attrs[m], pic, tpic, rescount[m])] for m in members
        }
        for inviter, invitee, status in fragment.friendships.tolist():
            if status == CONFIRMED:
                partitions[inviter].append((inviter, FRIEND, invitee, attrs[invitee], tpic))
                partitions[invitee].append((invitee, FRIEND, inviter, attrs[inviter], tpic))
            elif status == PENDING:
                partitions[invitee].append((invitee, INVITER, inviter, attrs[inviter], tpic))
        comments: dict[int, list[tuple[Any, ...]]] = {
            r: [] for r in fragment.resources[:, 0].tolist()
        }
        for rid, mid, who, text in fragment.comments():
            comments[rid].append((rid, mid, who, text))
        now = int(time.time() * 1e6)
        batches = []
        for m, rows in partitions.items():
            batches += self._batches(now, (st.wipe_member, m), st.put_member, rows[:1],
                                     st.put_relation, rows[1:])  # fmt: skip
        for w, rows in walls.items():
            batches += self._batches(now, (st.wipe_wall, w), st.put_resource, rows)
        for rid, rows in comments.items():
            batches += self._batches(now, (st.wipe_comments, rid), st.put_comment, rows)
        concurrency = self.options.load_concurrency
        for _attempt in range(LOAD_ATTEMPTS):
            # The driver takes the batches one by one as earlier ones are answered: a beat each.
            results = execute_concurrent(
                self.session,
                beating(batches, fragment.progress),
                concurrency=concurrency,
                raise_on_first_error=False,
            )
            errors = [r.result_or_exc for r in results if not r.success]
            # A busy cluster times writes out; each batch is idempotent (its delete has a
            # fixed, earlier timestamp), so the failed ones go again, fewer at a time.
            batches = [b for b, r in zip(batches, results, strict=True) if not r.success]
            if not batches:
                return
            concurrency = max(1, concurrency // 4)
        raise StoreError(
            f"loading into Cassandra: {len(errors)} writes still failing after "
            f"{LOAD_ATTEMPTS} attempts: {errors[0]}"
        )

    def _batches(self, now: int, wipe: tuple[Any, ...], *puts: object) -> list[tuple[Any, ...]]:
        """The partition's delete stamped now-1 and its rows (stamped by the driver when
        sent, so later), LOAD_BATCH to a batch; `puts` alternates a statement and its rows."""
        level = self._ready().write_level
        statements = [(wipe[0], (now - 1, wipe[1]))]
        for statement, rows in zip(puts[::2], puts[1::2], strict=True):
            statements += [(statement, row) for row in rows]  # type: ignore[attr-defined]
        out = []
        for lo in range(0, len(statements), LOAD_BATCH):
            batch = BatchStatement(BatchType.UNLOGGED, consistency_level=level)
            for statement, args in statements[lo : lo + LOAD_BATCH]:
                batch.add(statement, args)
            out.append((batch, ()))
        return out

    def read_back(self, fragment: Fragment) -> FragmentContents:
        st = self._ready()
        friendships: list[tuple[int, int, int]] = []
        for m in beating(fragment.members.tolist(), fragment.progress):
            for kind, other in self.session.execute(st.relations, (m,)):
                if kind == FRIEND and m < other:
                    friendships.append((m, other, CONFIRMED))
                elif kind == INVITER:
                    friendships.append((other, m, PENDING))
        comments = [
            (rid, mid)
            for rid in beating(fragment.resources[:, 0].tolist(), fragment.progress)
            for mid, *_ in self.session.execute(st.comments, (rid,))
        ]
        return FragmentContents(friendships, comments)

    def _ready(self) -> "Statements":
        if self.statements is None:
            raise StoreError("create_schema or use_schema must run before connect")
        return self.statements

    def connect(self) -> "CassandraConnection":
        return CassandraConnection(self.session, self._ready())

    async def connect_async(self) -> "CassandraAsyncConnection":
        # The session is thread-safe and shared by every loop; only the asyncio futures a
        # connection makes belong to its loop.
        statements = self._ready()  # the session exists by now: connecting never blocks here
        if self.options.driver == "acsylla":
            from bgbench.workloads.bg.stores import cassandra_acsylla

            if self.acsylla is None:
                self.acsylla = cassandra_acsylla.sessions(self.options)
            session, prepared = await self.acsylla.get()
            return cassandra_acsylla.CassandraAcsyllaConnection(session, prepared)
        return CassandraAsyncConnection(self.session, statements, asyncio.get_running_loop())

    async def aclose(self) -> None:
        # cassandra-driver: nothing is bound to a loop but the futures of calls, done by now
        if self.acsylla is not None:
            await self.acsylla.close()

    def describe(self) -> str:
        o, c = self.options, self.cassandra
        return (
            f"Cassandra {c.release_version()} ({c.nodes()}, RF {o.replication_factor}, "
            f"reads {o.read_consistency}, writes {o.write_consistency})"
        )

    def counters(self) -> dict[str, int]:
        return {}

    def close(self) -> None:
        self.cassandra.shutdown()


TABLES = [
    """CREATE TABLE IF NOT EXISTS {ks}.member (
        mid int, kind tinyint, other int, oattrs list<text>, otpic blob,
        attrs list<text> static, pic blob static, tpic blob static, resources int static,
        PRIMARY KEY ((mid), kind, other))""",
    """CREATE TABLE IF NOT EXISTS {ks}.wall (wall int, rid int, creator int,
        PRIMARY KEY ((wall), rid)) WITH CLUSTERING ORDER BY (rid DESC)""",
    """CREATE TABLE IF NOT EXISTS {ks}.comment (rid int, mid int, commenter int, content text,
        PRIMARY KEY ((rid), mid))""",
]
