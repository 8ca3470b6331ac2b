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
2. Pairing: the ends are shuffled and paired. Each self-loop or repeated pair (u, v) is
   then swapped with a random sound pair (x, y) into (u, x) and (v, y) when both are new,
   which keeps every degree and never undoes a sound pair, until none is left or swaps
   stop succeeding (a dense graph, phi close to n, where the hubs already know nearly
   everyone).
3. What could not be paired is dropped and as many new distinct pairs are drawn with both
   ends weighted by the same weights, so the number of relationships stays n*phi/2.

Resources: each member still creates rho resources (their ids do not change); the wall each
is posted on is drawn with the weights, so the resources on members' walls (what profiles
count and View Top-K Resources lists) follow them with mean rho.
"""

from collections.abc import Callable

import numpy as np

from bgbench.workloads.zipf import zipf_weights

PAIRING_ROUNDS = 2000
# A round moves every sound key once: a dense graph of millions of pairs gets fewer rounds.
PAIRING_WORK = 200_000_000
PAIRING_PATIENCE = 20  # rounds without a swap before the rest is drawn anew
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


def pair_keys(pairs: np.ndarray, n: int) -> np.ndarray:
    """One integer per unordered pair of local indexes."""
    keys: np.ndarray = np.minimum(pairs[:, 0], pairs[:, 1]) * n + np.maximum(
        pairs[:, 0], pairs[:, 1]
    )
    return keys


def unsound_pairs(pairs: np.ndarray, n: int) -> np.ndarray:
    """Mask of self-loops and of every repeat of a pair after its first row."""
    _, first = np.unique(pair_keys(pairs, n), return_index=True)
    unsound = np.ones(len(pairs), dtype=bool)
    unsound[first] = False
    unsound |= pairs[:, 0] == pairs[:, 1]
    return unsound


def _among(keys: np.ndarray, sorted_keys: np.ndarray) -> np.ndarray:
    at = np.minimum(np.searchsorted(sorted_keys, keys), max(len(sorted_keys) - 1, 0))
    found: np.ndarray = (sorted_keys[at] == keys) if len(sorted_keys) else np.zeros(len(keys), bool)
    return found


def _with(sorted_keys: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """`sorted_keys` with `keys` (none among them) inserted in order."""
    keys = np.sort(keys)
    merged: np.ndarray = np.insert(sorted_keys, np.searchsorted(sorted_keys, keys), keys)
    return merged


def _no_beat() -> None:
    pass


def pair_ends(
    degrees: np.ndarray, rng: np.random.Generator, beat: Callable[[], None] = _no_beat
) -> tuple[np.ndarray, int]:
    """Pairs of local indexes with these degrees, and how many pairs could not be made
    without a self-loop or a repeat (they are left out).

    The ends are shuffled and paired; then each unsound pair (u, v) is swapped with a
    random sound pair (x, y) into (u, x) and (v, y) when both are new, which keeps every
    degree and never undoes a sound pair. The sound pairs are kept as sorted keys, so a
    round only looks at the pairs it tries. `beat` is called each round (a dense fragment
    pairs for a minute: the load process's liveness beat)."""
    n = len(degrees)
    ends = np.repeat(np.arange(n, dtype=np.int64), degrees)
    rng.shuffle(ends)
    pairs = ends.reshape(-1, 2)
    unsound = unsound_pairs(pairs, n)
    sound = np.sort(pair_keys(pairs[~unsound], n))
    pending = pairs[unsound]
    idle = 0
    for _ in range(min(PAIRING_ROUNDS, max(20, PAIRING_WORK // max(len(pairs), 1)))):
        if len(pending) == 0 or len(sound) == 0 or idle >= PAIRING_PATIENCE:
            break
        beat()
        chosen = np.unique(rng.integers(0, len(sound), len(pending)))
        tried = pending[: len(chosen)]
        partners = sound[chosen]
        flip = rng.random(len(chosen)) < 0.5
        x = np.where(flip, partners % n, partners // n)
        y = np.where(flip, partners // n, partners % n)
        first_keys = pair_keys(np.column_stack([tried[:, 0], x]), n)
        second_keys = pair_keys(np.column_stack([tried[:, 1], y]), n)
        fits = (tried[:, 0] != x) & (tried[:, 1] != y) & (first_keys != second_keys)
        fits &= ~_among(first_keys, sound) & ~_among(second_keys, sound)
        fits &= ~_repeated(np.concatenate([first_keys, second_keys]), len(chosen))
        if not fits.any():
            idle += 1
            continue
        idle = 0
        sound = _with(
            np.delete(sound, chosen[fits]), np.concatenate([first_keys[fits], second_keys[fits]])
        )
        pending = np.concatenate([tried[~fits], pending[len(chosen) :]])
    return np.column_stack([sound // n, sound % n]), len(pending)


def _repeated(keys: np.ndarray, half: int) -> np.ndarray:
    """Mask over the first `half` proposals: either of its two keys (at i and half+i) occurs
    more than once among all `keys`."""
    _, inverse, counts = np.unique(keys, return_inverse=True, return_counts=True)
    many = counts[inverse] > 1
    repeated: np.ndarray = many[:half] | many[half:]
    return repeated


def add_weighted_pairs(
    pairs: np.ndarray,
    count: int,
    theta: float,
    n: int,
    rng: np.random.Generator,
    beat: Callable[[], None] = _no_beat,
) -> np.ndarray:
    """`pairs` and `count` new distinct pairs not among them, both ends drawn with the
    weights."""
    if count == 0:
        return pairs
    weights = zipf_weights(n, theta)
    taken = np.sort(pair_keys(pairs, n))
    added = np.empty(0, dtype=np.int64)
    for _ in range(FILL_BATCHES):
        wanted = count - len(added)
        if wanted == 0:
            break
        beat()
        batch = max(4 * wanted, 1024)
        drawn = np.column_stack([rng.choice(n, batch, p=weights), rng.choice(n, batch, p=weights)])
        keys = pair_keys(drawn[drawn[:, 0] != drawn[:, 1]], n)
        keys = keys[~_among(keys, taken)]
        _, first = np.unique(keys, return_index=True)
        fresh = keys[np.sort(first)][:wanted]
        added = np.concatenate([added, fresh])
        taken = _with(taken, fresh)
    else:
        raise RuntimeError(f"could not place {count - len(added)} relationships: graph too dense")
    return np.concatenate([pairs, np.column_stack([added // n, added % n])])


def zipf_pairs(
    n: int, phi: int, theta: float, rng: np.random.Generator, beat: Callable[[], None] = _no_beat
) -> np.ndarray:
    """n*phi/2 distinct pairs (inviter, invitee) of local indexes, no self-loops; each pair's
    order is a coin toss."""
    degrees = zipf_degrees(n, n * phi, theta, rng)
    pairs, dropped = pair_ends(degrees, rng, beat)
    pairs = add_weighted_pairs(pairs, dropped, theta, n, rng, beat)
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
