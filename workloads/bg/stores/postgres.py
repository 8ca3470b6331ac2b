"""PostgreSQL (psycopg 3, a connection pool): the relational design of the paper's Figure 1.c.

Bulk loading with COPY; every statement prepared by psycopg after its first use; the
isolation level is a setting. A write that finds nothing to change raises, as SQLite's does.
The schema is made by one process (create_schema) before any load: CREATE INDEX takes a
table lock that deadlocks with another process's loading transaction.
"""

import threading
from typing import Annotated, ClassVar, Literal

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool
from pydantic import BaseModel, ConfigDict, Field, field_validator

from bgbench.errors import StoreError, UserError
from bgbench.workloads.bg.config import BGDatabaseConfig
from bgbench.workloads.bg.generator import CONFIRMED, PENDING, Fragment
from bgbench.workloads.bg.store import (
    CommentRow,
    FragmentContents,
    MemberRow,
    Profile,
    ResourceRow,
)

ISOLATION = {
    "read committed": psycopg.IsolationLevel.READ_COMMITTED,
    "repeatable read": psycopg.IsolationLevel.REPEATABLE_READ,
    "serializable": psycopg.IsolationLevel.SERIALIZABLE,
}


class PostgresOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    dsn: str = Field("host=127.0.0.1 port=5432 user=postgres dbname=postgres", description="libpq")
    isolation: Literal["read committed", "repeatable read", "serializable"] = "read committed"
    pool_max: Annotated[int, Field(ge=1, le=10_000)] = 512
    connect_timeout_s: Annotated[float, Field(gt=0)] = 10.0

    @field_validator("dsn")
    @classmethod
    def _libpq(cls, dsn: str) -> str:
        try:
            conninfo_to_dict(dsn)
        except psycopg.Error as exc:
            raise ValueError(
                f"not a libpq connection string ({_first_line(exc)}): use "
                "'host=H port=P user=U dbname=D' or postgresql://user@host:port/dbname"
            ) from None
        return dsn


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def server_of(dsn: str) -> str:
    """host:port/dbname of a connection string, never its password."""
    try:
        info = conninfo_to_dict(dsn)
    except psycopg.Error:
        return "?"
    host = info.get("host") or info.get("hostaddr") or "localhost"
    return f"{host}:{info.get('port') or 5432}/{info.get('dbname') or info.get('user') or ''}"


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


class PostgresBinding:
    name: ClassVar[str] = "postgres"
    embedded: ClassVar[bool] = False
    full_answers: ClassVar[bool] = True
    can_read_back: ClassVar[bool] = True
    Options: ClassVar[type[BaseModel]] = PostgresOptions

    def __init__(self, options: PostgresOptions) -> None:
        self.options = options
        self.attrcount: int | None = None
        self._pool: ConnectionPool | None = None
        self._pool_lock = threading.Lock()  # load threads connect all at once

    def _connect(self, first_contact: bool = False) -> psycopg.Connection:
        """On first contact (preparing), a server that cannot be reached is the user's to fix;
        later it is a fault of the store."""
        try:
            return psycopg.connect(
                self.options.dsn, autocommit=True, connect_timeout=self.options.connect_timeout_s
            )
        except psycopg.OperationalError as exc:
            where = server_of(self.options.dsn)
            if first_contact:
                raise UserError(
                    f"store.options.dsn: cannot reach PostgreSQL at {where} ({_first_line(exc)}): "
                    "correct the dsn, or start the server"
                ) from None
            raise StoreError(f"cannot reach PostgreSQL at {where}: {_first_line(exc)}") from None

    @property
    def pool(self) -> ConnectionPool:
        with self._pool_lock:
            return self._make_pool()

    def _make_pool(self) -> ConnectionPool:
        if self._pool is None:
            self._pool = ConnectionPool(
                self.options.dsn,
                min_size=1,
                max_size=self.options.pool_max,
                kwargs={"autocommit": True, "prepare_threshold": 0},
                configure=self._configure,
                timeout=self.options.connect_timeout_s,
                open=True,
            )
        return self._pool

    def _configure(self, conn: psycopg.Connection) -> None:
        conn.isolation_level = ISOLATION[self.options.isolation]

    def create_schema(self, db: BGDatabaseConfig) -> None:
        with self._connect(first_contact=True) as conn:
            conn.execute("SELECT pg_advisory_lock(7007)")  # two coordinators on one database
            try:
                conn.execute(schema_sql(db.attrcount))
            finally:
                conn.execute("SELECT pg_advisory_unlock(7007)")
            self._check_columns(conn, db)
        self.attrcount = db.attrcount

    def use_schema(self, db: BGDatabaseConfig) -> None:
        with self._connect(first_contact=True) as conn:
            self._check_columns(conn, db)
        self.attrcount = db.attrcount

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
            with conn.cursor().copy("COPY frag FROM STDIN") as copy:
                for m in members:
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
                for row in fragment.friendships.tolist():
                    copy.write_row(row)
            with conn.cursor().copy(
                "COPY resources (rid, creatorid, walluserid, type, body, doc) FROM STDIN"
            ) as copy:
                for rid, creator, wall in fragment.resources.tolist():
                    copy.write_row((rid, creator, wall, "post", "body", "doc"))
            with conn.cursor().copy("COPY manipulation FROM STDIN") as copy:
                for rid, mid, who, text in fragment.comments():
                    copy.write_row((rid, mid, who, 0, "comment", text))
        with self._connect() as conn:
            conn.execute("ANALYZE users, friendship, resources, manipulation")

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

    def connect(self) -> "PostgresConnection":
        if self.attrcount is None:
            raise StoreError("create_schema or use_schema must run before connect")
        pool = self.pool
        try:
            conn = pool.getconn()
        except Exception as exc:
            raise StoreError(f"no PostgreSQL connection: {exc}") from None
        return PostgresConnection(conn, self.attrcount, pool)

    def describe(self) -> str:
        with self._connect() as conn:
            version = conn.execute("SHOW server_version").fetchone()[0]
        return f"PostgreSQL {version} ({self.options.isolation})"

    def counters(self) -> dict[str, int]:
        return {}

    def close(self) -> None:
        with self._pool_lock:
            if self._pool is not None:
                self._pool.close()
                self._pool = None


class PostgresConnection:
    def __init__(self, conn: psycopg.Connection, attrcount: int, pool: ConnectionPool) -> None:
        self.conn = conn
        self.pool = pool
        self.n = attrcount
        attrs = ", ".join(f"u.attr{i}" for i in range(attrcount))
        self._profile = (
            f"SELECT {attrs}, u.pic, "
            "(SELECT count(*) FROM friendship WHERE inviterid = u.userid AND status = 2) + "
            "(SELECT count(*) FROM friendship WHERE inviteeid = u.userid AND status = 2), "
            "(SELECT count(*) FROM resources WHERE walluserid = u.userid), "
            "(SELECT count(*) FROM friendship WHERE inviteeid = u.userid AND status = 1) "
            "FROM users u WHERE u.userid = %s"
        )
        self._friends = (
            f"SELECT u.userid, {attrs}, u.tpic FROM friendship f JOIN users u "
            f"ON u.userid = f.inviteeid WHERE f.inviterid = %s AND f.status = {CONFIRMED} "
            f"UNION ALL SELECT u.userid, {attrs}, u.tpic FROM friendship f JOIN users u "
            f"ON u.userid = f.inviterid WHERE f.inviteeid = %s AND f.status = {CONFIRMED}"
        )
        self._requests = (
            f"SELECT u.userid, {attrs}, u.tpic FROM friendship f JOIN users u "
            f"ON u.userid = f.inviterid WHERE f.inviteeid = %s AND f.status = {PENDING}"
        )

    def _rows(self, rows: list[tuple]) -> list[MemberRow]:
        n = self.n
        return [MemberRow(r[0], list(r[1 : n + 1]), r[n + 1]) for r in rows]

    def view_profile(self, requester: int, member: int) -> Profile:
        row = self.conn.execute(self._profile, (member,)).fetchone()
        if row is None:
            raise StoreError(f"member {member} not found")
        n = self.n
        pending = row[n + 3] if requester == member else None
        return Profile(member, list(row[:n]), row[n + 1], row[n + 2], pending, row[n])

    def list_friends(self, requester: int, member: int) -> list[MemberRow]:
        return self._rows(self.conn.execute(self._friends, (member, member)).fetchall())

    def view_friend_requests(self, member: int) -> list[MemberRow]:
        return self._rows(self.conn.execute(self._requests, (member,)).fetchall())

    def _change(self, sql: str, args: tuple, what: str) -> None:
        if self.conn.execute(sql, args).rowcount != 1:
            raise StoreError(f"{what}: no matching row")

    def invite_friend(self, inviter: int, invitee: int) -> None:
        self.conn.execute("INSERT INTO friendship VALUES (%s, %s, 1)", (inviter, invitee))

    def accept_friend_request(self, inviter: int, invitee: int) -> None:
        self._change(
            "UPDATE friendship SET status = 2 WHERE inviterid = %s AND inviteeid = %s "
            "AND status = 1",
            (inviter, invitee),
            f"accept invitation {inviter}->{invitee}",
        )

    def reject_friend_request(self, inviter: int, invitee: int) -> None:
        self._change(
            "DELETE FROM friendship WHERE inviterid = %s AND inviteeid = %s AND status = 1",
            (inviter, invitee),
            f"reject invitation {inviter}->{invitee}",
        )

    def thaw_friendship(self, member: int, friend: int) -> None:
        self._change(
            "DELETE FROM friendship WHERE status = 2 AND ((inviterid = %s AND inviteeid = %s) "
            "OR (inviterid = %s AND inviteeid = %s))",
            (member, friend, friend, member),
            f"thaw friendship {member}-{friend}",
        )

    def view_top_k_resources(self, requester: int, member: int, k: int) -> list[ResourceRow]:
        rows = self.conn.execute(
            "SELECT rid, creatorid, walluserid FROM resources WHERE walluserid = %s "
            "ORDER BY rid DESC LIMIT %s",
            (member, k),
        ).fetchall()
        return [ResourceRow(*r) for r in rows]

    def view_comments(self, requester: int, rid: int) -> list[CommentRow]:
        rows = self.conn.execute(
            "SELECT rid, mid, modifierid, content FROM manipulation WHERE rid = %s", (rid,)
        ).fetchall()
        return [CommentRow(*r) for r in rows]

    def post_comment(self, commenter: int, rid: int, mid: int, text: str) -> None:
        self.conn.execute(
            "INSERT INTO manipulation VALUES (%s, %s, %s, 0, 'comment', %s)",
            (rid, mid, commenter, text),
        )

    def delete_comment(self, rid: int, mid: int) -> None:
        self._change(
            "DELETE FROM manipulation WHERE rid = %s AND mid = %s",
            (rid, mid),
            f"comment {rid}/{mid}",
        )

    def close(self) -> None:
        self.pool.putconn(self.conn)
