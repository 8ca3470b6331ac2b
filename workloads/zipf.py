"""Zipfian weights and D-Zipfian fragments (docs/architecture.md, "Normative rules").

Member ids are global ranks minus one: member 0 is the most popular. A fragment is
a set of members; its local distribution is the global weights restricted to it
and renormalised. If each worker's share of requests equals its fragment's global
mass, the mixture of local distributions is exactly the global one, so the
assignment makes each fragment's mass match its worker's capacity share.
"""

import heapq
from collections.abc import Sequence

import numpy as np


def zipf_weights(n: int, theta: float) -> np.ndarray:
    """Probabilities of ranks 1..n: proportional to i^-(1-theta) (BG's DistOfAccess)."""
    if n < 1:
        raise ValueError("n must be >= 1")
    w = np.arange(1, n + 1, dtype=np.float64) ** -(1.0 - theta)
    weights: np.ndarray = w / w.sum()
    return weights


def capacity_shares(capacities: Sequence[float]) -> np.ndarray:
    c = np.asarray(capacities, dtype=np.float64)
    if c.ndim != 1 or len(c) == 0 or np.any(c <= 0) or not np.all(np.isfinite(c)):
        raise ValueError("capacity weights must be a non-empty list of positive numbers")
    shares: np.ndarray = c / c.sum()
    return shares


def assign_fragments(n: int, theta: float, capacities: Sequence[float]) -> np.ndarray:
    """Fragment index of every member, so each fragment's mass tracks its capacity share.

    Members are taken from most to least popular. Each of the heaviest goes to the
    fragment whose relative fill (mass / share) would be smallest after taking it;
    once weights are small against every share, a heap on the current fill does
    the same job in O(log F).
    """
    p = zipf_weights(n, theta)
    shares = capacity_shares(capacities)
    n_frag = len(shares)
    mass = np.zeros(n_frag)
    owner = np.empty(n, dtype=np.int32)
    exact_prefix = min(n, 64 * n_frag)
    for i in range(exact_prefix):
        k = int(np.argmin((mass + p[i]) / shares))
        owner[i] = k
        mass[k] += p[i]
    heap = [(mass[k] / shares[k], k) for k in range(n_frag)]
    heapq.heapify(heap)
    for i in range(exact_prefix, n):
        _, k = heapq.heappop(heap)
        owner[i] = k
        mass[k] += p[i]
        heapq.heappush(heap, (mass[k] / shares[k], k))
    return owner


def fragment_members(owner: np.ndarray, fragment: int) -> np.ndarray:
    """Member ids (sorted, which is popularity order) of one fragment."""
    return np.flatnonzero(owner == fragment).astype(np.int64)


def mixture(n: int, theta: float, owner: np.ndarray, request_shares: Sequence[float]) -> np.ndarray:
    """Exact distribution of member draws when fragment k serves request_shares[k] of requests."""
    p = zipf_weights(n, theta)
    shares = capacity_shares(request_shares)
    mass = np.bincount(owner, weights=p, minlength=len(shares))
    member_shares: np.ndarray = shares[owner] * p / mass[owner]
    return member_shares


def total_variation(p: np.ndarray, q: np.ndarray) -> float:
    return float(0.5 * np.abs(p - q).sum())


class LocalZipf:
    """Vectorised draws of members from one fragment's local distribution.

    A draw is the first member whose cumulative weight exceeds a uniform u (a binary
    search of the cumulative weights). Random u miss the cache at every step of a binary
    search (about 120 ns a draw here), so a guide table gives each of `GUIDE_PER_MEMBER`
    x members equal slices of [0, 1) the first candidate for the u that fall in it, and a
    few vectorised steps finish the search: the same member the binary search gives,
    at a fraction of its cost.
    """

    GUIDE_PER_MEMBER = 2

    def __init__(self, members: np.ndarray, theta: float, n_total: int) -> None:
        if len(members) == 0:
            raise ValueError("a fragment needs at least one member")
        self.members = np.asarray(members, dtype=np.int64)
        weights = zipf_weights(n_total, theta)[self.members]
        self.probabilities = weights / weights.sum()
        self._cdf = np.cumsum(self.probabilities)
        self._cdf[-1] = 1.0
        slices = self.GUIDE_PER_MEMBER * len(self.members)
        self._slices = float(slices)
        # the first index whose cumulative weight exceeds the slice's lower bound
        bounds = np.arange(slices, dtype=np.float64) / slices
        self._guide = np.searchsorted(self._cdf, bounds, side="right").astype(np.intp)

    def draw_indexes(self, rng: np.random.Generator, count: int) -> np.ndarray:
        """Local indexes (0 = most popular member of the fragment): for each uniform u,
        the first index whose cumulative weight exceeds it."""
        u = rng.random(count)
        cdf = self._cdf
        index = self._guide[(u * self._slices).astype(np.intp)]
        # forward to the first cumulative weight above u (cdf[-1] = 1 > u stops it)
        ahead = np.flatnonzero(cdf[index] <= u)
        while len(ahead):
            index[ahead] += 1
            ahead = ahead[cdf[index[ahead]] <= u[ahead]]
        # a slice's bound rounded above u: step back while the previous weight exceeds u
        back = np.flatnonzero(index > 0)
        back = back[cdf[index[back] - 1] > u[back]]
        while len(back):
            index[back] -= 1
            back = back[(index[back] > 0) & (cdf[np.maximum(index[back] - 1, 0)] > u[back])]
        return index

    def draw(self, rng: np.random.Generator, count: int) -> np.ndarray:
        """Member ids."""
        members: np.ndarray = self.members[self.draw_indexes(rng, count)]
        return members
