"""The one wrapper that times every store call and logs tracked reads and writes.

Bindings never time themselves. Each call records (action, status, runner, intended
start, actual start, end, session); the intended start is when the schedule
(inter-arrival or think time) wanted the action to begin, so response time
(end - intended) and service time (end - start) are both available.

The wrapper is asynchronous: on an event loop each socialite is a task and the store
call is awaited; for a blocking store, `store.Blocking` wraps its connection and the
engine drives the coroutines in a thread without a loop (they never suspend). Fields go
straight into the recorder's flat arrays (measurement.Recorder), one extend per action
and one per log record group: this is the per-action hot path.

A write that raised has an unknown outcome: it is logged with end = NEVER so the
validator treats it as possibly applied at any time after its start, or never.
"""

from time import monotonic_ns
from typing import Any

from bgbench.validation.logformat import NEVER, READ, WRITE
from bgbench.worker.measurement import ERROR, OK, Recorder
from bgbench.workloads.bg.actions import Action, Item
from bgbench.workloads.bg.store import (
    AsyncBGConnection,
    Profile,
    ResourceRow,
)

FRIENDS, PENDING, RESOURCES, COMMENTS = (
    int(Item.FRIEND_COUNT),
    int(Item.PENDING_COUNT),
    int(Item.RESOURCE_COUNT),
    int(Item.COMMENT_COUNT),
)
VP, LF, VFR, VTR, VCR = (int(a) for a in (Action.VP, Action.LF, Action.VFR, Action.VTR, Action.VCR))
IF, AFR, RFR, TF, PCR, DCR = (
    int(a) for a in (Action.IF, Action.AFR, Action.RFR, Action.TF, Action.PCR, Action.DCR)
)


class TimedConnection:
    """Times and logs every action of one socialite runner (a thread or a task).

    Read methods return None when the store failed, writes False. `in_call` is when the
    store call in progress began (monotonic ns), 0 between calls; `count` the actions
    performed; `consecutive_errors` the failures since the last success.
    """

    __slots__ = ("conn", "consecutive_errors", "count", "in_call", "rec", "thread")

    def __init__(self, conn: AsyncBGConnection, recorder: Recorder, thread: int) -> None:
        self.conn = conn
        self.rec = recorder
        self.thread = thread
        self.in_call = 0
        self.count = 0
        self.consecutive_errors = 0

    def _failed(self, code: int, intended: int, start: int, sid: int, exc: Exception) -> None:
        end = monotonic_ns()
        self.in_call = 0
        rec = self.rec
        rec.acts.extend((code, ERROR, self.thread, intended, start, end, sid))
        rec.live.append(end - intended)
        rec.error(code, exc)
        self.count += 1
        self.consecutive_errors += 1

    # The successful paths below are written out in full: this is the per-action cost.

    # -- reads -------------------------------------------------------------------
    async def view_profile(
        self, requester: int, member: int, sid: int, intended: int
    ) -> Profile | None:
        self.in_call = start = monotonic_ns()
        try:
            p = await self.conn.view_profile(requester, member)
        except Exception as exc:
            self._failed(VP, intended, start, sid, exc)
            return None
        end = monotonic_ns()
        self.in_call = self.consecutive_errors = 0
        self.count += 1
        th = self.thread
        rec = self.rec
        rec.acts.extend((VP, OK, th, intended, start, end, sid))
        rec.live.append(end - intended)
        if requester == member:
            pending = -1 if p.pending_count is None else p.pending_count
            rec.recs.extend((
                READ, FRIENDS, VP, th, member, start, end, p.friend_count, sid,
                READ, RESOURCES, VP, th, member, start, end, p.resource_count, sid,
                READ, PENDING, VP, th, member, start, end, pending, sid,
            ))  # fmt: skip
        else:
            rec.recs.extend((
                READ, FRIENDS, VP, th, member, start, end, p.friend_count, sid,
                READ, RESOURCES, VP, th, member, start, end, p.resource_count, sid,
            ))  # fmt: skip
        rec.maybe_flush()
        return p

    async def _listed(
        self, code: int, item: int, item_id: int, sid: int, intended: int, call: Any
    ) -> Any:
        self.in_call = start = monotonic_ns()
        try:
            rows = await call
        except Exception as exc:
            self._failed(code, intended, start, sid, exc)
            return None
        end = monotonic_ns()
        self.in_call = self.consecutive_errors = 0
        self.count += 1
        th = self.thread
        rec = self.rec
        rec.acts.extend((code, OK, th, intended, start, end, sid))
        rec.live.append(end - intended)
        rec.recs.extend((READ, item, code, th, item_id, start, end, len(rows), sid))
        rec.maybe_flush()
        return rows

    def list_friends(self, requester: int, member: int, sid: int, intended: int) -> Any:
        """A coroutine giving list[MemberRow] | None (as the other list reads)."""
        call = self.conn.list_friends(requester, member)
        return self._listed(LF, FRIENDS, member, sid, intended, call)

    def view_friend_requests(self, member: int, sid: int, intended: int) -> Any:
        call = self.conn.view_friend_requests(member)
        return self._listed(VFR, PENDING, member, sid, intended, call)

    def view_comments(self, requester: int, rid: int, sid: int, intended: int) -> Any:
        call = self.conn.view_comments(requester, rid)
        return self._listed(VCR, COMMENTS, rid, sid, intended, call)

    async def view_top_k_resources(
        self, requester: int, member: int, k: int, sid: int, intended: int
    ) -> list[ResourceRow] | None:
        self.in_call = start = monotonic_ns()
        try:
            rows = await self.conn.view_top_k_resources(requester, member, k)
        except Exception as exc:
            self._failed(VTR, intended, start, sid, exc)
            return None
        end = monotonic_ns()
        self.in_call = self.consecutive_errors = 0
        self.count += 1
        rec = self.rec
        rec.acts.extend((VTR, OK, self.thread, intended, start, end, sid))
        rec.live.append(end - intended)
        return rows

    # -- writes ------------------------------------------------------------------
    async def _write(
        self,
        code: int,
        intended: int,
        sid: int,
        deltas: tuple[tuple[int, int, int], ...],
        call: Any,
    ) -> bool:
        self.in_call = start = monotonic_ns()
        try:
            await call
        except Exception as exc:
            self._failed(code, intended, start, sid, exc)
            end = NEVER
            ok = False
        else:
            end = monotonic_ns()
            self.in_call = self.consecutive_errors = 0
            self.count += 1
            self.rec.acts.extend((code, OK, self.thread, intended, start, end, sid))
            self.rec.live.append(end - intended)
            ok = True
        recs, th = self.rec.recs, self.thread
        for item, item_id, delta in deltas:
            recs.extend((WRITE, item, code, th, item_id, start, end, delta, sid))
        self.rec.maybe_flush()
        return ok

    def invite_friend(self, inviter: int, invitee: int, sid: int, intended: int) -> Any:
        """A coroutine giving True when the write succeeded (as the other writes)."""
        call = self.conn.invite_friend(inviter, invitee)
        return self._write(IF, intended, sid, ((PENDING, invitee, 1),), call)

    def accept_friend_request(self, inviter: int, invitee: int, sid: int, intended: int) -> Any:
        deltas = ((PENDING, invitee, -1), (FRIENDS, invitee, 1), (FRIENDS, inviter, 1))
        call = self.conn.accept_friend_request(inviter, invitee)
        return self._write(AFR, intended, sid, deltas, call)

    def reject_friend_request(self, inviter: int, invitee: int, sid: int, intended: int) -> Any:
        call = self.conn.reject_friend_request(inviter, invitee)
        return self._write(RFR, intended, sid, ((PENDING, invitee, -1),), call)

    def thaw_friendship(self, member: int, friend: int, sid: int, intended: int) -> Any:
        deltas = ((FRIENDS, member, -1), (FRIENDS, friend, -1))
        call = self.conn.thaw_friendship(member, friend)
        return self._write(TF, intended, sid, deltas, call)

    def post_comment(
        self, commenter: int, rid: int, mid: int, text: str, sid: int, intended: int
    ) -> Any:
        call = self.conn.post_comment(commenter, rid, mid, text)
        return self._write(PCR, intended, sid, ((COMMENTS, rid, 1),), call)

    def delete_comment(self, rid: int, mid: int, sid: int, intended: int) -> Any:
        call = self.conn.delete_comment(rid, mid)
        return self._write(DCR, intended, sid, ((COMMENTS, rid, -1),), call)
