"""Skewed relationships of one BG fragment (paper section B: "uniformly or using a Zipfian
distribution ... to assign 80% of friendships to 20% of members").

Weights are BG's Zipfian weights over the fragment's members in popularity order (its
first member weighs 1, the r-th r^-(1-theta)), so the members the workload draws most
also have the most friends, invitations and resources.

Friendships and invitations, a configuration model:
1. Degrees: the fragment's n*phi relationship ends are dealt to members with these
   weights (one multinomial draw), so the mean degree is exactly phi. No member may have
   more than n-1 relationships: ends beyond that are dealt again to the others, with the
   same weights.
2. Pairing: the ends are shuffled and paired. Self-loops and repeated pairs are re-paired
   with as many random sound pairs (their ends reshuffled together), which keeps every
   degree, until none is left or the count stops falling (a dense graph, phi close to n,
   where the hubs already know nearly everyone).
3. What could not be paired is dropped and as many new distinct pairs are drawn with both
   ends weighted by the same weights, so the number of relationships stays n*phi/2.

Resources: each member still creates rho resources (their ids do not change); the wall each
is posted on is drawn with the weights, so the resources on members' walls (what profiles
count and View Top-K Resources lists) follow them with mean rho.
"""

import numpy as np

from bgbench.workloads.zipf import zipf_weights

PAIRING_ROUNDS = 200
PAIRING_PATIENCE = 8  # rounds without fewer bad pairs before the rest is drawn anew
FILL_BATCHES = 10_000


def zipf_degrees(n: int, ends: int, theta: float, rng: np.random.Generator) -> np.ndarray:
    """How many of `ends` relationship ends each of n members holds, at most n-1 each."""
    if ends > n * (n - 1):
        raise ValueError(f"{ends} relationship ends cannot fit {n} members")
    weights = zipf_weights(n, theta)
    degrees: np.ndarray = rng.multinomial(ends, weights)
    cap = n - 1
    while True:
        over = degrees > cap
        if not over.any():
            return degrees
        excess = int((degrees[over] - cap).sum())
        degrees[over] = cap
        room = np.where(degrees < cap, weights, 0.0)
        degrees += rng.multinomial(excess, room / room.sum())


def unsound_pairs(pairs: np.ndarray, n: int) -> np.ndarray:
    """Mask of self-loops and of every repeat of a pair after its first row."""
    low = np.minimum(pairs[:, 0], pairs[:, 1])
    high = np.maximum(pairs[:, 0], pairs[:, 1])
    _, first = np.unique(low * n + high, return_index=True)
    unsound = np.ones(len(pairs), dtype=bool)
    unsound[first] = False
    unsound |= low == high
    return unsound


def pair_ends(degrees: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, int]:
    """Pairs of local indexes with these degrees, and how many pairs could not be made
    without a self-loop or a repeat (they are left out)."""
    n = len(degrees)
    ends = np.repeat(np.arange(n, dtype=np.int64), degrees)
    rng.shuffle(ends)
    pairs = ends.reshape(-1, 2).copy()
    best, stalled = len(pairs) + 1, 0
    for _ in range(PAIRING_ROUNDS):
        unsound = unsound_pairs(pairs, n)
        bad = np.flatnonzero(unsound)
        if len(bad) == 0:
            return pairs, 0
        if len(bad) < best:
            best, stalled = len(bad), 0
        else:
            stalled += 1
            if stalled >= PAIRING_PATIENCE:
                break
        sound = np.flatnonzero(~unsound)
        partners = np.unique(rng.integers(0, len(sound), min(len(sound), 2 * len(bad))))
        redo = np.concatenate([bad, sound[partners]])
        mixed = pairs[redo].ravel()
        rng.shuffle(mixed)
        pairs[redo] = mixed.reshape(-1, 2)
    unsound = unsound_pairs(pairs, n)
    return pairs[~unsound], int(unsound.sum())


def add_weighted_pairs(
    pairs: np.ndarray, count: int, theta: float, n: int, rng: np.random.Generator
) -> np.ndarray:
    """`pairs` and `count` new distinct pairs not among them, both ends drawn with the
    weights."""
    if count == 0:
        return pairs
    weights = zipf_weights(n, theta)
    taken = np.sort(np.minimum(pairs[:, 0], pairs[:, 1]) * n + np.maximum(pairs[:, 0], pairs[:, 1]))
    added = np.empty(0, dtype=np.int64)
    for _ in range(FILL_BATCHES):
        wanted = count - len(added)
        if wanted == 0:
            break
        batch = max(4 * wanted, 1024)
        a = rng.choice(n, batch, p=weights)
        b = rng.choice(n, batch, p=weights)
        keep = a != b
        keys = np.minimum(a, b)[keep] * n + np.maximum(a, b)[keep]
        keys = keys[~np.isin(keys, taken) & ~np.isin(keys, added)]
        _, first = np.unique(keys, return_index=True)
        added = np.concatenate([added, keys[np.sort(first)][:wanted]])
    else:
        raise RuntimeError(f"could not place {count - len(added)} relationships: graph too dense")
    return np.concatenate([pairs, np.column_stack([added // n, added % n])])


def zipf_pairs(n: int, phi: int, theta: float, rng: np.random.Generator) -> np.ndarray:
    """n*phi/2 distinct pairs (inviter, invitee) of local indexes, no self-loops; each pair's
    order is a coin toss."""
    degrees = zipf_degrees(n, n * phi, theta, rng)
    pairs, dropped = pair_ends(degrees, rng)
    pairs = add_weighted_pairs(pairs, dropped, theta, n, rng)
    flip = rng.random(len(pairs)) < 0.5
    pairs[flip] = pairs[flip][:, ::-1]
    return pairs


def zipf_walls(n: int, count: int, theta: float, rng: np.random.Generator) -> np.ndarray:
    """Local index of the wall each of `count` resources is posted on."""
    return rng.choice(n, count, p=zipf_weights(n, theta))


def friend_commenters(
    walls: np.ndarray, per: int, friendships: np.ndarray, n: int, rng: np.random.Generator
) -> np.ndarray:
    """(len(walls), per) local indexes: each comment's author is the wall's owner or one of
    the owner's friends (`friendships`: confirmed pairs of local indexes), uniformly."""
    ends = np.concatenate([friendships, friendships[:, ::-1]])
    ends = ends[np.argsort(ends[:, 0], kind="stable")]
    counts = np.bincount(ends[:, 0], minlength=n)
    offsets = np.concatenate([[0], np.cumsum(counts)[:-1]])
    choices = 1 + counts[walls]  # the owner, then each friend
    pick = np.floor(rng.random((len(walls), per)) * choices[:, None]).astype(np.int64)
    friend_at = np.minimum(offsets[walls][:, None] + pick - 1, max(len(ends) - 1, 0))
    friends = ends[friend_at, 1] if len(ends) else np.zeros_like(pick)
    owners = np.broadcast_to(walls[:, None], pick.shape)
    commenters: np.ndarray = np.where(pick == 0, owners, friends)
    return commenters
