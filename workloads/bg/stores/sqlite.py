"""SQLite: the embedded default, with the relational design of the paper's Figure 1.c.

One database file shared by every load process (WAL mode, a busy timeout), one
connection per thread, autocommit. A write that finds nothing to change raises:
BG's picture of the fragment and the store disagree, which the run must show.
Schema changes and loads take a file lock beside the database, one process at a time.
"""

import sqlite3
import time
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel

from bgbench.drivers import sqlite as lite
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
from bgbench.workloads.bg.stores.options import SQLiteOptions
from bgbench.workloads.loading import ROWS_PER_BEAT, beating


def schema_sql(attrcount: int) -> str:
    attrs = ", ".join(f"attr{i} TEXT" for i in range(attrcount))
    return f"""
    CREATE TABLE IF NOT EXISTS users (
        userid INTEGER PRIMARY KEY, {attrs}, pic BLOB, tpic BLOB);
    CREATE TABLE IF NOT EXISTS friendship (
        inviterid INTEGER NOT NULL, inviteeid INTEGER NOT NULL,
        status INTEGER NOT NULL, PRIMARY KEY (inviterid, inviteeid)) WITHOUT ROWID;
    CREATE INDEX IF NOT EXISTS friendship_invitee
        ON friendship (inviteeid, status, inviterid);
    CREATE INDEX IF NOT EXISTS friendship_inviter
        ON friendship (inviterid, status, inviteeid);
    CREATE TABLE IF NOT EXISTS resources (
        rid INTEGER PRIMARY KEY, creatorid INTEGER NOT NULL,
        walluserid INTEGER NOT NULL, type TEXT, body TEXT, doc TEXT);
    CREATE INDEX IF NOT EXISTS resources_wall ON resources (walluserid, rid);
    CREATE TABLE IF NOT EXISTS manipulation (
        rid INTEGER NOT NULL, mid INTEGER NOT NULL, modifierid INTEGER NOT NULL,
        timestamp INTEGER NOT NULL, type TEXT, content TEXT,
        PRIMARY KEY (rid, mid)) WITHOUT ROWID;
    """


class SQLiteBinding:
    name: ClassVar[str] = "sqlite"
    embedded: ClassVar[bool] = True
    full_answers: ClassVar[bool] = True
    can_read_back: ClassVar[bool] = True
    # Its driver only blocks: one thread per socialite (the store's calls release the GIL).
    concurrency: ClassVar[Concurrency] = "threads"
    suspends: ClassVar[bool] = True
    Options: ClassVar[type[BaseModel]] = SQLiteOptions
    file_options: ClassVar[tuple[str, ...]] = ("path",)

    def __init__(self, options: SQLiteOptions) -> None:
        self.options = options
        self.path = Path(options.path)
        self.attrcount: int | None = None

    def _open(self) -> sqlite3.Connection:
        return lite.open_database(self.options, f"synchronous={self.options.synchronous}")

    def _first_open(self) -> sqlite3.Connection:
        """The first contact: a path that cannot hold a database is the user's to fix."""
        return lite.first_open(self.options, f"synchronous={self.options.synchronous}")

    def _check_columns(self, conn: sqlite3.Connection, db: BGDatabaseConfig) -> None:
        columns = [row[1] for row in conn.execute("PRAGMA table_info(users)")]
        have = sum(1 for c in columns if c.startswith("attr"))
        if have != db.attrcount:
            raise UserError(
                f"store.options.path: {self.path} holds members with {have} attributes, the "
                f"config asks for {db.attrcount}: delete the file or point the path elsewhere"
            )

    def use_schema(self, db: BGDatabaseConfig) -> None:
        conn = self._first_open()
        try:
            if conn.execute("PRAGMA table_info(users)").fetchone() is None:
                # A file of this host's own (agents on several hosts): the first agent made
                # the schema in another. The lock keeps it from running beside a load here.
                self._make_schema(conn, db)
            self._check_columns(conn, db)
        finally:
            conn.close()
        self.attrcount = db.attrcount

    def create_schema(self, db: BGDatabaseConfig) -> None:
        conn = self._first_open()
        try:
            self._make_schema(conn, db)
            self._check_columns(conn, db)
        finally:
            conn.close()
        self.attrcount = db.attrcount

    def _make_schema(self, conn: sqlite3.Connection, db: BGDatabaseConfig) -> None:
        with lite.exclusive(self.path):
            conn.execute("PRAGMA journal_mode=WAL")
            conn.executescript(schema_sql(db.attrcount))

    def load_fragment(self, fragment: Fragment) -> None:
        # The rows are made first, in parallel with other processes; only writing is serial.
        members = fragment.members.tolist()
        marks = ", ".join("?" * (fragment.db.attrcount + 3))
        pic, thumb = fragment.profile_image, fragment.thumbnail
        users = [(m, *fragment.attributes(m), pic, thumb) for m in members]
        now = time.time_ns()
        comments = [(rid, mid, who, now, text) for rid, mid, who, text in fragment.comments()]
        with lite.exclusive(self.path, fragment.progress):
            conn = self._open()
            try:
                conn.execute("BEGIN IMMEDIATE")
                conn.execute("CREATE TEMP TABLE IF NOT EXISTS frag (userid INTEGER PRIMARY KEY)")
                conn.execute("DELETE FROM temp.frag")
                # executemany takes its rows one by one: a beat every ROWS_PER_BEAT.
                beat = fragment.progress
                conn.executemany(
                    "INSERT INTO temp.frag VALUES (?)",
                    beating(((m,) for m in members), beat, ROWS_PER_BEAT),
                )
                in_frag = "IN (SELECT userid FROM temp.frag)"
                conn.execute(f"DELETE FROM users WHERE userid {in_frag}")
                conn.execute(f"DELETE FROM friendship WHERE inviterid {in_frag}")
                conn.execute(
                    "DELETE FROM manipulation WHERE rid IN "
                    f"(SELECT rid FROM resources WHERE creatorid {in_frag})"
                )
                conn.execute(f"DELETE FROM resources WHERE creatorid {in_frag}")
                conn.executemany(
                    f"INSERT INTO users VALUES ({marks})", beating(users, beat, ROWS_PER_BEAT)
                )
                conn.executemany(
                    "INSERT INTO friendship VALUES (?, ?, ?)",
                    beating(fragment.friendships.tolist(), beat, ROWS_PER_BEAT),
                )
                conn.executemany(
                    "INSERT INTO resources VALUES (?, ?, ?, 'post', 'body', 'doc')",
                    beating(fragment.resources.tolist(), beat, ROWS_PER_BEAT),
                )
                conn.executemany(
                    "INSERT INTO manipulation VALUES (?, ?, ?, ?, 'comment', ?)",
                    beating(comments, beat, ROWS_PER_BEAT),
                )
                # Inside the write transaction: on its own it would read, then find another
                # connection's commit in the way of its write and fail without waiting.
                conn.execute("PRAGMA optimize")
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            finally:
                conn.close()

    def read_back(self, fragment: Fragment) -> FragmentContents:
        conn = self._open()
        try:
            conn.execute("BEGIN")  # one consistent snapshot
            conn.execute("CREATE TEMP TABLE IF NOT EXISTS frag (userid INTEGER PRIMARY KEY)")
            conn.execute("DELETE FROM temp.frag")
            conn.executemany(
                "INSERT INTO temp.frag VALUES (?)",
                beating(
                    ((m,) for m in fragment.members.tolist()), fragment.progress, ROWS_PER_BEAT
                ),
            )
            friendships = conn.execute(
                "SELECT inviterid, inviteeid, status FROM friendship "
                "WHERE inviterid IN (SELECT userid FROM temp.frag)"
            ).fetchall()
            comments = conn.execute(
                "SELECT m.rid, m.mid FROM manipulation m JOIN resources r ON r.rid = m.rid "
                "WHERE r.creatorid IN (SELECT userid FROM temp.frag)"
            ).fetchall()
            conn.execute("COMMIT")
        finally:
            conn.close()
        return FragmentContents(friendships, comments)

    def connect(self) -> "SQLiteConnection":
        if self.attrcount is None:
            raise StoreError("create_schema or use_schema must run before connect")
        return SQLiteConnection(self._open(), self.attrcount)

    def describe(self) -> str:
        return lite.describe(self.options)

    def counters(self) -> dict[str, int]:
        return {}

    def close(self) -> None:
        pass


class SQLiteConnection:
    def __init__(self, conn: sqlite3.Connection, attrcount: int) -> None:
        self.conn = conn
        self.n = attrcount
        attrs = ", ".join(f"u.attr{i}" for i in range(attrcount))
        self._profile_sql = f"SELECT {attrs}, u.pic FROM users u WHERE u.userid = ?"
        self._friends_sql = (
            f"SELECT u.userid, {attrs}, u.tpic FROM friendship f JOIN users u "
            f"ON u.userid = f.inviteeid WHERE f.inviterid = ? AND f.status = {CONFIRMED} "
            f"UNION ALL SELECT u.userid, {attrs}, u.tpic FROM friendship f JOIN users u "
            f"ON u.userid = f.inviterid WHERE f.inviteeid = ? AND f.status = {CONFIRMED}"
        )
        self._requests_sql = (
            f"SELECT u.userid, {attrs}, u.tpic FROM friendship f JOIN users u "
            f"ON u.userid = f.inviterid WHERE f.inviteeid = ? AND f.status = {PENDING}"
        )

    def _member_rows(self, rows: list[tuple[Any, ...]]) -> list[MemberRow]:
        n = self.n
        return [MemberRow(r[0], list(r[1 : n + 1]), r[n + 1]) for r in rows]

    def view_profile(self, requester: int, member: int) -> Profile:
        c = self.conn
        row = c.execute(self._profile_sql, (member,)).fetchone()
        if row is None:
            raise StoreError(f"member {member} not found")
        friends = c.execute(
            "SELECT (SELECT count(*) FROM friendship WHERE inviterid = ?1 AND status = 2)"
            " + (SELECT count(*) FROM friendship WHERE inviteeid = ?1 AND status = 2)",
            (member,),
        ).fetchone()[0]
        resources = c.execute(
            "SELECT count(*) FROM resources WHERE walluserid = ?", (member,)
        ).fetchone()[0]
        pending = None
        if requester == member:
            pending = c.execute(
                "SELECT count(*) FROM friendship WHERE inviteeid = ? AND status = 1", (member,)
            ).fetchone()[0]
        return Profile(member, list(row[: self.n]), friends, resources, pending, row[self.n])

    def list_friends(self, requester: int, member: int) -> list[MemberRow]:
        return self._member_rows(self.conn.execute(self._friends_sql, (member, member)).fetchall())

    def view_friend_requests(self, member: int) -> list[MemberRow]:
        return self._member_rows(self.conn.execute(self._requests_sql, (member,)).fetchall())

    def _change(self, sql: str, args: tuple[Any, ...], what: str) -> None:
        if self.conn.execute(sql, args).rowcount != 1:
            raise StoreError(f"{what}: no matching row")

    def invite_friend(self, inviter: int, invitee: int) -> None:
        self.conn.execute("INSERT INTO friendship VALUES (?, ?, 1)", (inviter, invitee))

    def accept_friend_request(self, inviter: int, invitee: int) -> None:
        self._change(
            "UPDATE friendship SET status = 2 WHERE inviterid = ? AND inviteeid = ? AND status = 1",
            (inviter, invitee),
            f"accept invitation {inviter}->{invitee}",
        )

    def reject_friend_request(self, inviter: int, invitee: int) -> None:
        self._change(
            "DELETE FROM friendship WHERE inviterid = ? AND inviteeid = ? AND status = 1",
            (inviter, invitee),
            f"reject invitation {inviter}->{invitee}",
        )

    def thaw_friendship(self, member: int, friend: int) -> None:
        self._change(
            "DELETE FROM friendship WHERE status = 2 AND ((inviterid = ?1 AND inviteeid = ?2)"
            " OR (inviterid = ?2 AND inviteeid = ?1))",
            (member, friend),
            f"thaw friendship {member}-{friend}",
        )

    def view_top_k_resources(self, requester: int, member: int, k: int) -> list[ResourceRow]:
        rows = self.conn.execute(
            "SELECT rid, creatorid, walluserid FROM resources WHERE walluserid = ? "
            "ORDER BY rid DESC LIMIT ?",
            (member, k),
        ).fetchall()
        return [ResourceRow(*r) for r in rows]

    def view_comments(self, requester: int, rid: int) -> list[CommentRow]:
        rows = self.conn.execute(
            "SELECT rid, mid, modifierid, content FROM manipulation WHERE rid = ?", (rid,)
        ).fetchall()
        return [CommentRow(*r) for r in rows]

    def post_comment(self, commenter: int, rid: int, mid: int, text: str) -> None:
        self.conn.execute(
            "INSERT INTO manipulation VALUES (?, ?, ?, ?, 'comment', ?)",
            (rid, mid, commenter, time.time_ns(), text),
        )

    def delete_comment(self, rid: int, mid: int) -> None:
        self._change(
            "DELETE FROM manipulation WHERE rid = ? AND mid = ?", (rid, mid), f"comment {rid}/{mid}"
        )

    def close(self) -> None:
        self.conn.close()
