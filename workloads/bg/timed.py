"""The one wrapper that times every store call and logs tracked reads and writes.

Bindings never time themselves. Each call records (action, status, thread,
intended start, actual start, end); the intended start is when the schedule
(inter-arrival or think time) wanted the action to begin, so response time
(end - intended) and service time (end - start) are both available.

A write that raised has an unknown outcome: it is logged with end = NEVER so the
validator treats it as possibly applied at any time after its start, or never.
"""

from collections.abc import Callable
from time import monotonic_ns
from typing import Any, Protocol

from bgbench.validation.logformat import NEVER, READ, WRITE
from bgbench.workloads.bg.actions import Action, Item
from bgbench.workloads.bg.store import BGConnection, CommentRow, MemberRow, Profile, ResourceRow

OK = 0
ERROR = 1

FRIENDS, PENDING, RESOURCES, COMMENTS = (
    Item.FRIEND_COUNT,
    Item.PENDING_COUNT,
    Item.RESOURCE_COUNT,
    Item.COMMENT_COUNT,
)


class Recorder(Protocol):
    """Where one thread's measurements go (the worker's measurement module)."""

    thread: int
    actions: list[tuple[int, int, int, int, int, int, int]]
    records: list[tuple[int, int, int, int, int, int, int, int, int]]
    live: list[int]  # response times since the last live cut (ns)
    in_call: int  # when the store call in progress began (monotonic ns); 0 between calls

    def error(self, action: int, exc: BaseException) -> None: ...
    def maybe_flush(self) -> None: ...


class TimedConnection:
    """Times and logs every action of one thread. Methods return None when the store failed."""

    def __init__(self, conn: BGConnection, recorder: Recorder) -> None:
        self.conn = conn
        self.rec = recorder
        self.thread = recorder.thread

    def _call(
        self, code: Action, intended: int, sid: int, fn: Callable[..., Any], *args: Any
    ) -> tuple[Any, int, int] | None:
        start = self.rec.in_call = monotonic_ns()
        try:
            out = fn(*args)
        except Exception as exc:
            end = monotonic_ns()
            self.rec.in_call = 0
            self.rec.actions.append((code, ERROR, self.thread, intended, start, end, sid))
            self.rec.live.append(end - intended)
            self.rec.error(code, exc)
            return None
        end = monotonic_ns()
        self.rec.in_call = 0
        self.rec.actions.append((code, OK, self.thread, intended, start, end, sid))
        self.rec.live.append(end - intended)
        return out, start, end

    def _read(self, item: Item, item_id: int, s: int, e: int, value: int, code: Action, sid: int):
        self.rec.records.append((READ, item, code, self.thread, item_id, s, e, value, sid))

    def _writes(self, code: Action, sid: int, s: int, e: int, deltas: list[tuple[Item, int, int]]):
        for item, item_id, delta in deltas:
            self.rec.records.append((WRITE, item, code, self.thread, item_id, s, e, delta, sid))
        self.rec.maybe_flush()

    def _write_call(
        self,
        code: Action,
        intended: int,
        sid: int,
        deltas: list[tuple[Item, int, int]],
        fn: Callable[..., Any],
        *args: Any,
    ) -> bool:
        start = self.rec.in_call = monotonic_ns()
        try:
            fn(*args)
        except Exception as exc:
            end = monotonic_ns()
            self.rec.in_call = 0
            self.rec.actions.append((code, ERROR, self.thread, intended, start, end, sid))
            self.rec.live.append(end - intended)
            self.rec.error(code, exc)
            self._writes(code, sid, start, NEVER, deltas)
            return False
        end = monotonic_ns()
        self.rec.in_call = 0
        self.rec.actions.append((code, OK, self.thread, intended, start, end, sid))
        self.rec.live.append(end - intended)
        self._writes(code, sid, start, end, deltas)
        return True

    # -- reads -------------------------------------------------------------------
    def view_profile(self, requester: int, member: int, sid: int, intended: int) -> Profile | None:
        got = self._call(Action.VP, intended, sid, self.conn.view_profile, requester, member)
        if got is None:
            return None
        p, s, e = got
        self._read(FRIENDS, member, s, e, p.friend_count, Action.VP, sid)
        self._read(RESOURCES, member, s, e, p.resource_count, Action.VP, sid)
        if requester == member:
            pending = -1 if p.pending_count is None else p.pending_count
            self._read(PENDING, member, s, e, pending, Action.VP, sid)
        self.rec.maybe_flush()
        return p

    def list_friends(
        self, requester: int, member: int, sid: int, intended: int
    ) -> list[MemberRow] | None:
        got = self._call(Action.LF, intended, sid, self.conn.list_friends, requester, member)
        if got is None:
            return None
        rows, s, e = got
        self._read(FRIENDS, member, s, e, len(rows), Action.LF, sid)
        self.rec.maybe_flush()
        return rows  # type: ignore[no-any-return]

    def view_friend_requests(self, member: int, sid: int, intended: int) -> list[MemberRow] | None:
        got = self._call(Action.VFR, intended, sid, self.conn.view_friend_requests, member)
        if got is None:
            return None
        rows, s, e = got
        self._read(PENDING, member, s, e, len(rows), Action.VFR, sid)
        self.rec.maybe_flush()
        return rows  # type: ignore[no-any-return]

    def view_top_k_resources(
        self, requester: int, member: int, k: int, sid: int, intended: int
    ) -> list[ResourceRow] | None:
        got = self._call(
            Action.VTR, intended, sid, self.conn.view_top_k_resources, requester, member, k
        )
        return None if got is None else got[0]

    def view_comments(
        self, requester: int, rid: int, sid: int, intended: int
    ) -> list[CommentRow] | None:
        got = self._call(Action.VCR, intended, sid, self.conn.view_comments, requester, rid)
        if got is None:
            return None
        rows, s, e = got
        self._read(COMMENTS, rid, s, e, len(rows), Action.VCR, sid)
        self.rec.maybe_flush()
        return rows  # type: ignore[no-any-return]

    # -- writes ------------------------------------------------------------------
    def invite_friend(self, inviter: int, invitee: int, sid: int, intended: int) -> bool:
        deltas = [(PENDING, invitee, 1)]
        return self._write_call(
            Action.IF, intended, sid, deltas, self.conn.invite_friend, inviter, invitee
        )

    def accept_friend_request(self, inviter: int, invitee: int, sid: int, intended: int) -> bool:
        deltas = [(PENDING, invitee, -1), (FRIENDS, invitee, 1), (FRIENDS, inviter, 1)]
        return self._write_call(
            Action.AFR, intended, sid, deltas, self.conn.accept_friend_request, inviter, invitee
        )

    def reject_friend_request(self, inviter: int, invitee: int, sid: int, intended: int) -> bool:
        deltas = [(PENDING, invitee, -1)]
        return self._write_call(
            Action.RFR, intended, sid, deltas, self.conn.reject_friend_request, inviter, invitee
        )

    def thaw_friendship(self, member: int, friend: int, sid: int, intended: int) -> bool:
        deltas = [(FRIENDS, member, -1), (FRIENDS, friend, -1)]
        return self._write_call(
            Action.TF, intended, sid, deltas, self.conn.thaw_friendship, member, friend
        )

    def post_comment(
        self, commenter: int, rid: int, mid: int, text: str, sid: int, intended: int
    ) -> bool:
        deltas = [(COMMENTS, rid, 1)]
        return self._write_call(
            Action.PCR, intended, sid, deltas, self.conn.post_comment, commenter, rid, mid, text
        )

    def delete_comment(self, rid: int, mid: int, sid: int, intended: int) -> bool:
        deltas = [(COMMENTS, rid, -1)]
        return self._write_call(
            Action.DCR, intended, sid, deltas, self.conn.delete_comment, rid, mid
        )
