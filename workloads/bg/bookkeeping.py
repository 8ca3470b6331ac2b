"""In-memory picture of one fragment, for choosing valid targets under concurrency.

BG does not pick the target of a write from what the store returns (a stale store
would make it pick wrong): it keeps its own view of friendships, invitations and
comments (paper section D). Every choice reserves what it picked (a relationship
or a comment) until the action ends, so two threads never act on the same
invitation, friendship or comment at once. A write that failed leaves its target
reserved for good and marks the state uncertain: the next experiment must reload
or read the store back.

Member exclusivity: acquire_socialite() hands out a member no other thread is
acting as (when exclusive is on). Claiming a socialite and every read-only choice take
no lock; the reservations of write targets take one short lock when socialites are
threads (`threaded=True`), and none on an event loop, where one task runs at a time.
"""

import random
import threading
from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from bgbench.workloads.bg.generator import CONFIRMED, PENDING, Fragment

if TYPE_CHECKING:
    from _collections_abc import dict_items, dict_keys, dict_values

    from bgbench.workloads.bg.store import FragmentContents


def _pair(a: int, b: int) -> tuple[int, int]:
    return (a, b) if a < b else (b, a)


class _NoLock:
    """The lock of a picture only one event loop's tasks touch: between two awaits a task
    runs alone."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None


class FragmentState:
    def __init__(
        self,
        fragment: Fragment,
        exclusive: bool = True,
        contents: "FragmentContents | None" = None,
        threaded: bool = True,
    ) -> None:
        """BG's picture of a freshly loaded fragment, or of `contents` read back from a store."""
        self.fragment = fragment
        self.exclusive = exclusive
        self._lock: Any = threading.Lock() if threaded else _NoLock()
        self.members = fragment.members
        # Built a member at a time, not a row at a time: at T=4096 a fragment holds hundreds
        # of thousands of friendships and resources. Each set and list gets its elements in
        # the order of the rows, as one add per row would.
        rows = fragment.friendships if contents is None else _rows(contents.friendships)
        inviter, invitee, status = rows[:, 0], rows[:, 1], rows[:, 2]
        confirmed, pending = status == CONFIRMED, status == PENDING
        a, b = inviter[confirmed], invitee[confirmed]
        self.friends: dict[int, set[int]] = _grouped(
            np.column_stack((a, b)).ravel(), np.column_stack((b, a)).ravel(), set
        )
        a, b = inviter[pending], invitee[pending]
        self.invited_by: dict[int, set[int]] = _grouped(b, a, set)  # invitee -> inviters
        self.invited: dict[int, set[int]] = _grouped(a, b, set)  # inviter -> invitees
        resources = fragment.resources
        self.wall_resources: dict[int, list[int]] = _grouped(resources[:, 2], resources[:, 0], list)
        # Manipulation (comments: friends): only the wall's owner and the owner's friends post.
        self.friends_comment = fragment.db.comments == "friends"
        self.wall_of: dict[int, int] = (
            dict(zip(resources[:, 0].tolist(), resources[:, 2].tolist(), strict=True))
            if self.friends_comment
            else {}
        )
        per = fragment.db.commentcountperresource
        rids = resources[:, 0].tolist()
        self._rids = np.sort(resources[:, 0])
        self._fresh_count = per
        self.next_mid: dict[int, int] = dict.fromkeys(rids, per)
        # Fresh: every resource has comments 0 .. per-1 (its list made when first touched),
        # the next is `per`.
        self.comments: dict[int, list[int]] = _Comments(per, self.next_mid)
        if contents is not None:
            for rid in rids:
                self.comments[rid] = []
            for rid, mid in contents.comments:
                self.comments[rid].append(mid)
            self.next_mid = {
                rid: max(mids, default=per - 1) + 1 for rid, mids in self.comments.items()
            }
        self._busy_pairs: set[tuple[int, int]] = set()
        self._active: dict[int, object] = {}  # member -> claim of the runner acting as them
        self.uncertain = False  # a write failed: the store's state is no longer known

    # -- exclusivity -------------------------------------------------------------
    def acquire_socialite(self, draw: Callable[[], int], attempts: int = 64) -> int | None:
        """A member to act as, drawn by `draw`, that no other thread is acting as.

        dict.setdefault is one atomic step, so claiming a member needs no lock. The claim
        is the caller's `draw` (each runner has its own, and acts as one member at a
        time): no object made per call.
        """
        if not self.exclusive:
            return draw()
        active = self._active
        m = draw()
        if active.setdefault(m, draw) is draw:
            return m
        for _ in range(attempts - 1):
            m = draw()
            if active.setdefault(m, draw) is draw:
                return m
        return None

    def release_socialite(self, member: int) -> None:
        if self.exclusive:
            self._active.pop(member, None)

    # -- friendship choices ----------------------------------------------------------
    def _related(self, a: int, b: int) -> bool:
        return b in self.friends[a] or b in self.invited[a] or b in self.invited_by[a]

    def reserve_invitee(
        self, inviter: int, draw: Callable[[], int], attempts: int = 32
    ) -> int | None:
        """A member the inviter has no relationship with, reserved for an invitation."""
        with self._lock:
            for _ in range(attempts):
                b = draw()
                pair = _pair(inviter, b)
                if b != inviter and not self._related(inviter, b) and pair not in self._busy_pairs:
                    self._busy_pairs.add(pair)
                    return b
        return None

    def reserve_inviter(self, invitee: int, rng: random.Random) -> int | None:
        """A member whose pending invitation to `invitee` nobody else is handling."""
        with self._lock:
            free = [
                a for a in self.invited_by[invitee] if _pair(a, invitee) not in self._busy_pairs
            ]
            if not free:
                return None
            a = rng.choice(free)
            self._busy_pairs.add(_pair(a, invitee))
            return a

    def reserve_friend(self, member: int, rng: random.Random) -> int | None:
        with self._lock:
            free = [f for f in self.friends[member] if _pair(f, member) not in self._busy_pairs]
            if not free:
                return None
            f = rng.choice(free)
            self._busy_pairs.add(_pair(f, member))
            return f

    def random_friend(self, member: int, rng: random.Random) -> int | None:
        friends = list(self.friends[member])  # one C-level copy: no other thread interleaves
        return rng.choice(friends) if friends else None

    def finish_invite(self, inviter: int, invitee: int, ok: bool) -> None:
        with self._lock:
            if ok:
                self.invited[inviter].add(invitee)
                self.invited_by[invitee].add(inviter)
            self._settle(_pair(inviter, invitee), ok)

    def finish_answer(self, inviter: int, invitee: int, accepted: bool, ok: bool) -> None:
        with self._lock:
            if ok:
                self.invited[inviter].discard(invitee)
                self.invited_by[invitee].discard(inviter)
                if accepted:
                    self.friends[inviter].add(invitee)
                    self.friends[invitee].add(inviter)
            self._settle(_pair(inviter, invitee), ok)

    def finish_thaw(self, member: int, friend: int, ok: bool) -> None:
        with self._lock:
            if ok:
                self.friends[member].discard(friend)
                self.friends[friend].discard(member)
            self._settle(_pair(member, friend), ok)

    def _settle(self, pair: tuple[int, int], ok: bool) -> None:
        if ok:
            self._busy_pairs.discard(pair)
        else:
            self.uncertain = True  # keep the pair reserved: its state is unknown

    # -- comments ------------------------------------------------------------------
    def commentable_wall(self, member: int, rng: random.Random) -> int:
        """A wall `member` may comment on under Manipulation: their own or a friend's."""
        friends = list(self.friends[member])
        pick = rng.randrange(len(friends) + 1)
        return member if pick == len(friends) else friends[pick]

    def reserve_commenter(self, member: int, rid: int) -> int | None:
        """The wall of `rid` if `member` may comment on it now (under comments: friends, the
        owner or a friend, whose friendship stays reserved until release_commenter), else
        None."""
        wall = self.wall_of[rid]
        if wall == member:
            return wall
        pair = _pair(member, wall)
        with self._lock:
            if wall not in self.friends[member] or pair in self._busy_pairs:
                return None
            self._busy_pairs.add(pair)
        return wall

    def release_commenter(self, member: int, wall: int) -> None:
        if wall != member:
            with self._lock:
                self._busy_pairs.discard(_pair(member, wall))

    def resources_on_wall(self, member: int) -> list[int]:
        return self.wall_resources.get(member, [])

    def new_comment_id(self, rid: int) -> int:
        with self._lock:
            mid = self.next_mid[rid]
            self.next_mid[rid] = mid + 1
            return mid

    def finish_post(self, rid: int, mid: int, ok: bool) -> None:
        with self._lock:
            if ok:
                self.comments[rid].append(mid)
            else:
                self.uncertain = True

    def reserve_comment(self, member: int, rng: random.Random) -> tuple[int, int] | None:
        """A comment on a resource of `member`'s wall, removed from view while it is deleted."""
        with self._lock:
            candidates = [rid for rid in self.wall_resources.get(member, ()) if self.comments[rid]]
            if not candidates:
                return None
            rid = rng.choice(candidates)
            mids = self.comments[rid]
            mid = mids.pop(rng.randrange(len(mids)))
            return rid, mid

    def release_comment(self, rid: int, mid: int) -> None:
        """Give back a reserved comment that was not deleted after all."""
        with self._lock:
            self.comments[rid].append(mid)

    def finish_delete(self, ok: bool) -> None:
        if not ok:
            with self._lock:
                self.uncertain = True

    # -- values of tracked items (only meaningful when quiescent) -----------------------
    def friend_counts(self) -> np.ndarray:
        return np.array([len(self.friends[m]) for m in self.members.tolist()], dtype=np.int64)

    def pending_counts(self) -> np.ndarray:
        return np.array([len(self.invited_by[m]) for m in self.members.tolist()], dtype=np.int64)

    def comment_counts(self) -> tuple[np.ndarray, np.ndarray]:
        rids = self._rids.astype(np.int64)
        counts = np.full(len(rids), self._fresh_count, dtype=np.int64)
        touched = sorted(dict.keys(self.comments))  # the others hold their fresh comments
        counts[np.searchsorted(rids, touched)] = [len(self.comments[r]) for r in touched]
        return rids, counts


class _Comments(dict[int, list[int]]):
    """Comment ids per resource of the fragment; a resource's fresh list (0 .. per-1) is
    made when first asked for. An id outside the fragment is a KeyError, as before."""

    def __init__(self, per: int, known: dict[int, int]) -> None:
        super().__init__()
        self._per = per
        self._known = known

    def __missing__(self, rid: int) -> list[int]:
        if rid not in self._known:
            raise KeyError(rid)
        mids = self[rid] = list(range(self._per))
        return mids

    def _whole(self) -> "_Comments":
        """Every resource's list made: what iterating the whole picture sees."""
        if dict.__len__(self) < len(self._known):
            for rid in self._known:
                if not dict.__contains__(self, rid):
                    self[rid] = list(range(self._per))
        return self

    def __iter__(self) -> Iterator[int]:
        return dict.__iter__(self._whole())

    def __len__(self) -> int:
        return dict.__len__(self._whole())

    def keys(self) -> "dict_keys[int, list[int]]":
        return dict.keys(self._whole())

    def values(self) -> "dict_values[int, list[int]]":
        return dict.values(self._whole())

    def items(self) -> "dict_items[int, list[int]]":
        return dict.items(self._whole())


def _rows(friendships: list[tuple[int, int, int]]) -> np.ndarray:
    return np.array(friendships, dtype=np.int64).reshape(-1, 3)


def _grouped(keys: np.ndarray, values: np.ndarray, kind: type[set[int] | list[int]]) -> Any:
    """A defaultdict(kind) of each key's values (a set or a list), in the order given."""
    grouped: defaultdict[int, Any] = defaultdict(kind)
    if not len(keys):
        return grouped
    order = np.argsort(keys, kind="stable")
    keys, listed = keys[order], values[order].tolist()
    starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
    bounds = [*starts.tolist(), len(keys)]
    parts = map(listed.__getitem__, map(slice, bounds[:-1], bounds[1:]))
    grouped.update(zip(keys[starts].tolist(), map(kind, parts), strict=True))
    return grouped
