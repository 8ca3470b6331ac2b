"""The Micro database (Strudel 5.3), generated as pure functions of the seed and keys.

Groups and their keys, for N users and S shared groups (the binding sees only keys):

- personal group of user u: u (items 0 .. personal_items-1, read and written by u only);
- public group of u: N + u (public_items items, written by u, read by anyone);
- inbox of u: 2N + u (no items: messages other users send u);
- shared group s: 3N + s (shared_items items, read and written by anyone).

Item i of group g starts at a hash of (seed, g, i) in 0..999; a group's total is the sum
of its items; inboxes start empty. So the database is the same however it is cut into
fragments, and every tracked item's initial value follows without asking a store.

Fragments: users split D-Zipfian (each fragment's share of the requests tracks its
capacity, bgbench.workloads.zipf) and shared groups in contiguous runs sized by the
fragments' user counts. A fragment's units touch only its own users' groups and its own
shared groups: nothing of one fragment touches another's.
"""

import itertools
from collections.abc import Iterator, Sequence

import numpy as np

from bgbench.workloads.micro.config import MAX_ITEMS, MicroDatabaseConfig
from bgbench.workloads.micro.store import GroupRows
from bgbench.workloads.zipf import LocalZipf, assign_fragments

BATCH_ITEMS = 10_000  # about this many item values per batch handed to a binding
VALUE_RANGE = 1000  # initial item values are 0 .. VALUE_RANGE - 1

_M64 = (1 << 64) - 1
_GOLD = 0x9E3779B97F4A7C15
_U = np.uint64


def _mix(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser over uint64 (wrapping arithmetic)."""
    x = x ^ (x >> _U(30))
    x = x * _U(0xBF58476D1CE4E5B9)
    x = x ^ (x >> _U(27))
    x = x * _U(0x94D049BB133111EB)
    out: np.ndarray = x ^ (x >> _U(31))
    return out


def values_of(seed: int, item_ids: np.ndarray) -> np.ndarray:
    """The initial values of items by tracked id (group * MAX_ITEMS + item), int64."""
    start = _U((seed * _GOLD) & _M64)
    with np.errstate(over="ignore"):
        bits = _mix(_mix(np.asarray(item_ids).astype(np.uint64) ^ start) + _U(_GOLD))
    return (bits % _U(VALUE_RANGE)).astype(np.int64)


def item_values(seed: int, group: int, count: int) -> np.ndarray:
    """The initial values of items 0 .. count-1 of `group` (int64)."""
    return values_of(seed, np.arange(count, dtype=np.int64) + group * MAX_ITEMS)


class GroupKeys:
    """The key of every group of a database with `users` users (module docstring)."""

    def __init__(self, users: int) -> None:
        self.users = users

    def personal(self, user: int) -> int:
        return user

    def public(self, user: int) -> int:
        return self.users + user

    def inbox(self, user: int) -> int:
        return 2 * self.users + user

    def shared(self, index: int) -> int:
        return 3 * self.users + index


def user_owner(users: int, theta: float, capacities: Sequence[float]) -> np.ndarray:
    """The fragment of every user."""
    return assign_fragments(users, theta, capacities)


def shared_bounds(shared_groups: int, users_per_fragment: Sequence[int]) -> list[int]:
    """Fragment k holds shared groups bounds[k] .. bounds[k+1]-1: contiguous runs sized
    like the fragments' user counts."""
    sizes = np.asarray(users_per_fragment, dtype=np.float64)
    cut = np.round(np.cumsum(sizes) / sizes.sum() * shared_groups).astype(np.int64).tolist()
    cut[-1] = shared_groups
    return [0, *cut]


class FragmentData:
    """One fragment's users and shared groups, their group keys and generated values
    (store.FragmentGroups)."""

    def __init__(
        self, db: MicroDatabaseConfig, theta: float, capacities: Sequence[float], index: int
    ) -> None:
        if not 0 <= index < len(capacities):
            raise ValueError(f"fragment {index} outside 0..{len(capacities) - 1}")
        self.db = db
        self.theta = theta
        self.index = index
        self.keys = GroupKeys(db.users)
        owner = user_owner(db.users, theta, capacities)
        self.users = np.flatnonzero(owner == index).astype(np.int64)
        counts = np.bincount(owner, minlength=len(capacities)).tolist()
        bounds = shared_bounds(db.shared_groups, counts)
        self.shared = np.arange(bounds[index], bounds[index + 1], dtype=np.int64)
        n = db.users
        # (group keys, items per group) per kind, keys ascending
        self.item_groups: list[tuple[np.ndarray, int]] = [
            (self.users, db.personal_items),
            (self.users + n, db.public_items),
            (self.shared + 3 * n, db.shared_items),
        ]
        self.inboxes = self.users + 2 * n

    @property
    def size(self) -> int:
        return len(self.users)

    def local_zipf(self) -> LocalZipf:
        return LocalZipf(self.users, self.theta, self.db.users)

    def group_keys(self) -> list[int]:
        groups = [g for g, _ in self.item_groups]
        return np.sort(np.concatenate([*groups, self.inboxes])).tolist()  # type: ignore[no-any-return]

    def group_batches(self) -> Iterator[list[GroupRows]]:
        seed = self.db.seed
        for keys, size in self.item_groups:
            step = max(1, BATCH_ITEMS // max(size, 1))
            for lo in range(0, len(keys), step):
                yield [
                    GroupRows(g, item_values(seed, g, size).tolist())
                    for g in keys[lo : lo + step].tolist()
                ]
        for lo in range(0, len(self.inboxes), BATCH_ITEMS):
            yield [GroupRows(g, []) for g in self.inboxes[lo : lo + BATCH_ITEMS].tolist()]

    def initial_items(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(item ids, their values, item-group keys, their totals), ids and keys ascending."""
        ids, values, groups, totals = [], [], [], []
        for keys, size in self.item_groups:
            grid = keys[:, None] * MAX_ITEMS + np.arange(size, dtype=np.int64)[None, :]
            v = values_of(self.db.seed, grid)
            ids.append(grid.ravel())
            values.append(v.ravel())
            groups.append(keys)
            totals.append(v.sum(axis=1))
        item_ids, item_vals = np.concatenate(ids), np.concatenate(values)
        group_keys, group_totals = np.concatenate(groups), np.concatenate(totals)
        by_id, by_key = np.argsort(item_ids), np.argsort(group_keys)
        return item_ids[by_id], item_vals[by_id], group_keys[by_key], group_totals[by_key]


def fragment_user_counts(
    db: MicroDatabaseConfig, theta: float, capacities: Sequence[float]
) -> list[int]:
    owner = user_owner(db.users, theta, capacities)
    return np.bincount(owner, minlength=len(capacities)).tolist()  # type: ignore[no-any-return]


def pairwise_sizes(bounds: Sequence[int]) -> list[int]:
    return [hi - lo for lo, hi in itertools.pairwise(bounds)]
