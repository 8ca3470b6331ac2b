"""BG's Cassandra statements and the actions on them: blocking (CassandraConnection) and
as asyncio tasks (CassandraAsyncConnection over cassandra-driver's execute_async; its
subclass in cassandra_acsylla.py over acsylla). cassandra.py's binding hands them out."""

from typing import Any

from cassandra.cluster import Session
from cassandra.query import BatchStatement, BatchType, PreparedStatement

from bgbench.drivers.cassandra import SessionConnection, level
from bgbench.errors import StoreError
from bgbench.workloads.bg.store import CommentRow, MemberRow, Profile, ResourceRow
from bgbench.workloads.bg.stores.options import CassandraOptions

FRIEND, INVITER = 0, 1  # clustering kinds in a member's partition


# Every statement: its CQL and whether it writes (it runs at the write consistency level).
CQL = {
    "profile": ("SELECT kind, count(other), attrs, pic, resources FROM {ks}.member "
                "WHERE mid = ? GROUP BY kind", False),
    "members": ("SELECT other, oattrs, otpic FROM {ks}.member WHERE mid = ? AND kind = ?", False),
    "relation": ("SELECT oattrs, otpic, attrs, tpic FROM {ks}.member WHERE mid = ? "
                 "AND kind = ? AND other = ?", False),
    "statics": ("SELECT attrs, tpic FROM {ks}.member WHERE mid = ? LIMIT 1", False),
    "relations": ("SELECT kind, other FROM {ks}.member WHERE mid = ?", False),
    "top_k": ("SELECT rid, creator FROM {ks}.wall WHERE wall = ? LIMIT ?", False),
    "comments": ("SELECT mid, commenter, content FROM {ks}.comment WHERE rid = ?", False),
    "comment": ("SELECT mid FROM {ks}.comment WHERE rid = ? AND mid = ?", False),
    "put_relation": ("INSERT INTO {ks}.member (mid, kind, other, oattrs, otpic) "
                     "VALUES (?, ?, ?, ?, ?)", True),
    "drop_relation": ("DELETE FROM {ks}.member WHERE mid = ? AND kind = ? AND other = ?", True),
    "put_comment": ("INSERT INTO {ks}.comment (rid, mid, commenter, content) "
                    "VALUES (?, ?, ?, ?)", True),
    "drop_comment": ("DELETE FROM {ks}.comment WHERE rid = ? AND mid = ?", True),
    "put_member": ("INSERT INTO {ks}.member (mid, attrs, pic, tpic, resources) "
                   "VALUES (?, ?, ?, ?, ?)", True),
    "put_resource": ("INSERT INTO {ks}.wall (wall, rid, creator) VALUES (?, ?, ?)", True),
    "wipe_member": ("DELETE FROM {ks}.member USING TIMESTAMP ? WHERE mid = ?", True),
    "wipe_wall": ("DELETE FROM {ks}.wall USING TIMESTAMP ? WHERE wall = ?", True),
    "wipe_comments": ("DELETE FROM {ks}.comment USING TIMESTAMP ? WHERE rid = ?", True),
}  # fmt: skip


class Statements:
    """Every statement of CQL, prepared once per load process, with its consistency level."""

    profile: PreparedStatement
    members: PreparedStatement
    relation: PreparedStatement
    statics: PreparedStatement
    relations: PreparedStatement
    top_k: PreparedStatement
    comments: PreparedStatement
    comment: PreparedStatement
    put_relation: PreparedStatement
    drop_relation: PreparedStatement
    put_comment: PreparedStatement
    drop_comment: PreparedStatement
    put_member: PreparedStatement
    put_resource: PreparedStatement
    wipe_member: PreparedStatement
    wipe_wall: PreparedStatement
    wipe_comments: PreparedStatement

    def __init__(self, session: Session, options: CassandraOptions) -> None:
        read, write = level(options.read_consistency), level(options.write_consistency)
        self.write_level = write
        for name, (cql, writes) in CQL.items():
            statement = session.prepare(cql.format(ks=options.keyspace))
            statement.consistency_level = write if writes else read
            setattr(self, name, statement)


# Rows are plain tuples in the order of the statements' columns (see Statements).


def _profile(requester: int, member: int, rows: list[Any]) -> Profile:
    if not rows:
        raise StoreError(f"member {member} not found")
    counts = {kind: count for kind, count, *_ in rows}
    _, _, attrs, pic, resources = rows[0]
    pending = counts.get(INVITER, 0) if requester == member else None
    return Profile(member, attrs or [], counts.get(FRIEND, 0), resources or 0, pending, pic)


def _members(rows: list[Any]) -> list[MemberRow]:
    return [MemberRow(other, oattrs or [], otpic) for other, oattrs, otpic in rows]


def _resources(member: int, rows: list[Any]) -> list[ResourceRow]:
    return [ResourceRow(rid, creator, member) for rid, creator in rows]


def _comments(rid: int, rows: list[Any]) -> list[CommentRow]:
    return [CommentRow(rid, mid, commenter, text) for mid, commenter, text in rows]


Changes = list[tuple[Any, tuple[Any, ...]]]  # (statement, arguments) for one logged batch


def _befriend(st: Any, inviter: int, invitee: int, row: tuple[Any, ...]) -> Changes:
    oattrs, otpic, attrs, tpic = row  # the inviter's copy in the invitee's row, the invitee's own
    return [
        (st.drop_relation, (invitee, INVITER, inviter)),
        (st.put_relation, (invitee, FRIEND, inviter, oattrs, otpic)),
        (st.put_relation, (inviter, FRIEND, invitee, attrs, tpic)),
    ]


def _unfriend(st: Any, member: int, friend: int) -> Changes:
    return [
        (st.drop_relation, (member, FRIEND, friend)),
        (st.drop_relation, (friend, FRIEND, member)),
    ]


def _logged(st: Statements, *changes: tuple[PreparedStatement, tuple[Any, ...]]) -> BatchStatement:
    batch = BatchStatement(BatchType.LOGGED, consistency_level=st.write_level)
    for statement, args in changes:
        batch.add(statement, args)
    return batch


class CassandraConnection:
    """A thread's view of the shared session (the driver's session is thread-safe)."""

    def __init__(self, session: Session, statements: Statements) -> None:
        self.s = session
        self.st = statements

    def _one(
        self, statement: PreparedStatement, args: tuple[Any, ...], what: str
    ) -> tuple[Any, ...]:
        row = self.s.execute(statement, args).one()
        if row is None:
            raise StoreError(f"{what}: no matching row")
        return row  # type: ignore[no-any-return]

    def view_profile(self, requester: int, member: int) -> Profile:
        return _profile(requester, member, self.s.execute(self.st.profile, (member,)).all())

    def list_friends(self, requester: int, member: int) -> list[MemberRow]:
        return _members(self.s.execute(self.st.members, (member, FRIEND)))

    def view_friend_requests(self, member: int) -> list[MemberRow]:
        return _members(self.s.execute(self.st.members, (member, INVITER)))

    def invite_friend(self, inviter: int, invitee: int) -> None:
        attrs, tpic = self._one(self.st.statics, (inviter,), f"invite from {inviter}")
        self.s.execute(self.st.put_relation, (invitee, INVITER, inviter, attrs, tpic))

    def accept_friend_request(self, inviter: int, invitee: int) -> None:
        row = self._one(
            self.st.relation, (invitee, INVITER, inviter), f"accept invitation {inviter}->{invitee}"
        )
        self.s.execute(_logged(self.st, *_befriend(self.st, inviter, invitee, row)))

    def reject_friend_request(self, inviter: int, invitee: int) -> None:
        self._one(
            self.st.relation, (invitee, INVITER, inviter), f"reject invitation {inviter}->{invitee}"
        )
        self.s.execute(self.st.drop_relation, (invitee, INVITER, inviter))

    def thaw_friendship(self, member: int, friend: int) -> None:
        self._one(self.st.relation, (member, FRIEND, friend), f"thaw friendship {member}-{friend}")
        self.s.execute(_logged(self.st, *_unfriend(self.st, member, friend)))

    def view_top_k_resources(self, requester: int, member: int, k: int) -> list[ResourceRow]:
        return _resources(member, self.s.execute(self.st.top_k, (member, k)))

    def view_comments(self, requester: int, rid: int) -> list[CommentRow]:
        return _comments(rid, self.s.execute(self.st.comments, (rid,)))

    def post_comment(self, commenter: int, rid: int, mid: int, text: str) -> None:
        self.s.execute(self.st.put_comment, (rid, mid, commenter, text))

    def delete_comment(self, rid: int, mid: int) -> None:
        self._one(self.st.comment, (rid, mid), f"comment {rid}/{mid}")
        self.s.execute(self.st.drop_comment, (rid, mid))

    def close(self) -> None:
        pass


class CassandraAsyncConnection(SessionConnection[Statements]):
    """A socialite task's view of the shared session."""

    __slots__ = ()

    async def _rows(self, statement: Any, args: tuple[Any, ...]) -> list[Any]:
        """Every row, as the blocking ResultSet would page through them."""
        rf = self.execute(statement, args)
        rows = await self._answer(rf)
        if rf.has_more_pages:
            rows = list(rows)
            while rf.has_more_pages:
                rf.start_fetching_next_page()
                # Callbacks stay registered across pages: replace them. An old one that
                # fires first finds its future done; a new one added after the page
                # arrived runs at once.
                rf.clear_callbacks()
                rows += await self._answer(rf)
        return rows if rows is not None else []  # None: a retry policy ignored an error

    async def _one(self, statement: Any, args: tuple[Any, ...], what: str) -> tuple[Any, ...]:
        rows = await self._answer(self.execute(statement, args))
        if not rows:
            raise StoreError(f"{what}: no matching row")
        return rows[0]  # type: ignore[no-any-return]

    async def _run(self, statement: Any, args: tuple[Any, ...]) -> None:
        await self._answer(self.execute(statement, args))

    async def _batch(self, changes: Changes) -> None:
        await self._answer(self.execute(_logged(self.st, *changes)))

    async def view_profile(self, requester: int, member: int) -> Profile:
        return _profile(requester, member, await self._rows(self.st.profile, (member,)))

    async def list_friends(self, requester: int, member: int) -> list[MemberRow]:
        return _members(await self._rows(self.st.members, (member, FRIEND)))

    async def view_friend_requests(self, member: int) -> list[MemberRow]:
        return _members(await self._rows(self.st.members, (member, INVITER)))

    async def invite_friend(self, inviter: int, invitee: int) -> None:
        attrs, tpic = await self._one(self.st.statics, (inviter,), f"invite from {inviter}")
        await self._run(self.st.put_relation, (invitee, INVITER, inviter, attrs, tpic))

    async def accept_friend_request(self, inviter: int, invitee: int) -> None:
        row = await self._one(
            self.st.relation, (invitee, INVITER, inviter), f"accept invitation {inviter}->{invitee}"
        )
        await self._batch(_befriend(self.st, inviter, invitee, row))

    async def reject_friend_request(self, inviter: int, invitee: int) -> None:
        await self._one(
            self.st.relation, (invitee, INVITER, inviter), f"reject invitation {inviter}->{invitee}"
        )
        await self._run(self.st.drop_relation, (invitee, INVITER, inviter))

    async def thaw_friendship(self, member: int, friend: int) -> None:
        await self._one(
            self.st.relation, (member, FRIEND, friend), f"thaw friendship {member}-{friend}"
        )
        await self._batch(_unfriend(self.st, member, friend))

    async def view_top_k_resources(self, requester: int, member: int, k: int) -> list[ResourceRow]:
        return _resources(member, await self._rows(self.st.top_k, (member, k)))

    async def view_comments(self, requester: int, rid: int) -> list[CommentRow]:
        return _comments(rid, await self._rows(self.st.comments, (rid,)))

    async def post_comment(self, commenter: int, rid: int, mid: int, text: str) -> None:
        await self._run(self.st.put_comment, (rid, mid, commenter, text))

    async def delete_comment(self, rid: int, mid: int) -> None:
        await self._one(self.st.comment, (rid, mid), f"comment {rid}/{mid}")
        await self._run(self.st.drop_comment, (rid, mid))

    async def close(self) -> None:
        pass
