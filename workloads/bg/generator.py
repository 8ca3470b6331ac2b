"""BG database generator (paper section B, Figure 1), one self-contained fragment at a time.

Everything is a deterministic function of (database config, seed, fragment plan):
no friendship, wall post or comment crosses fragments, and the initial value of
every tracked item follows from the same inputs without querying a store.

- Friendships (friendship_distribution uniform, the default): members of a fragment sit
  on a ring; each is linked to the phi/2 next members, so everyone has exactly phi
  relationships. Zipfian: a configuration model with BG's weights, mean degree phi
  (workloads/bg/relationships.py). A link is confirmed with probability confperc;
  otherwise it is a pending invitation from the first member of the pair to the second.
- Resources: member m creates resources m*rho .. m*rho+rho-1, each posted on the
  wall of a member of the same fragment chosen at random (possibly m): uniformly, or
  with BG's weights (resource_distribution zipfian).
- Comments: each resource starts with commentcountperresource comments, ids
  0..c-1 within the resource, by random members of the fragment (comments anyone) or
  by the wall's owner or one of its friends (comments friends).
"""

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from bgbench.workloads.bg.config import BGDatabaseConfig
from bgbench.workloads.bg.relationships import friend_commenters, zipf_pairs, zipf_walls
from bgbench.workloads.zipf import LocalZipf, assign_fragments, fragment_members

PENDING = 1
CONFIRMED = 2

_ALPHABET = np.frombuffer(
    b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", np.uint8
)


def _no_progress() -> None:
    pass


@dataclass(frozen=True)
class FragmentPlan:
    """How the database is cut: fragment count and each fragment's capacity weight."""

    capacities: tuple[float, ...]
    theta: float

    @property
    def count(self) -> int:
        return len(self.capacities)


class Fragment:
    """One fragment: its members, relationships, resources, comments and initial values."""

    def __init__(self, db: BGDatabaseConfig, plan: FragmentPlan, index: int) -> None:
        if not 0 <= index < plan.count:
            raise ValueError(f"fragment {index} outside 0..{plan.count - 1}")
        self.db = db
        self.plan = plan
        self.index = index
        owner = assign_fragments(db.usercount, plan.theta, plan.capacities)
        self.members = fragment_members(owner, index)
        n = len(self.members)
        if n <= db.members_per_relationship:
            raise ValueError(
                f"fragment {index} has {n} members, too few for friendcountperuser="
                f"{db.friendcountperuser} ({db.friendship_distribution} friendships): "
                "raise usercount or use fewer fragments"
            )
        # Called as bindings read the generated rows: the load process's liveness beat.
        self.progress: Callable[[], None] = _no_progress
        self._rng = np.random.default_rng([db.seed, index, 0xB6])
        self._text = _ALPHABET[self._rng.integers(0, len(_ALPHABET), 1 << 16)].tobytes().decode()

    @property
    def size(self) -> int:
        return len(self.members)

    def local_zipf(self) -> LocalZipf:
        return LocalZipf(self.members, self.plan.theta, self.db.usercount)

    # -- members ---------------------------------------------------------------
    def attributes(self, member: int) -> list[str]:
        """The member's string attributes (deterministic, cheap)."""
        self.progress()
        length = self.db.attrlength
        span = len(self._text) - length
        out = []
        for j in range(self.db.attrcount):
            start = (member * 7919 + j * 104729) % span
            out.append(self._text[start : start + length])
        return out

    @cached_property
    def thumbnail(self) -> bytes | None:
        if not self.db.insertimage:
            return None
        rng = np.random.default_rng([self.db.seed, 0x7B])
        return rng.integers(0, 256, self.db.thumbnailsize * 1024, dtype=np.uint8).tobytes()

    @cached_property
    def profile_image(self) -> bytes | None:
        if not self.db.insertimage:
            return None
        rng = np.random.default_rng([self.db.seed, 0x1A])
        return rng.integers(0, 256, self.db.imagesize * 1024, dtype=np.uint8).tobytes()

    # -- friendships -------------------------------------------------------------
    @cached_property
    def friendships(self) -> np.ndarray:
        """Rows of (inviter, invitee, status) with status PENDING or CONFIRMED."""
        n, half = self.size, self.db.friendcountperuser // 2
        if half == 0:
            return np.empty((0, 3), dtype=np.int64)
        if self.db.friendship_distribution == "zipfian":
            rng = np.random.default_rng([self.db.seed, self.index, 0xF2])
            pairs = zipf_pairs(
                n, self.db.friendcountperuser, self.db.relationship_theta, rng, self.progress
            )
            first, second = pairs[:, 0], pairs[:, 1]
        else:
            local = np.arange(n)
            first = np.repeat(local, half)
            second = (first + np.tile(np.arange(1, half + 1), n)) % n
            rng = np.random.default_rng([self.db.seed, self.index, 0xF1])
        confirmed = rng.random(len(first)) < self.db.confperc
        status = np.where(confirmed, CONFIRMED, PENDING)
        return np.column_stack([self.members[first], self.members[second], status])

    # -- resources and comments --------------------------------------------------
    @cached_property
    def resources(self) -> np.ndarray:
        """Rows of (rid, creator, wall member)."""
        rho = self.db.resourcecountperuser
        creators = np.repeat(self.members, rho)
        rids = creators * rho + np.tile(np.arange(rho), self.size)
        if self.db.resource_distribution == "zipfian":
            rng = np.random.default_rng([self.db.seed, self.index, 0x5F])
            walls = self.members[zipf_walls(self.size, len(rids), self.db.relationship_theta, rng)]
        else:
            rng = np.random.default_rng([self.db.seed, self.index, 0x5E])
            walls = self.members[rng.integers(0, self.size, len(rids))]
        return np.column_stack([rids, creators, walls]).astype(np.int64)

    def comments(self) -> Iterator[tuple[int, int, int, str]]:
        """(rid, mid, commenter, text) of the comments present at load time."""
        per = self.db.commentcountperresource
        if per == 0:
            return
        rng = np.random.default_rng([self.db.seed, self.index, 0xC0])
        rids = self.resources[:, 0]
        if self.db.comments == "friends":
            f = self.friendships
            confirmed = self.local_index(f[f[:, 2] == CONFIRMED][:, :2])
            walls = self.local_index(self.resources[:, 2])
            local = friend_commenters(walls, per, confirmed, self.size, rng)
            commenters = self.members[local]
        else:
            commenters = self.members[rng.integers(0, self.size, (len(rids), per))]
        length = self.db.commentlength
        span = len(self._text) - length
        for row, rid in enumerate(rids.tolist()):
            self.progress()
            for mid in range(per):
                start = (rid * 31 + mid * 7) % span
                yield rid, mid, int(commenters[row, mid]), self._text[start : start + length]

    def comment_text(self, rid: int, mid: int) -> str:
        length = self.db.commentlength
        start = (rid * 31 + mid * 7) % (len(self._text) - length)
        return self._text[start : start + length]

    # -- initial values of tracked items -------------------------------------------
    def local_index(self, members: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.members, members)

    @cached_property
    def initial_friend_count(self) -> np.ndarray:
        f = self.friendships
        confirmed = f[f[:, 2] == CONFIRMED]
        ends = np.concatenate([confirmed[:, 0], confirmed[:, 1]])
        return np.bincount(self.local_index(ends), minlength=self.size).astype(np.int64)

    @cached_property
    def initial_pending_count(self) -> np.ndarray:
        f = self.friendships
        invitees = f[f[:, 2] == PENDING][:, 1]
        return np.bincount(self.local_index(invitees), minlength=self.size).astype(np.int64)

    @cached_property
    def initial_resource_count(self) -> np.ndarray:
        walls = self.resources[:, 2]
        return np.bincount(self.local_index(walls), minlength=self.size).astype(np.int64)

    @property
    def initial_comment_count(self) -> int:
        return self.db.commentcountperresource
