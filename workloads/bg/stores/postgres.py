"""PostgreSQL: the relational design of the paper's Figure 1.c.

Socialites are tasks on the load process's event loop (asyncpg, `concurrency = "asyncio"`):
each holds one connection of its loop's asyncpg pool (at most `pool_max`) for a run. Every
statement has $n parameters and is prepared once per connection (`pg.Held`), then called
as the prepared statement itself: the driver's path per action is a bare loop's. The isolation level
is the connection's default_transaction_isolation, sent when it starts: it holds for
every statement (each its own transaction) and survives the RESET ALL of a release. A
write that finds nothing to change raises, as SQLite's does.

Schema, loading, read-back and describe stay blocking, on psycopg 3, as does connect()
(a blocking connection for tools, with the same statements). Loading is why: the seam
keeps it blocking, and psycopg's COPY FROM STDIN streams each table's generated rows in
the loading thread, inside the transaction that deleted the fragment's old rows, with no
event loop; asyncpg's binary COPY would need a loop in every loading thread and exact
Python types for every column, for nothing: the load's time is the server's.
The schema is made by one process (create_schema) before any load: CREATE INDEX takes a
table lock that deadlocks with another process's loading transaction.

With `read_from: replica` each socialite holds a second connection, to the hot standby of
`replica_dsn`, and its five read actions (view profile, list friends, view friend
requests, view top-k resources, view comments) run there; writes stay on the primary's
connection. The blocking connection does the same with a second psycopg pool.
"""

import threading
from dataclasses import dataclass
from typing import Any, ClassVar

import psycopg
from psycopg_pool import ConnectionPool
from pydantic import BaseModel

from bgbench.drivers import postgres as pg
from bgbench.drivers.postgres_options import PostgresOptions, server_of
from bgbench.errors import StoreError, UserError
from bgbench.workloads.bg.config import BGDatabaseConfig
from bgbench.workloads.bg.generator import CONFIRMED, PENDING, Fragment
from bgbench.workloads.bg.store import (
    CommentRow,
    Concurrency,
    FragmentContents,
    MemberRow,
    Profile,
    ResourceRow,
)
from bgbench.workloads.loading import ROWS_PER_BEAT, beating


def schema_sql(attrcount: int) -> str:
    attrs = ", ".join(f"attr{i} TEXT" for i in range(attrcount))
    return f"""
    CREATE TABLE IF NOT EXISTS users (userid BIGINT PRIMARY KEY, {attrs}, pic BYTEA, tpic BYTEA);
    CREATE TABLE IF NOT EXISTS friendship (
        inviterid BIGINT NOT NULL, inviteeid BIGINT NOT NULL, status SMALLINT NOT NULL,
        PRIMARY KEY (inviterid, inviteeid));
    CREATE INDEX IF NOT EXISTS friendship_invitee ON friendship (inviteeid, status, inviterid);
    CREATE INDEX IF NOT EXISTS friendship_inviter ON friendship (inviterid, status, inviteeid);
    CREATE TABLE IF NOT EXISTS resources (
        rid BIGINT PRIMARY KEY, creatorid BIGINT NOT NULL, walluserid BIGINT NOT NULL,
        type TEXT, body TEXT, doc TEXT);
    CREATE INDEX IF NOT EXISTS resources_wall ON resources (walluserid, rid);
    CREATE INDEX IF NOT EXISTS resources_creator ON resources (creatorid);
    CREATE TABLE IF NOT EXISTS manipulation (
        rid BIGINT NOT NULL, mid BIGINT NOT NULL, modifierid BIGINT NOT NULL,
        timestamp BIGINT NOT NULL, type TEXT, content TEXT, PRIMARY KEY (rid, mid));
    """


@dataclass(frozen=True, slots=True)
class Statements:
    """The actions' SQL, with $n parameters: asyncpg prepares each once per connection, and
    the blocking connection runs the same text through psycopg's RawCursor."""

    profile: str
    friends: str
    requests: str


def view_profile_sql(attrcount: int, param: str = "$1") -> str:
    """View Profile's one statement: attributes, image and the three counts."""
    attrs = ", ".join(f"u.attr{i}" for i in range(attrcount))
    return (
        f"SELECT {attrs}, u.pic, "
        "(SELECT count(*) FROM friendship WHERE inviterid = u.userid AND status = 2) + "
        "(SELECT count(*) FROM friendship WHERE inviteeid = u.userid AND status = 2), "
        "(SELECT count(*) FROM resources WHERE walluserid = u.userid), "
        "(SELECT count(*) FROM friendship WHERE inviteeid = u.userid AND status = 1) "
        f"FROM users u WHERE u.userid = {param}"
    )


def statements(attrcount: int) -> Statements:
    attrs = ", ".join(f"u.attr{i}" for i in range(attrcount))
    return Statements(
        profile=view_profile_sql(attrcount),
        friends=(
            f"SELECT u.userid, {attrs}, u.tpic FROM friendship f JOIN users u "
            f"ON u.userid = f.inviteeid WHERE f.inviterid = $1 AND f.status = {CONFIRMED} "
            f"UNION ALL SELECT u.userid, {attrs}, u.tpic FROM friendship f JOIN users u "
            f"ON u.userid = f.inviterid WHERE f.inviteeid = $1 AND f.status = {CONFIRMED}"
        ),
        requests=(
            f"SELECT u.userid, {attrs}, u.tpic FROM friendship f JOIN users u "
            f"ON u.userid = f.inviterid WHERE f.inviteeid = $1 AND f.status = {PENDING}"
        ),
    )


INVITE = "INSERT INTO friendship VALUES ($1, $2, 1)"
ACCEPT = "UPDATE friendship SET status = 2 WHERE inviterid = $1 AND inviteeid = $2 AND status = 1"
REJECT = "DELETE FROM friendship WHERE inviterid = $1 AND inviteeid = $2 AND status = 1"
THAW = (
    "DELETE FROM friendship WHERE status = 2 AND ((inviterid = $1 AND inviteeid = $2) "
    "OR (inviterid = $2 AND inviteeid = $1))"
)
TOP_K = (
    "SELECT rid, creatorid, walluserid FROM resources WHERE walluserid = $1 "
    "ORDER BY rid DESC LIMIT $2"
)
COMMENTS = "SELECT rid, mid, modifierid, content FROM manipulation WHERE rid = $1"
POST = "INSERT INTO manipulation VALUES ($1, $2, $3, 0, 'comment', $4)"
DELETE_COMMENT = "DELETE FROM manipulation WHERE rid = $1 AND mid = $2"
# what asyncpg's execute() answers when a write changed exactly one row
UPDATED_ONE, DELETED_ONE = "UPDATE 1", "DELETE 1"


class PostgresBinding:
    name: ClassVar[str] = "postgres"
    concurrency: ClassVar[Concurrency] = "asyncio"
    suspends: ClassVar[bool] = True
    embedded: ClassVar[bool] = False
    full_answers: ClassVar[bool] = True
    can_read_back: ClassVar[bool] = True
    Options: ClassVar[type[BaseModel]] = PostgresOptions

    def __init__(self, options: PostgresOptions) -> None:
        self.options = options
        self.attrcount: int | None = None
        self.sql: Statements | None = None
        self._pool: ConnectionPool[Any] | None = None
        self._pool_lock = threading.Lock()  # load threads connect all at once
        # One asyncpg pool per event loop (a pool is bound to its loop); the first task of a
        # loop to ask makes it, the others await the same future.
        self._loop_pools = pg.loop_pools(options)
        # The standby's pools, where reads go with read_from replica (None: the primary's).
        self._replica = pg.reads_options(options)
        self._read_loop_pools = pg.loop_pools(self._replica) if self._replica else None
        self._read_pool: ConnectionPool[Any] | None = None

    def _connect(self, first_contact: bool = False) -> psycopg.Connection[Any]:
        """On first contact (preparing), a server that cannot be reached is the user's to fix;
        later it is a fault of the store."""
        return pg.connect(self.options, first_contact)

    @property
    def pool(self) -> ConnectionPool[Any]:
        with self._pool_lock:
            if self._pool is None:
                self._pool = pg.blocking_pool(self.options)
            return self._pool

    @property
    def read_pool(self) -> ConnectionPool[Any] | None:
        """The blocking pool of the standby reads go to; None: reads use `pool`."""
        if self._replica is None:
            return None
        with self._pool_lock:
            if self._read_pool is None:
                self._read_pool = pg.blocking_pool(self._replica)
            return self._read_pool

    def create_schema(self, db: BGDatabaseConfig) -> None:
        with self._connect(first_contact=True) as conn:
            conn.execute("SELECT pg_advisory_lock(7007)")  # two coordinators on one database
            try:
                conn.execute(schema_sql(db.attrcount))
            finally:
                conn.execute("SELECT pg_advisory_unlock(7007)")
            self._check_columns(conn, db)
        pg.check_replica(self.options)
        self._use(db.attrcount)

    def use_schema(self, db: BGDatabaseConfig) -> None:
        with self._connect(first_contact=True) as conn:
            self._check_columns(conn, db)
        pg.check_replica(self.options)
        self._use(db.attrcount)

    def _use(self, attrcount: int) -> None:
        self.attrcount = attrcount
        self.sql = statements(attrcount)

    def _check_columns(self, conn: psycopg.Connection, db: BGDatabaseConfig) -> None:
        columns = conn.execute(
            "SELECT column_name FROM information_schema.columns "
            "WHERE table_schema = current_schema() AND table_name = 'users'"
        ).fetchall()
        if not columns:
            raise StoreError(
                f"no BG schema in {server_of(self.options.dsn)}: create_schema must run first"
            )
        have = sum(1 for (name,) in columns if name.startswith("attr"))
        if have != db.attrcount:
            raise UserError(
                f"store.options.dsn: the database holds members with {have} attributes, the "
                f"config asks for {db.attrcount}: drop the bgbench tables or use another database"
            )

    def load_fragment(self, fragment: Fragment) -> None:
        members = fragment.members.tolist()
        n_attr = fragment.db.attrcount
        with self._connect() as conn, conn.transaction():
            conn.execute("CREATE TEMP TABLE frag (userid BIGINT PRIMARY KEY) ON COMMIT DROP")
            # COPY sends its buffer as it fills: a beat every ROWS_PER_BEAT rows.
            with conn.cursor().copy("COPY frag FROM STDIN") as copy:
                for m in beating(members, fragment.progress, ROWS_PER_BEAT):
                    copy.write_row((m,))
            conn.execute(
                "DELETE FROM manipulation WHERE rid IN (SELECT rid FROM resources "
                "WHERE creatorid IN (SELECT userid FROM frag))"
            )
            conn.execute("DELETE FROM resources WHERE creatorid IN (SELECT userid FROM frag)")
            conn.execute("DELETE FROM friendship WHERE inviterid IN (SELECT userid FROM frag)")
            conn.execute("DELETE FROM users WHERE userid IN (SELECT userid FROM frag)")
            cols = ", ".join(["userid", *(f"attr{i}" for i in range(n_attr)), "pic", "tpic"])
            pic, thumb = fragment.profile_image, fragment.thumbnail
            with conn.cursor().copy(f"COPY users ({cols}) FROM STDIN") as copy:
                for m in members:
                    copy.write_row((m, *fragment.attributes(m), pic, thumb))
            with conn.cursor().copy("COPY friendship FROM STDIN") as copy:
                for row in beating(fragment.friendships.tolist(), fragment.progress, ROWS_PER_BEAT):
                    copy.write_row(row)
            with conn.cursor().copy(
                "COPY resources (rid, creatorid, walluserid, type, body, doc) FROM STDIN"
            ) as copy:
                rows = beating(fragment.resources.tolist(), fragment.progress, ROWS_PER_BEAT)
                for rid, creator, wall in rows:
                    copy.write_row((rid, creator, wall, "post", "body", "doc"))
            with conn.cursor().copy("COPY manipulation FROM STDIN") as copy:
                for rid, mid, who, text in fragment.comments():
                    copy.write_row((rid, mid, who, 0, "comment", text))
        with self._connect() as conn:
            conn.execute("ANALYZE users, friendship, resources, manipulation")
        pg.await_replica(self.options, fragment.progress)  # reads from a standby see the load

    def read_back(self, fragment: Fragment) -> FragmentContents:
        members = fragment.members.tolist()
        with self._connect() as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            friendships = conn.execute(
                "SELECT inviterid, inviteeid, status FROM friendship WHERE inviterid = ANY(%s)",
                (members,),
            ).fetchall()
            comments = conn.execute(
                "SELECT m.rid, m.mid FROM manipulation m JOIN resources r USING (rid) "
                "WHERE r.creatorid = ANY(%s)",
                (members,),
            ).fetchall()
        return FragmentContents(friendships, comments)

    def _statements(self) -> Statements:
        if self.sql is None:
            raise StoreError("create_schema or use_schema must run before connect")
        return self.sql

    def connect(self) -> "PostgresConnection":
        sql = self._statements()
        pool = self.pool
        read_pool = self.read_pool
        timeout = self.options.connect_timeout_s
        try:
            writes = pg.HeldBlocking(pool, pool.getconn(timeout=timeout), timeout)
        except Exception as exc:
            raise StoreError(f"no PostgreSQL connection: {exc}") from None
        if read_pool is None:
            return PostgresConnection(writes, sql, self.attrcount or 0)
        try:
            reads = pg.HeldBlocking(read_pool, read_pool.getconn(timeout=timeout), timeout)
        except Exception as exc:
            writes.release()
            raise StoreError(f"no connection to the PostgreSQL standby: {exc}") from None
        return PostgresConnection(writes, sql, self.attrcount or 0, reads)

    async def connect_async(self) -> "PostgresAsyncConnection":
        sql = self._statements()
        writes, reads = await pg.acquire_pair(self._loop_pools, self._read_loop_pools)
        return PostgresAsyncConnection(writes, sql, self.attrcount or 0, reads)

    async def aclose(self) -> None:
        await self._loop_pools.aclose()
        if self._read_loop_pools is not None:
            await self._read_loop_pools.aclose()

    def describe(self) -> str:
        return pg.describe(self.options)

    def counters(self) -> dict[str, int]:
        return {}

    def close(self) -> None:
        with self._pool_lock:
            for pool in (self._pool, self._read_pool):
                if pool is not None:
                    pool.close()
            self._pool = self._read_pool = None
        self._loop_pools.clear()  # a loop's pool is closed by aclose() on that loop
        if self._read_loop_pools is not None:
            self._read_loop_pools.clear()


def _members(rows: list[Any], n: int) -> list[MemberRow]:
    return [MemberRow(r[0], list(r[1 : n + 1]), r[n + 1]) for r in rows]


def _profile(row: tuple[Any, ...] | None, requester: int, member: int, n: int) -> Profile:
    if row is None:
        raise StoreError(f"member {member} not found")
    pending = row[n + 3] if requester == member else None
    return Profile(member, list(row[:n]), row[n + 1], row[n + 2], pending, row[n])


class PostgresAsyncConnection(pg.HeldPair):
    """One socialite task's asyncpg connection (`writes`), held for its run and taken again
    after its server closed it; with a standby to read from, a second one there (`reads`),
    which its reads use."""

    __slots__ = ("friends", "n", "profile", "requests")

    def __init__(
        self, writes: pg.Held, sql: Statements, n: int, reads: pg.Held | None = None
    ) -> None:
        super().__init__(writes, reads)
        self.n = n
        self.profile, self.friends, self.requests = sql.profile, sql.friends, sql.requests

    async def view_profile(self, requester: int, member: int) -> Profile:
        row = await self.reads.fetchrow(self.profile, member)
        return _profile(row, requester, member, self.n)

    async def list_friends(self, requester: int, member: int) -> list[MemberRow]:
        return _members(await self.reads.fetch(self.friends, member), self.n)

    async def view_friend_requests(self, member: int) -> list[MemberRow]:
        return _members(await self.reads.fetch(self.requests, member), self.n)

    async def _write(self, sql: str, *args: object) -> str:
        return await self.writes.execute(sql, *args)

    async def invite_friend(self, inviter: int, invitee: int) -> None:
        await self._write(INVITE, inviter, invitee)

    async def accept_friend_request(self, inviter: int, invitee: int) -> None:
        if await self._write(ACCEPT, inviter, invitee) != UPDATED_ONE:
            raise StoreError(f"accept invitation {inviter}->{invitee}: no matching row")

    async def reject_friend_request(self, inviter: int, invitee: int) -> None:
        if await self._write(REJECT, inviter, invitee) != DELETED_ONE:
            raise StoreError(f"reject invitation {inviter}->{invitee}: no matching row")

    async def thaw_friendship(self, member: int, friend: int) -> None:
        if await self._write(THAW, member, friend) != DELETED_ONE:
            raise StoreError(f"thaw friendship {member}-{friend}: no matching row")

    async def view_top_k_resources(self, requester: int, member: int, k: int) -> list[ResourceRow]:
        rows = await self.reads.fetch(TOP_K, member, k)
        return [ResourceRow(*r) for r in rows]

    async def view_comments(self, requester: int, rid: int) -> list[CommentRow]:
        return [CommentRow(*r) for r in await self.reads.fetch(COMMENTS, rid)]

    async def post_comment(self, commenter: int, rid: int, mid: int, text: str) -> None:
        await self._write(POST, rid, mid, commenter, text)

    async def delete_comment(self, rid: int, mid: int) -> None:
        if await self._write(DELETE_COMMENT, rid, mid) != DELETED_ONE:
            raise StoreError(f"comment {rid}/{mid}: no matching row")


class PostgresConnection:
    """The blocking connection (tools, CASQL's blocking path): the same statements; reads on
    the standby's connection (`reader`) when there is one. Each is taken again on its first
    use after its server closed it."""

    def __init__(
        self,
        writes: pg.HeldBlocking,
        sql: Statements,
        attrcount: int,
        reads: pg.HeldBlocking | None = None,
    ) -> None:
        self.writes = writes
        self.reads = reads or writes
        self.n = attrcount
        self.sql = sql

    @property
    def conn(self) -> psycopg.Connection:
        """The primary's connection, a fresh one if its server closed the last."""
        return self.writes.live()

    @property
    def reader(self) -> psycopg.Connection:
        """The connection reads use (the standby's, or the primary's), live as `conn`."""
        return self.reads.live()

    def view_profile(self, requester: int, member: int) -> Profile:
        row = self.reader.execute(self.sql.profile, (member,)).fetchone()
        return _profile(row, requester, member, self.n)

    def list_friends(self, requester: int, member: int) -> list[MemberRow]:
        return _members(self.reader.execute(self.sql.friends, (member,)).fetchall(), self.n)

    def view_friend_requests(self, member: int) -> list[MemberRow]:
        return _members(self.reader.execute(self.sql.requests, (member,)).fetchall(), self.n)

    def _change(self, sql: str, args: tuple[Any, ...], what: str) -> None:
        if self.conn.execute(sql, args).rowcount != 1:
            raise StoreError(f"{what}: no matching row")

    def invite_friend(self, inviter: int, invitee: int) -> None:
        self.conn.execute(INVITE, (inviter, invitee))

    def accept_friend_request(self, inviter: int, invitee: int) -> None:
        self._change(ACCEPT, (inviter, invitee), f"accept invitation {inviter}->{invitee}")

    def reject_friend_request(self, inviter: int, invitee: int) -> None:
        self._change(REJECT, (inviter, invitee), f"reject invitation {inviter}->{invitee}")

    def thaw_friendship(self, member: int, friend: int) -> None:
        self._change(THAW, (member, friend), f"thaw friendship {member}-{friend}")

    def view_top_k_resources(self, requester: int, member: int, k: int) -> list[ResourceRow]:
        return [ResourceRow(*r) for r in self.reader.execute(TOP_K, (member, k)).fetchall()]

    def view_comments(self, requester: int, rid: int) -> list[CommentRow]:
        return [CommentRow(*r) for r in self.reader.execute(COMMENTS, (rid,)).fetchall()]

    def post_comment(self, commenter: int, rid: int, mid: int, text: str) -> None:
        self.conn.execute(POST, (rid, mid, commenter, text))

    def delete_comment(self, rid: int, mid: int) -> None:
        self._change(DELETE_COMMENT, (rid, mid), f"comment {rid}/{mid}")

    def close(self) -> None:
        try:
            if self.reads is not self.writes:
                self.reads.release()
        finally:
            self.writes.release()
