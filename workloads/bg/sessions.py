"""The 11 actions with their target choices, and the 8 sessions of the paper (section D).

An Actor plays sessions for one socialite loop (a task, or a thread driving the
coroutines of a blocking store without suspending). A unit of a mix is either one action
(acted by a socialite on Zipfian-chosen targets) or a session. Each action gets an
intended start: the session's arrival for its first action, then the end of the
think time after the previous action. A unit with no valid target (no pending
invitation to accept, say) performs fewer actions; one whose action failed ends
there. The recorder counts what was performed.
"""

import random
from collections.abc import Awaitable, Callable, Coroutine
from time import monotonic_ns
from typing import Any

from bgbench.workloads.bg.actions import Action
from bgbench.workloads.bg.bookkeeping import FragmentState
from bgbench.workloads.bg.timed import TimedConnection


class Actor:
    def __init__(
        self,
        conn: TimedConnection,
        state: FragmentState,
        draw: Callable[[], int],
        rng: random.Random,
        think: Callable[[float], Awaitable[bool]],
        think_ms: float,
        topk: int,
        comment_text: Callable[[int, int], str],
    ) -> None:
        self.conn = conn
        self.state = state
        self.draw = draw
        self.rng = rng
        self.think = think  # sleeps, False when the experiment is stopping
        self.think_s = think_ms / 1000.0
        self.think_ns = int(think_ms * 1_000_000)
        self.topk = topk
        self.comment_text = comment_text
        self.sid = 0
        self.intended = 0

    def play(
        self, unit: str, socialite: int, sid: int, arrival_ns: int
    ) -> Coroutine[Any, Any, Any]:
        self.sid, self.intended = sid, arrival_ns
        return UNITS[unit](self, socialite)

    # -- pacing ------------------------------------------------------------------
    async def pause(self) -> bool:
        """Think between two actions of a session; False when the experiment is stopping.
        The next action's intended start is when the think time ends, so a client that
        wakes late counts its lateness in the response time."""
        due = monotonic_ns() + self.think_ns
        if not await self.think(self.think_s):
            return False
        self.intended = due if self.think_ns else monotonic_ns()
        return True

    # -- actions -----------------------------------------------------------------
    async def vp(self, a: int, b: int) -> bool:
        return await self.conn.view_profile(a, b, self.sid, self.intended) is not None

    async def lf(self, a: int, b: int) -> bool:
        return await self.conn.list_friends(a, b, self.sid, self.intended) is not None

    async def vfr(self, a: int) -> bool:
        return await self.conn.view_friend_requests(a, self.sid, self.intended) is not None

    async def vtr(self, a: int, b: int) -> bool:
        return (
            await self.conn.view_top_k_resources(a, b, self.topk, self.sid, self.intended)
            is not None
        )

    async def vcr(self, a: int, rid: int) -> bool:
        return await self.conn.view_comments(a, rid, self.sid, self.intended) is not None

    async def invite(self, a: int) -> bool | None:
        """None when a has nobody left to invite."""
        b = self.state.reserve_invitee(a, self.draw)
        if b is None:
            return None
        ok = await self.conn.invite_friend(a, b, self.sid, self.intended)
        self.state.finish_invite(a, b, ok)
        return ok

    async def answer(self, a: int, accept: bool) -> bool | None:
        inviter = self.state.reserve_inviter(a, self.rng)
        if inviter is None:
            return None
        if accept:
            ok = await self.conn.accept_friend_request(inviter, a, self.sid, self.intended)
        else:
            ok = await self.conn.reject_friend_request(inviter, a, self.sid, self.intended)
        self.state.finish_answer(inviter, a, accept, ok)
        return ok

    async def thaw(self, a: int) -> bool | None:
        f = self.state.reserve_friend(a, self.rng)
        if f is None:
            return None
        ok = await self.conn.thaw_friendship(a, f, self.sid, self.intended)
        self.state.finish_thaw(a, f, ok)
        return ok

    async def post(self, a: int, rid: int) -> bool:
        mid = self.state.new_comment_id(rid)
        ok = await self.conn.post_comment(
            a, rid, mid, self.comment_text(rid, mid), self.sid, self.intended
        )
        self.state.finish_post(rid, mid, ok)
        return ok

    async def delete(self, rid: int, mid: int) -> bool:
        ok = await self.conn.delete_comment(rid, mid, self.sid, self.intended)
        self.state.finish_delete(ok)
        return ok

    def random_wall_resource(self, member: int) -> int | None:
        rids = self.state.resources_on_wall(member)
        return self.rng.choice(rids) if rids else None


# -- single actions as units ------------------------------------------------------------


# The reads return the timed call's coroutine itself: one coroutine less per action.
def unit_vp(actor: Actor, a: int) -> Coroutine[Any, Any, Any]:
    return actor.conn.view_profile(a, actor.draw(), actor.sid, actor.intended)


def unit_lf(actor: Actor, a: int) -> Coroutine[Any, Any, Any]:
    return actor.conn.list_friends(a, actor.draw(), actor.sid, actor.intended)


def unit_vfr(actor: Actor, a: int) -> Coroutine[Any, Any, Any]:
    return actor.conn.view_friend_requests(a, actor.sid, actor.intended)


async def unit_if(actor: Actor, a: int) -> None:
    await actor.invite(a)


async def unit_afr(actor: Actor, a: int) -> None:
    await actor.answer(a, accept=True)


async def unit_rfr(actor: Actor, a: int) -> None:
    await actor.answer(a, accept=False)


async def unit_tf(actor: Actor, a: int) -> None:
    await actor.thaw(a)


def unit_vtr(actor: Actor, a: int) -> Coroutine[Any, Any, Any]:
    return actor.conn.view_top_k_resources(a, a, actor.topk, actor.sid, actor.intended)


async def unit_vcr(actor: Actor, a: int) -> None:
    rid = actor.random_wall_resource(actor.draw())
    if rid is not None:
        await actor.vcr(a, rid)


async def unit_pcr(actor: Actor, a: int) -> None:
    rid = actor.random_wall_resource(actor.draw())
    if rid is not None:
        await actor.post(a, rid)


async def unit_dcr(actor: Actor, a: int) -> None:
    picked = actor.state.reserve_comment(a, actor.rng)
    if picked is not None:
        await actor.delete(*picked)


# -- sessions (paper section D) ---------------------------------------------------------
# Each step runs only if the previous one succeeded and the experiment is not stopping.


async def _self_view(actor: Actor, a: int) -> bool:
    """VP(a, a), VTR(a, a): the start of every session."""
    return (
        await actor.vp(a, a)
        and await actor.pause()
        and await actor.vtr(a, a)
        and await actor.pause()
    )


async def view_self_profile(actor: Actor, a: int) -> None:
    if await actor.vp(a, a) and await actor.pause():
        await actor.vtr(a, a)


async def view_friend_profile(actor: Actor, a: int) -> None:
    if not await _self_view(actor, a):
        return
    if not await actor.lf(a, a) or not await actor.pause():
        return
    # Targets come from BG's own picture of the fragment, never from the store's answer.
    b = actor.state.random_friend(a, actor.rng)
    if b is not None and await actor.vp(a, b) and await actor.pause():
        await actor.vtr(a, b)


async def post_comment_on_resource(actor: Actor, a: int) -> None:
    if not await _self_view(actor, a):
        return
    b = actor.draw()
    if not (await actor.vp(a, b) and await actor.pause()):
        return
    if not await actor.vtr(a, b) or not await actor.pause():
        return
    rid = actor.random_wall_resource(b)
    if (
        rid is not None
        and await actor.vcr(a, rid)
        and await actor.pause()
        and await actor.post(a, rid)
        and await actor.pause()
    ):
        await actor.vcr(a, rid)


async def delete_comment_on_resource(actor: Actor, a: int) -> None:
    if not await _self_view(actor, a):
        return
    picked = actor.state.reserve_comment(a, actor.rng)
    if picked is None:
        return
    rid, mid = picked
    if not (await actor.vcr(a, rid) and await actor.pause()):
        actor.state.release_comment(rid, mid)
        return
    if await actor.delete(rid, mid) and await actor.pause():
        await actor.vcr(a, rid)


async def invite_friend(actor: Actor, a: int) -> None:
    if not await _self_view(actor, a):
        return
    if not await actor.lf(a, a) or not await actor.pause():
        return
    if await actor.invite(a) and await actor.pause():
        await actor.vfr(a)


async def _answer_session(actor: Actor, a: int, accept: bool) -> None:
    if not await _self_view(actor, a):
        return
    if (
        not await actor.lf(a, a)
        or not await actor.pause()
        or not await actor.vfr(a)
        or not await actor.pause()
    ):
        return
    if (
        await actor.answer(a, accept)
        and await actor.pause()
        and await actor.vfr(a)
        and await actor.pause()
    ):
        await actor.lf(a, a)


async def accept_friend_request(actor: Actor, a: int) -> None:
    await _answer_session(actor, a, accept=True)


async def reject_friend_request(actor: Actor, a: int) -> None:
    await _answer_session(actor, a, accept=False)


async def thaw_friendship(actor: Actor, a: int) -> None:
    if not await _self_view(actor, a):
        return
    if not await actor.lf(a, a) or not await actor.pause():
        return
    if await actor.thaw(a) and await actor.pause():
        await actor.lf(a, a)


UNITS: dict[str, Callable[[Actor, int], Coroutine[Any, Any, Any]]] = {
    Action.VP.name: unit_vp,
    Action.LF.name: unit_lf,
    Action.VFR.name: unit_vfr,
    Action.IF.name: unit_if,
    Action.AFR.name: unit_afr,
    Action.RFR.name: unit_rfr,
    Action.TF.name: unit_tf,
    Action.VTR.name: unit_vtr,
    Action.VCR.name: unit_vcr,
    Action.PCR.name: unit_pcr,
    Action.DCR.name: unit_dcr,
    "ViewSelfProfileSession": view_self_profile,
    "ViewFrdProfileSession": view_friend_profile,
    "PostCmtOnResSession": post_comment_on_resource,
    "DeleteCmtOnResSession": delete_comment_on_resource,
    "InviteFrdSession": invite_friend,
    "AcceptFrdReqSession": accept_friend_request,
    "RejectFrdReqSession": reject_friend_request,
    "ThawFrdshipSession": thaw_friendship,
}
