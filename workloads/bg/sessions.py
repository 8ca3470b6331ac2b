"""The 11 actions with their target choices, the steps of sessions, and BG's units.

An Actor plays units for one socialite runner (a task, or a thread driving the
coroutines of a blocking store without suspending), each with the runner's unit context
(sdk.UnitContext: session id, intended start, think). A unit of a mix is either one action
(acted by a socialite on Zipfian-chosen targets) or a session. Each action gets an
intended start: the session's arrival for its first action, then the end of the
think time after the previous action. A unit with no valid target (no pending
invitation to accept, say) performs fewer actions; one whose action failed ends
there. The recorder counts what was performed.

Sessions are data (bgbench.workloads.sessions): the 8 of the paper (section D) are
definitions in workloads/bg/session_defs.py, which also documents the step vocabulary
("VP(self)", "VCR(resource)", "IF", ...) that user sessions in `bg.workload.sessions`
are written in. The steps below implement that vocabulary; `unit_table` compiles the
user's sessions beside BG's. Single actions stay plain functions: no interpreter on
their path.
"""

import random
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

from bgbench.sdk import UnitContext
from bgbench.workloads.bg.actions import Action
from bgbench.workloads.bg.bookkeeping import FragmentState
from bgbench.workloads.bg.config import BGWorkloadConfig
from bgbench.workloads.bg.session_defs import BUILTIN_SESSIONS, STEP_NAMES
from bgbench.workloads.bg.timed import TimedConnection
from bgbench.workloads.sessions import Machine, SessionDef, Step

BGContext = UnitContext[TimedConnection]


class Actor:
    def __init__(
        self,
        conn: TimedConnection,
        state: FragmentState,
        draw: Callable[[], int],
        rng: random.Random,
        think_ms: float,
        topk: int,
        comment_text: Callable[[int, int], str],
        units: "Mapping[str, UnitFn] | None" = None,
    ) -> None:
        self.conn = conn
        self.state = state
        self.draw = draw
        self.rng = rng
        self.think_s = think_ms / 1000.0
        self.topk = topk
        self.comment_text = comment_text
        self._units = UNITS if units is None else units

    def play(self, unit: str, ctx: BGContext, socialite: int) -> Coroutine[Any, Any, Any]:
        return self._units[unit](self, ctx, socialite)

    # -- actions -----------------------------------------------------------------
    async def vp(self, ctx: BGContext, a: int, b: int) -> bool:
        return await self.conn.view_profile(a, b, ctx.sid, ctx.intended) is not None

    async def lf(self, ctx: BGContext, a: int, b: int) -> bool:
        return await self.conn.list_friends(a, b, ctx.sid, ctx.intended) is not None

    async def vfr(self, ctx: BGContext, a: int) -> bool:
        return await self.conn.view_friend_requests(a, ctx.sid, ctx.intended) is not None

    async def vtr(self, ctx: BGContext, a: int, b: int) -> bool:
        return (
            await self.conn.view_top_k_resources(a, b, self.topk, ctx.sid, ctx.intended) is not None
        )

    async def vcr(self, ctx: BGContext, a: int, rid: int) -> bool:
        return await self.conn.view_comments(a, rid, ctx.sid, ctx.intended) is not None

    async def invite(self, ctx: BGContext, a: int) -> bool | None:
        """None when a has nobody left to invite."""
        b = self.state.reserve_invitee(a, self.draw)
        if b is None:
            return None
        ok: bool = await self.conn.invite_friend(a, b, ctx.sid, ctx.intended)
        self.state.finish_invite(a, b, ok)
        return ok

    async def answer(self, ctx: BGContext, a: int, accept: bool) -> bool | None:
        inviter = self.state.reserve_inviter(a, self.rng)
        if inviter is None:
            return None
        ok: bool
        if accept:
            ok = await self.conn.accept_friend_request(inviter, a, ctx.sid, ctx.intended)
        else:
            ok = await self.conn.reject_friend_request(inviter, a, ctx.sid, ctx.intended)
        self.state.finish_answer(inviter, a, accept, ok)
        return ok

    async def thaw(self, ctx: BGContext, a: int) -> bool | None:
        f = self.state.reserve_friend(a, self.rng)
        if f is None:
            return None
        ok: bool = await self.conn.thaw_friendship(a, f, ctx.sid, ctx.intended)
        self.state.finish_thaw(a, f, ok)
        return ok

    async def post(self, ctx: BGContext, a: int, rid: int) -> bool | None:
        """None when comments are for friends and a is neither the wall's owner nor (now) a
        friend of the owner."""
        if self.state.friends_comment:
            wall = self.state.reserve_commenter(a, rid)
            if wall is None:
                return None
            try:
                return await self._post(ctx, a, rid)
            finally:
                self.state.release_commenter(a, wall)
        return await self._post(ctx, a, rid)

    async def _post(self, ctx: BGContext, a: int, rid: int) -> bool:
        mid = self.state.new_comment_id(rid)
        ok: bool = await self.conn.post_comment(
            a, rid, mid, self.comment_text(rid, mid), ctx.sid, ctx.intended
        )
        self.state.finish_post(rid, mid, ok)
        return ok

    async def delete(self, ctx: BGContext, rid: int, mid: int) -> bool:
        ok: bool = await self.conn.delete_comment(rid, mid, ctx.sid, ctx.intended)
        self.state.finish_delete(ok)
        return ok

    def random_wall_resource(self, member: int) -> int | None:
        rids = self.state.resources_on_wall(member)
        return self.rng.choice(rids) if rids else None


# -- single actions as units ------------------------------------------------------------


# The reads return the timed call's coroutine itself: one coroutine less per action.
def unit_vp(actor: Actor, ctx: BGContext, a: int) -> Coroutine[Any, Any, Any]:
    return actor.conn.view_profile(a, actor.draw(), ctx.sid, ctx.intended)


def unit_lf(actor: Actor, ctx: BGContext, a: int) -> Coroutine[Any, Any, Any]:
    read: Coroutine[Any, Any, Any] = actor.conn.list_friends(a, actor.draw(), ctx.sid, ctx.intended)
    return read


def unit_vfr(actor: Actor, ctx: BGContext, a: int) -> Coroutine[Any, Any, Any]:
    read: Coroutine[Any, Any, Any] = actor.conn.view_friend_requests(a, ctx.sid, ctx.intended)
    return read


async def unit_if(actor: Actor, ctx: BGContext, a: int) -> None:
    await actor.invite(ctx, a)


async def unit_afr(actor: Actor, ctx: BGContext, a: int) -> None:
    await actor.answer(ctx, a, accept=True)


async def unit_rfr(actor: Actor, ctx: BGContext, a: int) -> None:
    await actor.answer(ctx, a, accept=False)


async def unit_tf(actor: Actor, ctx: BGContext, a: int) -> None:
    await actor.thaw(ctx, a)


def unit_vtr(actor: Actor, ctx: BGContext, a: int) -> Coroutine[Any, Any, Any]:
    return actor.conn.view_top_k_resources(a, a, actor.topk, ctx.sid, ctx.intended)


async def unit_vcr(actor: Actor, ctx: BGContext, a: int) -> None:
    rid = actor.random_wall_resource(actor.draw())
    if rid is not None:
        await actor.vcr(ctx, a, rid)


async def unit_pcr(actor: Actor, ctx: BGContext, a: int) -> None:
    state = actor.state
    wall = state.commentable_wall(a, actor.rng) if state.friends_comment else actor.draw()
    rid = actor.random_wall_resource(wall)
    if rid is not None:
        await actor.post(ctx, a, rid)


async def unit_dcr(actor: Actor, ctx: BGContext, a: int) -> None:
    picked = actor.state.reserve_comment(a, actor.rng)
    if picked is not None:
        await actor.delete(ctx, *picked)


# -- steps of sessions (the vocabulary of session_defs.py) --------------------------------


class SessionContext:
    """What the steps of one session share: the socialite `a` and the targets chosen so
    far (None: not chosen yet)."""

    __slots__ = ("a", "actor", "comment", "friend", "member", "reserved", "rid", "unit")

    def __init__(self, actor: Actor, unit: BGContext, a: int) -> None:
        self.actor = actor
        self.unit = unit
        self.a = a
        self.friend: int | None = None
        self.member: int | None = None
        self.rid: int | None = None
        self.comment: tuple[int, int] | None = None  # (rid, mid) on a's wall
        self.reserved = False  # the comment is reserved, not deleted: give it back at the end

    async def pause(self, seconds: float | None) -> bool:
        """Think `seconds` (None: the workload's think time) between two steps; False when
        the experiment is stopping."""
        return await self.unit.pause(self.actor.think_s if seconds is None else seconds)

    def the_friend(self) -> int | None:
        # Targets come from BG's own picture of the fragment, never from the store's answer.
        if self.friend is None:
            self.friend = self.actor.state.random_friend(self.a, self.actor.rng)
        return self.friend

    def the_member(self) -> int:
        if self.member is None:
            self.member = self.actor.draw()
        return self.member

    def the_resource(self) -> int | None:
        if self.rid is None:
            self.rid = self.actor.random_wall_resource(self.the_member())
        return self.rid

    def own_comment(self) -> tuple[int, int] | None:
        if self.comment is None:
            self.comment = self.actor.state.reserve_comment(self.a, self.actor.rng)
            self.reserved = self.comment is not None
        return self.comment


def release_comment(c: SessionContext) -> None:
    """The cleanup of sessions with own-comment steps: a comment reserved and not deleted
    goes back to BG's picture."""
    if c.reserved and c.comment is not None:
        c.reserved = False
        c.actor.state.release_comment(*c.comment)


# Each step is one coroutine awaiting the timed call itself: no call in between.
async def _vp_self(c: SessionContext) -> bool:
    x = c.actor
    return await x.conn.view_profile(c.a, c.a, c.unit.sid, c.unit.intended) is not None


async def _vtr_self(c: SessionContext) -> bool:
    x = c.actor
    return (
        await x.conn.view_top_k_resources(c.a, c.a, x.topk, c.unit.sid, c.unit.intended) is not None
    )


async def _lf_self(c: SessionContext) -> bool:
    x = c.actor
    return await x.conn.list_friends(c.a, c.a, c.unit.sid, c.unit.intended) is not None


async def _vfr_self(c: SessionContext) -> bool:
    x = c.actor
    return await x.conn.view_friend_requests(c.a, c.unit.sid, c.unit.intended) is not None


async def _vp_friend(c: SessionContext) -> bool | None:
    b = c.the_friend()
    if b is None:
        return None
    x = c.actor
    return await x.conn.view_profile(c.a, b, c.unit.sid, c.unit.intended) is not None


async def _vtr_friend(c: SessionContext) -> bool | None:
    b = c.the_friend()
    if b is None:
        return None
    x = c.actor
    return (
        await x.conn.view_top_k_resources(c.a, b, x.topk, c.unit.sid, c.unit.intended) is not None
    )


async def _lf_friend(c: SessionContext) -> bool | None:
    b = c.the_friend()
    if b is None:
        return None
    x = c.actor
    return await x.conn.list_friends(c.a, b, c.unit.sid, c.unit.intended) is not None


async def _vp_member(c: SessionContext) -> bool:
    b = c.the_member()
    x = c.actor
    return await x.conn.view_profile(c.a, b, c.unit.sid, c.unit.intended) is not None


async def _vtr_member(c: SessionContext) -> bool:
    b = c.the_member()
    x = c.actor
    return (
        await x.conn.view_top_k_resources(c.a, b, x.topk, c.unit.sid, c.unit.intended) is not None
    )


async def _lf_member(c: SessionContext) -> bool:
    b = c.the_member()
    x = c.actor
    return await x.conn.list_friends(c.a, b, c.unit.sid, c.unit.intended) is not None


async def _vcr_resource(c: SessionContext) -> bool | None:
    rid = c.the_resource()
    if rid is None:
        return None
    x = c.actor
    return await x.conn.view_comments(c.a, rid, c.unit.sid, c.unit.intended) is not None


async def _pcr_resource(c: SessionContext) -> bool | None:
    rid = c.the_resource()
    return None if rid is None else await c.actor.post(c.unit, c.a, rid)


async def _vcr_own_comment(c: SessionContext) -> bool | None:
    picked = c.own_comment()
    if picked is None:
        return None
    x = c.actor
    return await x.conn.view_comments(c.a, picked[0], c.unit.sid, c.unit.intended) is not None


async def _dcr_own_comment(c: SessionContext) -> bool | None:
    if not c.reserved:
        c.comment = None  # the session's comment is deleted already: reserve another
    picked = c.own_comment()
    if picked is None:
        return None
    c.reserved = False  # from here its fate is the delete's, whatever happens
    return await c.actor.delete(c.unit, *picked)


async def _if(c: SessionContext) -> bool | None:
    return await c.actor.invite(c.unit, c.a)


async def _afr(c: SessionContext) -> bool | None:
    return await c.actor.answer(c.unit, c.a, accept=True)


async def _rfr(c: SessionContext) -> bool | None:
    return await c.actor.answer(c.unit, c.a, accept=False)


async def _tf(c: SessionContext) -> bool | None:
    return await c.actor.thaw(c.unit, c.a)


STEPS: dict[str, Step[SessionContext]] = {
    "VP(self)": _vp_self,
    "VTR(self)": _vtr_self,
    "LF(self)": _lf_self,
    "VFR(self)": _vfr_self,
    "VP(friend)": _vp_friend,
    "VTR(friend)": _vtr_friend,
    "LF(friend)": _lf_friend,
    "VP(member)": _vp_member,
    "VTR(member)": _vtr_member,
    "LF(member)": _lf_member,
    "VCR(resource)": _vcr_resource,
    "PCR(resource)": _pcr_resource,
    "VCR(own comment)": _vcr_own_comment,
    "DCR(own comment)": _dcr_own_comment,
    "IF": _if,
    "AFR": _afr,
    "RFR": _rfr,
    "TF": _tf,
}
assert tuple(STEPS) == STEP_NAMES, "session_defs.STEP_NAMES and STEPS must agree"


UnitFn = Callable[[Actor, BGContext, int], Coroutine[Any, Any, Any]]


_RESERVING = frozenset({"VCR(own comment)", "DCR(own comment)"})  # may hold a comment


def session_unit(name: str, definition: SessionDef) -> UnitFn:
    """A session definition as a unit of a mix; ValueError (one line) if it is not valid."""
    holds = any(definition.step_of(s) in _RESERVING for s in definition.states)
    play = Machine(name, definition, STEPS, cleanup=release_comment if holds else None).play

    def unit(actor: Actor, ctx: BGContext, a: int) -> Coroutine[Any, Any, Any]:
        c = SessionContext(actor, ctx, a)
        return play(c, actor.rng, c.pause)

    return unit


UNITS: dict[str, UnitFn] = {
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
    **{name: session_unit(name, d) for name, d in BUILTIN_SESSIONS.items()},
}


def unit_table(workload: BGWorkloadConfig) -> dict[str, UnitFn]:
    """BG's units (single actions and its 8 sessions) and the workload's own sessions."""
    table = dict(UNITS)
    for name, definition in workload.sessions.items():
        table[name] = session_unit(name, definition)
    return table
