"""MySQL (InnoDB; tested on MariaDB): the relational design of the paper's Figure 1.c.

The tables, indexes and statements are PostgreSQL's (stores/postgres.py) in MySQL's
dialect. Socialites are tasks on the load process's event loop (asyncmy,
`concurrency = "asyncio"`): each holds one autocommit connection of its loop's pool
for a run, so every statement is its own transaction at the options' `isolation`, which
the driver sets on every connection (a single-statement read sees the latest commits at
any level). Each statement is prepared on the server once per
connection (asyncmy's binary protocol: about a third less client CPU per action than
sending it as text with the parameters escaped into it).
A write that finds nothing to change raises, as SQLite's does.

Schema, loading, read-back and describe stay blocking, on the driver's PyMySQL
connection. A fragment loads in one READ COMMITTED transaction: InnoDB then takes no
gap locks, so fragments that load at once never wait on each other; its old rows are
found through a temporary table of the fragment's members (the session's own), and its
rows go in as multi-row INSERTs. No ANALYZE TABLE after a load: InnoDB recomputes a
table's persistent statistics by itself once a tenth of its rows changed.
"""

from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from typing import Any, ClassVar

from pydantic import BaseModel

from bgbench.drivers import mysql as my
from bgbench.drivers.mysql_options import MySQLOptions
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
from bgbench.workloads.loading import ROWS_PER_BEAT

# Two coordinators preparing one database: the second waits for the first's DDL.
SCHEMA_LOCK, SCHEMA_LOCK_WAIT_S = "bgbench_bg_schema", 30
TABLE = "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"
CLIENT_ERRORS = 2000  # CR_*: the client's own errors (connection lost, gone away, ...)


def schema_statements(attrcount: int) -> list[str]:
    attrs = ", ".join(f"attr{i} TEXT" for i in range(attrcount))
    return [
        f"CREATE TABLE IF NOT EXISTS users (userid BIGINT PRIMARY KEY, {attrs}, "
        f"pic LONGBLOB, tpic MEDIUMBLOB) {TABLE}",
        "CREATE TABLE IF NOT EXISTS friendship ("
        "inviterid BIGINT NOT NULL, inviteeid BIGINT NOT NULL, status SMALLINT NOT NULL, "
        "PRIMARY KEY (inviterid, inviteeid), "
        "KEY friendship_invitee (inviteeid, status, inviterid), "
        f"KEY friendship_inviter (inviterid, status, inviteeid)) {TABLE}",
        "CREATE TABLE IF NOT EXISTS resources ("
        "rid BIGINT PRIMARY KEY, creatorid BIGINT NOT NULL, walluserid BIGINT NOT NULL, "
        "type TEXT, body TEXT, doc TEXT, KEY resources_wall (walluserid, rid), "
        f"KEY resources_creator (creatorid)) {TABLE}",
        "CREATE TABLE IF NOT EXISTS manipulation ("
        "rid BIGINT NOT NULL, mid BIGINT NOT NULL, modifierid BIGINT NOT NULL, "
        "timestamp BIGINT NOT NULL, type TEXT, content TEXT, PRIMARY KEY (rid, mid)) "
        f"{TABLE}",
    ]


def statements(attrcount: int) -> tuple[str, str, str]:
    """View Profile's, List Friends' and View Friend Requests' statements."""
    attrs = ", ".join(f"u.attr{i}" for i in range(attrcount))
    profile = (
        f"SELECT {attrs}, u.pic, "
        f"(SELECT count(*) FROM friendship WHERE inviterid = u.userid AND status = {CONFIRMED})"
        f" + (SELECT count(*) FROM friendship WHERE inviteeid = u.userid AND status = "
        f"{CONFIRMED}), (SELECT count(*) FROM resources WHERE walluserid = u.userid), "
        f"(SELECT count(*) FROM friendship WHERE inviteeid = u.userid AND status = {PENDING}) "
        "FROM users u WHERE u.userid = %s"
    )
    friends = (
        f"SELECT u.userid, {attrs}, u.tpic FROM friendship f JOIN users u "
        f"ON u.userid = f.inviteeid WHERE f.inviterid = %s AND f.status = {CONFIRMED} "
        f"UNION ALL SELECT u.userid, {attrs}, u.tpic FROM friendship f JOIN users u "
        f"ON u.userid = f.inviterid WHERE f.inviteeid = %s AND f.status = {CONFIRMED}"
    )
    requests = (
        f"SELECT u.userid, {attrs}, u.tpic FROM friendship f JOIN users u "
        f"ON u.userid = f.inviterid WHERE f.inviteeid = %s AND f.status = {PENDING}"
    )
    return profile, friends, requests


INVITE = f"INSERT INTO friendship VALUES (%s, %s, {PENDING})"
ACCEPT = (
    f"UPDATE friendship SET status = {CONFIRMED} "
    f"WHERE inviterid = %s AND inviteeid = %s AND status = {PENDING}"
)
REJECT = f"DELETE FROM friendship WHERE inviterid = %s AND inviteeid = %s AND status = {PENDING}"
THAW = (
    f"DELETE FROM friendship WHERE status = {CONFIRMED} AND ((inviterid = %s AND inviteeid = %s)"
    " OR (inviterid = %s AND inviteeid = %s))"
)
TOP_K = (
    "SELECT rid, creatorid, walluserid FROM resources WHERE walluserid = %s "
    "ORDER BY rid DESC LIMIT %s"
)
COMMENTS = "SELECT rid, mid, modifierid, content FROM manipulation WHERE rid = %s"
POST = "INSERT INTO manipulation VALUES (%s, %s, %s, 0, 'comment', %s)"
DELETE_COMMENT = "DELETE FROM manipulation WHERE rid = %s AND mid = %s"

# A fragment's old rows, found from its members in the session's temporary table `frag`.
CLEAR_FRAGMENT = (
    "DELETE m FROM frag JOIN resources r ON r.creatorid = frag.userid "
    "JOIN manipulation m ON m.rid = r.rid",
    "DELETE r FROM frag JOIN resources r ON r.creatorid = frag.userid",
    "DELETE f FROM frag JOIN friendship f ON f.inviterid = frag.userid",
    "DELETE u FROM frag JOIN users u ON u.userid = frag.userid",
)
READ_FRIENDSHIPS = (
    "SELECT f.inviterid, f.inviteeid, f.status FROM frag JOIN friendship f "
    "ON f.inviterid = frag.userid"
)
READ_COMMENTS = (
    "SELECT m.rid, m.mid FROM frag JOIN resources r ON r.creatorid = frag.userid "
    "JOIN manipulation m ON m.rid = r.rid"
)


def _batches(rows: Iterable[Sequence[Any]], size: int) -> Iterator[list[Sequence[Any]]]:
    it = iter(rows)
    while batch := list(islice(it, size)):
        yield batch


def _fill_frag(cur: Any, fragment: Fragment) -> None:
    """The fragment's members in the session's temporary table `frag` (gone with the
    connection, which loads and read-backs close)."""
    cur.execute("CREATE TEMPORARY TABLE frag (userid BIGINT PRIMARY KEY) ENGINE=InnoDB")
    for batch in _batches(([m] for m in fragment.members.tolist()), ROWS_PER_BEAT):
        fragment.progress()
        cur.executemany("INSERT INTO frag VALUES (%s)", batch)


def _fragment_rows(fragment: Fragment) -> list[tuple[str, Iterable[Sequence[Any]]]]:
    """Each table's INSERT and the fragment's generated rows for it."""
    n_attr = fragment.db.attrcount
    cols = ", ".join(["userid", *(f"attr{i}" for i in range(n_attr)), "pic", "tpic"])
    marks = ", ".join(["%s"] * (n_attr + 3))
    pic, thumb = fragment.profile_image, fragment.thumbnail
    users = ((m, *fragment.attributes(m), pic, thumb) for m in fragment.members.tolist())
    resources = (
        (rid, creator, wall, "post", "body", "doc")
        for rid, creator, wall in fragment.resources.tolist()
    )
    comments = ((rid, mid, who, 0, "comment", text) for rid, mid, who, text in fragment.comments())
    return [
        (f"INSERT INTO users ({cols}) VALUES ({marks})", users),
        ("INSERT INTO friendship VALUES (%s, %s, %s)", fragment.friendships.tolist()),
        ("INSERT INTO resources VALUES (%s, %s, %s, %s, %s, %s)", resources),
        ("INSERT INTO manipulation VALUES (%s, %s, %s, %s, %s, %s)", comments),
    ]


class MySQLBinding:
    name: ClassVar[str] = "mysql"
    concurrency: ClassVar[Concurrency] = "asyncio"
    suspends: ClassVar[bool] = True
    embedded: ClassVar[bool] = False
    full_answers: ClassVar[bool] = True
    can_read_back: ClassVar[bool] = True
    Options: ClassVar[type[BaseModel]] = MySQLOptions

    def __init__(self, options: MySQLOptions) -> None:
        self.options = options
        self.attrcount: int | None = None
        self.sql: tuple[str, str, str] | None = None
        # One asyncmy pool per event loop (a pool is bound to its loop).
        self._loop_pools = my.loop_pools(options)

    def create_schema(self, db: BGDatabaseConfig) -> None:
        my.create_database(self.options)
        with my.connect(self.options, first_contact=True) as conn, conn.cursor() as cur:
            with my.errors(self.options, "creating BG's tables"):
                cur.execute("SELECT GET_LOCK(%s, %s)", (SCHEMA_LOCK, SCHEMA_LOCK_WAIT_S))
                if cur.fetchone() != (1,):
                    raise StoreError(
                        f"MySQL at {self.options.where}: another process held the lock on "
                        f"BG's schema ({SCHEMA_LOCK}) for {SCHEMA_LOCK_WAIT_S} s"
                    )
                try:
                    for statement in schema_statements(db.attrcount):
                        cur.execute(statement)
                finally:
                    cur.execute("SELECT RELEASE_LOCK(%s)", (SCHEMA_LOCK,))
            self._check_columns(cur, db)
        self._use(db.attrcount)

    def use_schema(self, db: BGDatabaseConfig) -> None:
        with my.connect(self.options, first_contact=True) as conn, conn.cursor() as cur:
            self._check_columns(cur, db)
        self._use(db.attrcount)

    def _use(self, attrcount: int) -> None:
        self.attrcount = attrcount
        self.sql = statements(attrcount)

    def _check_columns(self, cur: Any, db: BGDatabaseConfig) -> None:
        with my.errors(self.options, "reading BG's columns"):
            cur.execute(
                "SELECT column_name FROM information_schema.columns "
                "WHERE table_schema = DATABASE() AND table_name = 'users'"
            )
            columns = [str(name) for (name,) in cur.fetchall()]
        if not columns:
            raise StoreError(f"no BG schema in {self.options.where}: create_schema must run first")
        have = sum(1 for name in columns if name.startswith("attr"))
        if have != db.attrcount:
            raise UserError(
                f"store.options.database: the database holds members with {have} attributes, "
                f"the config asks for {db.attrcount}: drop the bgbench tables or use another "
                "database"
            )

    def load_fragment(self, fragment: Fragment) -> None:
        what = f"loading fragment {fragment.index}"
        with my.connect(self.options) as conn, conn.cursor() as cur, my.errors(self.options, what):
            cur.execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
            _fill_frag(cur, fragment)
            conn.begin()
            for statement in CLEAR_FRAGMENT:
                cur.execute(statement)
            for sql, rows in _fragment_rows(fragment):
                for batch in _batches(rows, ROWS_PER_BEAT):
                    fragment.progress()  # a beat per round trip
                    cur.executemany(sql, batch)
            conn.commit()

    def read_back(self, fragment: Fragment) -> FragmentContents:
        what = f"reading fragment {fragment.index} back"
        with my.connect(self.options) as conn, conn.cursor() as cur, my.errors(self.options, what):
            _fill_frag(cur, fragment)
            cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY")
            cur.execute(READ_FRIENDSHIPS)
            friendships = [(int(a), int(b), int(s)) for a, b, s in cur.fetchall()]
            cur.execute(READ_COMMENTS)
            comments = [(int(rid), int(mid)) for rid, mid in cur.fetchall()]
            conn.commit()
        return FragmentContents(friendships, comments)

    def _statements(self) -> tuple[str, str, str]:
        if self.sql is None:
            raise StoreError("create_schema or use_schema must run before connect")
        return self.sql

    def connect(self) -> "MySQLConnection":
        """A blocking connection, for tools: the same statements on PyMySQL."""
        sql = self._statements()
        return MySQLConnection(my.connect(self.options), self.options, sql, self.attrcount or 0)

    async def connect_async(self) -> "MySQLAsyncConnection":
        sql = self._statements()
        held = await my.Held.acquire(self._loop_pools)
        return MySQLAsyncConnection(held, sql, self.attrcount or 0)

    async def aclose(self) -> None:
        await self._loop_pools.aclose()

    def describe(self) -> str:
        return my.describe(self.options)

    def counters(self) -> dict[str, int]:
        return {}

    def close(self) -> None:
        self._loop_pools.clear()  # a loop's pool is closed by aclose() on that loop


def _members(rows: Sequence[Sequence[Any]], n: int) -> list[MemberRow]:
    return [MemberRow(int(r[0]), [str(a) for a in r[1 : n + 1]], r[n + 1]) for r in rows]


def _profile(row: Sequence[Any] | None, requester: int, member: int, n: int) -> Profile:
    if row is None:
        raise StoreError(f"member {member} not found")
    pending = int(row[n + 3]) if requester == member else None
    attributes = [str(a) for a in row[:n]]
    return Profile(member, attributes, int(row[n + 1]), int(row[n + 2]), pending, row[n])


def _resources(rows: Sequence[Sequence[Any]]) -> list[ResourceRow]:
    return [ResourceRow(int(rid), int(creator), int(wall)) for rid, creator, wall in rows]


def _comments(rows: Sequence[Sequence[Any]]) -> list[CommentRow]:
    return [CommentRow(int(rid), int(mid), int(who), str(text)) for rid, mid, who, text in rows]


class MySQLAsyncConnection:
    """One socialite task's asyncmy connection, held for its run and taken again after its
    server closed it. Each statement is prepared on the server once per connection, at
    its first use (the binary protocol: no client-side escaping, no parsing per call);
    a fresh connection prepares them again, and close() deallocates them."""

    __slots__ = ("con", "friends", "held", "n", "prepared", "profile", "requests")

    def __init__(self, held: my.Held, sql: tuple[str, str, str], n: int) -> None:
        self.held = held
        self.n = n
        self.profile, self.friends, self.requests = sql
        self.con: Any = None  # the connection `prepared` belongs to
        self.prepared: dict[str, Any] = {}

    async def _execute(self, sql: str, args: tuple[object, ...]) -> Any:
        con = await self.held.live()
        if con is not self.con:
            self.con, self.prepared = con, {}
        try:
            statement = self.prepared.get(sql)
            if statement is None:
                statement = self.prepared[sql] = await con.prepare(sql.replace("%s", "?"))
            return await statement.execute(args)
        except my.DRIVER_ERRORS as exc:
            code = my.error_code(exc)
            if code is None or code >= CLIENT_ERRORS:
                # Lost or timed out: asyncmy still calls it connected until a later write
                # fails; closed now, the next action takes a fresh one.
                con.close()
            raise

    async def _rows(self, sql: str, *args: object) -> Sequence[Any]:
        return (await self._execute(sql, args)).rows or ()

    async def _change(self, sql: str, args: tuple[object, ...], what: str) -> None:
        if (await self._execute(sql, args)).affected_rows != 1:
            raise StoreError(f"{what}: no matching row")

    async def _write(self, sql: str, *args: object) -> None:
        await self._execute(sql, args)

    async def view_profile(self, requester: int, member: int) -> Profile:
        rows = await self._rows(self.profile, member)
        return _profile(rows[0] if rows else None, requester, member, self.n)

    async def list_friends(self, requester: int, member: int) -> list[MemberRow]:
        return _members(await self._rows(self.friends, member, member), self.n)

    async def view_friend_requests(self, member: int) -> list[MemberRow]:
        return _members(await self._rows(self.requests, member), self.n)

    async def invite_friend(self, inviter: int, invitee: int) -> None:
        await self._write(INVITE, inviter, invitee)

    async def accept_friend_request(self, inviter: int, invitee: int) -> None:
        await self._change(ACCEPT, (inviter, invitee), f"accept invitation {inviter}->{invitee}")

    async def reject_friend_request(self, inviter: int, invitee: int) -> None:
        await self._change(REJECT, (inviter, invitee), f"reject invitation {inviter}->{invitee}")

    async def thaw_friendship(self, member: int, friend: int) -> None:
        args = (member, friend, friend, member)
        await self._change(THAW, args, f"thaw friendship {member}-{friend}")

    async def view_top_k_resources(self, requester: int, member: int, k: int) -> list[ResourceRow]:
        return _resources(await self._rows(TOP_K, member, k))

    async def view_comments(self, requester: int, rid: int) -> list[CommentRow]:
        return _comments(await self._rows(COMMENTS, rid))

    async def post_comment(self, commenter: int, rid: int, mid: int, text: str) -> None:
        await self._write(POST, rid, mid, commenter, text)

    async def delete_comment(self, rid: int, mid: int) -> None:
        await self._change(DELETE_COMMENT, (rid, mid), f"comment {rid}/{mid}")

    async def close(self) -> None:
        statements, self.prepared = list(self.prepared.values()), {}
        try:
            if self.con is not None and self.con is self.held.con and self.con.connected:
                for statement in statements:
                    await statement.close()  # no answer to wait for
        except my.DRIVER_ERRORS:
            pass  # a lost connection took its statements with it
        finally:
            await self.held.release()


class MySQLConnection:
    """The blocking connection (tools): the same statements on one PyMySQL connection."""

    def __init__(self, conn: Any, options: MySQLOptions, sql: tuple[str, str, str], n: int):
        self.conn = conn
        self.options = options
        self.n = n
        self.profile, self.friends, self.requests = sql

    def _rows(self, sql: str, *args: object) -> list[Any]:
        with self.conn.cursor() as cur, my.errors(self.options, "a BG action"):
            cur.execute(sql, args)
            return list(cur.fetchall())

    def _change(self, sql: str, args: tuple[object, ...], what: str) -> None:
        with self.conn.cursor() as cur, my.errors(self.options, what):
            changed = cur.execute(sql, args)
        if changed != 1:
            raise StoreError(f"{what}: no matching row")

    def view_profile(self, requester: int, member: int) -> Profile:
        rows = self._rows(self.profile, member)
        return _profile(rows[0] if rows else None, requester, member, self.n)

    def list_friends(self, requester: int, member: int) -> list[MemberRow]:
        return _members(self._rows(self.friends, member, member), self.n)

    def view_friend_requests(self, member: int) -> list[MemberRow]:
        return _members(self._rows(self.requests, member), self.n)

    def _write(self, sql: str, *args: object) -> None:
        with self.conn.cursor() as cur, my.errors(self.options, "a BG write"):
            cur.execute(sql, args)

    def invite_friend(self, inviter: int, invitee: int) -> None:
        self._write(INVITE, inviter, invitee)

    def accept_friend_request(self, inviter: int, invitee: int) -> None:
        self._change(ACCEPT, (inviter, invitee), f"accept invitation {inviter}->{invitee}")

    def reject_friend_request(self, inviter: int, invitee: int) -> None:
        self._change(REJECT, (inviter, invitee), f"reject invitation {inviter}->{invitee}")

    def thaw_friendship(self, member: int, friend: int) -> None:
        self._change(THAW, (member, friend, friend, member), f"thaw friendship {member}-{friend}")

    def view_top_k_resources(self, requester: int, member: int, k: int) -> list[ResourceRow]:
        return _resources(self._rows(TOP_K, member, k))

    def view_comments(self, requester: int, rid: int) -> list[CommentRow]:
        return _comments(self._rows(COMMENTS, rid))

    def post_comment(self, commenter: int, rid: int, mid: int, text: str) -> None:
        self._write(POST, rid, mid, commenter, text)

    def delete_comment(self, rid: int, mid: int) -> None:
        self._change(DELETE_COMMENT, (rid, mid), f"comment {rid}/{mid}")

    def close(self) -> None:
        self.conn.close()
