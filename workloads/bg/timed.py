"""BG's timed connection: every store call of the 11 actions timed and logged.

The SDK's Timer records each call's intended start, start, end and status; this adds
which tracked items each BG action reads or writes. The paths below are written out in
full over the recorder (rather than through the unit context's helpers): they are the
per-action cost. On an event loop each socialite is a task and the store call is
awaited; for a blocking store, `sdk.connection_for` wraps its connection and the engine
drives the coroutines in a thread without a loop (they never suspend).
"""

from time import monotonic_ns
from typing import Any

from bgbench.sdk import NEVER, OK, READ, WRITE, Timer
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


class TimedConnection(Timer[AsyncBGConnection]):
    """BG's eleven actions through the generic timer, for one socialite runner.

    Read methods return None when the store failed, writes False.
    """

    __slots__ = ()

    # The successful paths below are written out in full: this is the per-action cost.

    # -- reads -------------------------------------------------------------------
    async def view_profile(
        self, requester: int, member: int, sid: int, intended: int
    ) -> Profile | None:
        self.in_call = start = monotonic_ns()
        try:
            p = await self.conn.view_profile(requester, member)
        except Exception as exc:
            self.failed(VP, intended, start, sid, exc)
            return None
        end = monotonic_ns()
        self.in_call = self.consecutive_errors = 0
        self.count += 1
        th = self.thread
        rec = self.rec
        rec.acts.extend((VP, OK, th, intended, start, end, sid))
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
            self.failed(code, intended, start, sid, exc)
            return None
        end = monotonic_ns()
        self.in_call = self.consecutive_errors = 0
        self.count += 1
        th = self.thread
        rec = self.rec
        rec.acts.extend((code, OK, th, intended, start, end, sid))
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
            self.failed(VTR, intended, start, sid, exc)
            return None
        end = monotonic_ns()
        self.in_call = self.consecutive_errors = 0
        self.count += 1
        rec = self.rec
        rec.acts.extend((VTR, OK, self.thread, intended, start, end, sid))
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
            self.failed(code, intended, start, sid, exc)
            end = NEVER
            ok = False
        else:
            end = monotonic_ns()
            self.in_call = self.consecutive_errors = 0
            self.count += 1
            self.rec.acts.extend((code, OK, self.thread, intended, start, end, sid))
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
