"""HBase (happybase over the Thrift gateway): a wide-row design.

    {prefix}member    row str(mid)        p:attrs (JSON list), p:pic, p:tpic, p:resources;
                                          f:<friend id> per confirmed friend,
                                          i:<inviter id> per pending invitation
    {prefix}resource  row wall|~rid       r:creator, r:rid (~rid sorts the newest first)
    {prefix}comment   row str(rid)        c:<mid> = JSON [commenter, text]

View Profile is one row read; List Friends and View Friend Requests read a column family
of one row, then the listed members' attributes and thumbnails in one multi-get. HBase
makes one row's changes atomic; a friendship change spans two rows, written in one
Thrift batch (not atomic across the rows). A write reads the cell it changes first and
fails when it is absent, as BG's writes must match a row.
"""

import json
import struct
from typing import ClassVar

import happybase
from pydantic import BaseModel

from bgbench.drivers import hbase
from bgbench.drivers.hbase import TException
from bgbench.drivers.hbase_options import HBaseOptions
from bgbench.errors import StoreError
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
from bgbench.workloads.loading import beating

NEWEST_FIRST = 2**63
ATTRS, PIC, TPIC, RESOURCES = b"p:attrs", b"p:pic", b"p:tpic", b"p:resources"
TABLES = {
    "member": {"p": {"max_versions": 1}, "f": {"max_versions": 1}, "i": {"max_versions": 1}},
    "resource": {"r": {"max_versions": 1}},
    "comment": {"c": {"max_versions": 1}},
}
TABLE_NAMES = tuple(TABLES)


def member_key(m: int) -> bytes:
    return str(m).encode()


def resource_key(wall: int, rid: int) -> bytes:
    return struct.pack(">QQ", wall, NEWEST_FIRST - rid)


def _ids(row: dict[bytes, bytes], family: bytes) -> list[int]:
    return [int(col[len(family) :]) for col in row if col.startswith(family)]


class HBaseBinding:
    name: ClassVar[str] = "hbase"
    embedded: ClassVar[bool] = False
    full_answers: ClassVar[bool] = True
    can_read_back: ClassVar[bool] = True
    # Its driver only blocks: one thread per socialite (the store's calls release the GIL).
    concurrency: ClassVar[Concurrency] = "threads"
    suspends: ClassVar[bool] = True
    Options: ClassVar[type[BaseModel]] = HBaseOptions

    def __init__(self, options: HBaseOptions) -> None:
        self.options = options
        self.ready = False

    def _connection(self) -> happybase.Connection:
        return hbase.connect(self.options)

    def create_schema(self, db: BGDatabaseConfig) -> None:
        conn = self._connection()
        try:
            hbase.create_tables(conn, TABLES)
        finally:
            conn.close()
        self.ready = True

    def use_schema(self, db: BGDatabaseConfig) -> None:
        missing = hbase.missing_tables(self.options, TABLE_NAMES)
        if missing:
            raise StoreError(f"HBase tables {missing} missing: create_schema must run first")
        self.ready = True

    def load_fragment(self, fragment: Fragment) -> None:
        members = fragment.members.tolist()
        resources = fragment.resources.tolist()
        rescount = dict.fromkeys(members, 0)
        for _rid, _creator, wall in resources:
            rescount[wall] = rescount.get(wall, 0) + 1
        rows: dict[int, dict[bytes, bytes]] = {
            m: {ATTRS: json.dumps(fragment.attributes(m)).encode(),
                RESOURCES: str(rescount[m]).encode()}
            for m in members
        }  # fmt: skip
        pic, tpic = fragment.profile_image, fragment.thumbnail
        for m in members:
            if pic is not None:
                rows[m][PIC] = pic
            if tpic is not None:
                rows[m][TPIC] = tpic
        for inviter, invitee, status in fragment.friendships.tolist():
            if status == CONFIRMED:
                rows[inviter][b"f:%d" % invitee] = b""
                rows[invitee][b"f:%d" % inviter] = b""
            elif status == PENDING:
                rows[invitee][b"i:%d" % inviter] = b""
        comments: dict[int, dict[bytes, bytes]] = {}
        for rid, mid, who, text in fragment.comments():
            comments.setdefault(rid, {})[b"c:%d" % mid] = json.dumps([who, text]).encode()
        conn = self._connection()
        size = self.options.batch_size
        try:
            member, resource, comment = (conn.table(t) for t in ("member", "resource", "comment"))
            old_resources = [
                key
                for m in beating(members, fragment.progress)
                for key, _ in resource.scan(row_prefix=struct.pack(">Q", m), columns=[b"r"])
            ]
            # A beat per batch: happybase sends one every `size` mutations.
            with member.batch(batch_size=size) as b:
                for m in beating(members, fragment.progress, size):
                    b.delete(member_key(m))
            with resource.batch(batch_size=size) as b:
                for key in beating(old_resources, fragment.progress, size):
                    b.delete(key)
            with comment.batch(batch_size=size) as b:
                for rid, _creator, _wall in beating(resources, fragment.progress, size):
                    b.delete(member_key(rid))
            with member.batch(batch_size=size) as b:
                for m, data in beating(rows.items(), fragment.progress, size):
                    b.put(member_key(m), data)
            with resource.batch(batch_size=size) as b:
                for rid, creator, wall in beating(resources, fragment.progress, size):
                    b.put(resource_key(wall, rid), {b"r:creator": b"%d" % creator,
                                                    b"r:rid": b"%d" % rid})  # fmt: skip
            with comment.batch(batch_size=size) as b:
                for rid, data in beating(comments.items(), fragment.progress, size):
                    b.put(member_key(rid), data)
        except TException as exc:
            raise StoreError(f"loading into HBase: {exc}") from None
        finally:
            conn.close()

    def read_back(self, fragment: Fragment) -> FragmentContents:
        conn = self._connection()
        try:
            keys = [member_key(m) for m in fragment.members.tolist()]
            friendships: list[tuple[int, int, int]] = []
            for key, row in conn.table("member").rows(keys, columns=[b"f", b"i"]):
                m = int(key)
                friendships += [(m, f, CONFIRMED) for f in _ids(row, b"f:") if m < f]
                friendships += [(i, m, PENDING) for i in _ids(row, b"i:")]
            rids = [member_key(r) for r in fragment.resources[:, 0].tolist()]
            comments = [
                (int(key), mid)
                for key, row in conn.table("comment").rows(rids)
                for mid in _ids(row, b"c:")
            ]
        finally:
            conn.close()
        return FragmentContents(friendships, comments)

    def connect(self) -> "HBaseConnection":
        if not self.ready:
            raise StoreError("create_schema or use_schema must run before connect")
        return HBaseConnection(self._connection())

    def describe(self) -> str:
        return hbase.describe(self.options)

    def counters(self) -> dict[str, int]:
        return {}

    def close(self) -> None:
        pass


class HBaseConnection:
    """One Thrift connection per BG thread (a happybase connection is not thread-safe)."""

    def __init__(self, conn: happybase.Connection) -> None:
        self.conn = conn
        self.member = conn.table("member")
        self.resource = conn.table("resource")
        self.comment = conn.table("comment")

    def _has(self, table: happybase.Table, key: bytes, column: bytes, what: str) -> None:
        if column not in table.row(key, columns=[column]):
            raise StoreError(f"{what}: no matching row")

    def view_profile(self, requester: int, member: int) -> Profile:
        row = self.member.row(member_key(member))
        if ATTRS not in row:
            raise StoreError(f"member {member} not found")
        friends = pending = 0
        for col in row:
            if col.startswith(b"f:"):
                friends += 1
            elif col.startswith(b"i:"):
                pending += 1
        return Profile(member, json.loads(row[ATTRS]), friends, int(row[RESOURCES]),
                       pending if requester == member else None, row.get(PIC))  # fmt: skip

    def _members(self, member: int, family: bytes) -> list[MemberRow]:
        ids = _ids(self.member.row(member_key(member), columns=[family[:1]]), family)
        if not ids:
            return []
        rows = self.member.rows([member_key(m) for m in ids], columns=[ATTRS, TPIC])
        return [MemberRow(int(k), json.loads(r[ATTRS]), r.get(TPIC)) for k, r in rows]

    def list_friends(self, requester: int, member: int) -> list[MemberRow]:
        return self._members(member, b"f:")

    def view_friend_requests(self, member: int) -> list[MemberRow]:
        return self._members(member, b"i:")

    def invite_friend(self, inviter: int, invitee: int) -> None:
        self.member.put(member_key(invitee), {b"i:%d" % inviter: b""})

    def accept_friend_request(self, inviter: int, invitee: int) -> None:
        key = member_key(invitee)
        self._has(self.member, key, b"i:%d" % inviter, f"accept invitation {inviter}->{invitee}")
        with self.member.batch() as b:
            b.put(key, {b"f:%d" % inviter: b""})
            b.delete(key, columns=[b"i:%d" % inviter])
            b.put(member_key(inviter), {b"f:%d" % invitee: b""})

    def reject_friend_request(self, inviter: int, invitee: int) -> None:
        key = member_key(invitee)
        self._has(self.member, key, b"i:%d" % inviter, f"reject invitation {inviter}->{invitee}")
        self.member.delete(key, columns=[b"i:%d" % inviter])

    def thaw_friendship(self, member: int, friend: int) -> None:
        key = member_key(member)
        self._has(self.member, key, b"f:%d" % friend, f"thaw friendship {member}-{friend}")
        with self.member.batch() as b:
            b.delete(key, columns=[b"f:%d" % friend])
            b.delete(member_key(friend), columns=[b"f:%d" % member])

    def view_top_k_resources(self, requester: int, member: int, k: int) -> list[ResourceRow]:
        rows = self.resource.scan(row_prefix=struct.pack(">Q", member), limit=k)
        return [ResourceRow(int(r[b"r:rid"]), int(r[b"r:creator"]), member) for _k, r in rows]

    def view_comments(self, requester: int, rid: int) -> list[CommentRow]:
        row = self.comment.row(member_key(rid))
        out = []
        for col, value in row.items():
            commenter, text = json.loads(value)
            out.append(CommentRow(rid, int(col[2:]), commenter, text))
        return out

    def post_comment(self, commenter: int, rid: int, mid: int, text: str) -> None:
        self.comment.put(member_key(rid), {b"c:%d" % mid: json.dumps([commenter, text]).encode()})

    def delete_comment(self, rid: int, mid: int) -> None:
        key = member_key(rid)
        self._has(self.comment, key, b"c:%d" % mid, f"comment {rid}/{mid}")
        self.comment.delete(key, columns=[b"c:%d" % mid])

    def close(self) -> None:
        self.conn.close()
