"""The 11 actions with their target choices, and the 8 sessions of the paper (section D).

An Actor plays sessions for one thread. A unit of a mix is either one action
(acted by a socialite on Zipfian-chosen targets) or a session. Each action gets an
intended start: the session's arrival for its first action, then the end of the
think time after the previous action. A unit with no valid target (no pending
invitation to accept, say) performs fewer actions; one whose action failed ends
there. The recorder counts what was performed.
"""

import random
import threading
from collections.abc import Callable
from time import monotonic_ns

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
        stop: threading.Event,
        think_ms: float,
        topk: int,
        comment_text: Callable[[int, int], str],
    ) -> None:
        self.conn = conn
        self.state = state
        self.draw = draw
        self.rng = rng
        self.stop = stop
        self.think_s = think_ms / 1000.0
        self.topk = topk
        self.comment_text = comment_text
        self.sid = 0
        self.intended = 0

    def play(self, unit: str, socialite: int, sid: int, arrival_ns: int) -> None:
        self.sid, self.intended = sid, arrival_ns
        UNITS[unit](self, socialite)

    # -- pacing ------------------------------------------------------------------
    def pause(self) -> bool:
        """Think between two actions of a session; False when the experiment is stopping."""
        if self.think_s > 0 and self.stop.wait(self.think_s):
            return False
        self.intended = monotonic_ns()
        return not self.stop.is_set()

    # -- actions -----------------------------------------------------------------
    def vp(self, a: int, b: int) -> bool:
        return self.conn.view_profile(a, b, self.sid, self.intended) is not None

    def lf(self, a: int, b: int) -> bool:
        return self.conn.list_friends(a, b, self.sid, self.intended) is not None

    def vfr(self, a: int) -> bool:
        return self.conn.view_friend_requests(a, self.sid, self.intended) is not None

    def vtr(self, a: int, b: int) -> bool:
        return self.conn.view_top_k_resources(a, b, self.topk, self.sid, self.intended) is not None

    def vcr(self, a: int, rid: int) -> bool:
        return self.conn.view_comments(a, rid, self.sid, self.intended) is not None

    def invite(self, a: int) -> bool | None:
        """None when a has nobody left to invite."""
        b = self.state.reserve_invitee(a, self.draw)
        if b is None:
            return None
        ok = self.conn.invite_friend(a, b, self.sid, self.intended)
        self.state.finish_invite(a, b, ok)
        return ok

    def answer(self, a: int, accept: bool) -> bool | None:
        inviter = self.state.reserve_inviter(a, self.rng)
        if inviter is None:
            return None
        if accept:
            ok = self.conn.accept_friend_request(inviter, a, self.sid, self.intended)
        else:
            ok = self.conn.reject_friend_request(inviter, a, self.sid, self.intended)
        self.state.finish_answer(inviter, a, accept, ok)
        return ok

    def thaw(self, a: int) -> bool | None:
        f = self.state.reserve_friend(a, self.rng)
        if f is None:
            return None
        ok = self.conn.thaw_friendship(a, f, self.sid, self.intended)
        self.state.finish_thaw(a, f, ok)
        return ok

    def post(self, a: int, rid: int) -> bool:
        mid = self.state.new_comment_id(rid)
        ok = self.conn.post_comment(
            a, rid, mid, self.comment_text(rid, mid), self.sid, self.intended
        )
        self.state.finish_post(rid, mid, ok)
        return ok

    def delete(self, rid: int, mid: int) -> bool:
        ok = self.conn.delete_comment(rid, mid, self.sid, self.intended)
        self.state.finish_delete(ok)
        return ok

    def random_wall_resource(self, member: int) -> int | None:
        rids = self.state.resources_on_wall(member)
        return self.rng.choice(rids) if rids else None


# -- single actions as units ------------------------------------------------------------


def unit_vp(actor: Actor, a: int) -> None:
    actor.vp(a, actor.draw())


def unit_lf(actor: Actor, a: int) -> None:
    actor.lf(a, actor.draw())


def unit_vfr(actor: Actor, a: int) -> None:
    actor.vfr(a)


def unit_if(actor: Actor, a: int) -> None:
    actor.invite(a)


def unit_afr(actor: Actor, a: int) -> None:
    actor.answer(a, accept=True)


def unit_rfr(actor: Actor, a: int) -> None:
    actor.answer(a, accept=False)


def unit_tf(actor: Actor, a: int) -> None:
    actor.thaw(a)


def unit_vtr(actor: Actor, a: int) -> None:
    actor.vtr(a, a)


def unit_vcr(actor: Actor, a: int) -> None:
    rid = actor.random_wall_resource(actor.draw())
    if rid is not None:
        actor.vcr(a, rid)


def unit_pcr(actor: Actor, a: int) -> None:
    rid = actor.random_wall_resource(actor.draw())
    if rid is not None:
        actor.post(a, rid)


def unit_dcr(actor: Actor, a: int) -> None:
    picked = actor.state.reserve_comment(a, actor.rng)
    if picked is not None:
        actor.delete(*picked)


# -- sessions (paper section D) ---------------------------------------------------------
# Each step runs only if the previous one succeeded and the experiment is not stopping.


def _self_view(actor: Actor, a: int) -> bool:
    """VP(a, a), VTR(a, a): the start of every session."""
    return actor.vp(a, a) and actor.pause() and actor.vtr(a, a) and actor.pause()


def view_self_profile(actor: Actor, a: int) -> None:
    if actor.vp(a, a) and actor.pause():
        actor.vtr(a, a)


def view_friend_profile(actor: Actor, a: int) -> None:
    if not _self_view(actor, a):
        return
    if not actor.lf(a, a) or not actor.pause():
        return
    # Targets come from BG's own picture of the fragment, never from the store's answer.
    b = actor.state.random_friend(a, actor.rng)
    if b is not None and actor.vp(a, b) and actor.pause():
        actor.vtr(a, b)


def post_comment_on_resource(actor: Actor, a: int) -> None:
    if not _self_view(actor, a):
        return
    b = actor.draw()
    if not (actor.vp(a, b) and actor.pause()):
        return
    if not actor.vtr(a, b) or not actor.pause():
        return
    rid = actor.random_wall_resource(b)
    if (
        rid is not None
        and actor.vcr(a, rid)
        and actor.pause()
        and actor.post(a, rid)
        and actor.pause()
    ):
        actor.vcr(a, rid)


def delete_comment_on_resource(actor: Actor, a: int) -> None:
    if not _self_view(actor, a):
        return
    picked = actor.state.reserve_comment(a, actor.rng)
    if picked is None:
        return
    rid, mid = picked
    if not (actor.vcr(a, rid) and actor.pause()):
        actor.state.release_comment(rid, mid)
        return
    if actor.delete(rid, mid) and actor.pause():
        actor.vcr(a, rid)


def invite_friend(actor: Actor, a: int) -> None:
    if not _self_view(actor, a):
        return
    if not actor.lf(a, a) or not actor.pause():
        return
    if actor.invite(a) and actor.pause():
        actor.vfr(a)


def _answer_session(actor: Actor, a: int, accept: bool) -> None:
    if not _self_view(actor, a):
        return
    if not actor.lf(a, a) or not actor.pause() or not actor.vfr(a) or not actor.pause():
        return
    if actor.answer(a, accept) and actor.pause() and actor.vfr(a) and actor.pause():
        actor.lf(a, a)


def accept_friend_request(actor: Actor, a: int) -> None:
    _answer_session(actor, a, accept=True)


def reject_friend_request(actor: Actor, a: int) -> None:
    _answer_session(actor, a, accept=False)


def thaw_friendship(actor: Actor, a: int) -> None:
    if not _self_view(actor, a):
        return
    if not actor.lf(a, a) or not actor.pause():
        return
    if actor.thaw(a) and actor.pause():
        actor.lf(a, a)


UNITS: dict[str, Callable[[Actor, int], None]] = {
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
