"""BG's skewed social graph (issue 29): Zipfian friendships, invitations and resource walls
against BG's weights by a chi-square goodness-of-fit test, fragments self-contained,
determinism by seed, the uniform ring unchanged, and comments restricted to friends."""

import hashlib
import random

import numpy as np
import pytest
from pydantic import ValidationError
from scipy.stats import chisquare

from bgbench.errors import UserError
from bgbench.workloads.bg.bookkeeping import FragmentState
from bgbench.workloads.bg.config import BGConfig, BGDatabaseConfig
from bgbench.workloads.bg.generator import CONFIRMED, PENDING, Fragment, FragmentPlan
from bgbench.workloads.bg.relationships import pair_ends, unsound_pairs, zipf_degrees
from bgbench.workloads.bg.workload import WORKLOAD
from bgbench.workloads.zipf import zipf_weights

SKEWED = {"friendship_distribution": "zipfian", "resource_distribution": "zipfian"}
SIGNIFICANCE = 0.001  # per seed; the seeds are fixed, so the outcome is too


def fragment(index: int = 0, capacities: tuple[float, ...] = (1.0,), **db: object) -> Fragment:
    return Fragment(BGDatabaseConfig(**db), FragmentPlan(capacities, 0.27), index)  # type: ignore[arg-type]


def goodness_of_fit(counts: np.ndarray, theta: float) -> float:
    """The chi-square p-value of per-member counts (in rank order) against BG's weights,
    consecutive ranks pooled so that every cell expects at least 5 (the test's condition)."""
    expected = zipf_weights(len(counts), theta) * counts.sum()
    cells, cell_of = 0.0, np.empty(len(counts), dtype=np.int64)
    cell = 0
    for i, e in enumerate(expected):
        cell_of[i] = cell
        cells += e
        if cells >= 5:
            cell, cells = cell + 1, 0.0
    if cells:  # a short last cell joins the one before
        cell_of[cell_of == cell] = cell - 1
    observed = np.bincount(cell_of, weights=counts)
    pooled = np.bincount(cell_of, weights=expected)
    assert pooled.min() >= 5 and len(pooled) > 50
    return float(chisquare(observed, pooled).pvalue)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_zipfian_degrees_and_walls_fit_bgs_weights(seed):
    f = fragment(usercount=1000, seed=seed, **SKEWED)
    degrees = f.initial_friend_count  # confperc 1: every relationship is a friendship
    assert degrees.sum() == 1000 * 10  # mean degree exactly phi
    assert goodness_of_fit(degrees, 0.27) > SIGNIFICANCE
    walls = f.initial_resource_count
    assert walls.sum() == 1000 * 10  # mean rho
    assert goodness_of_fit(walls, 0.27) > SIGNIFICANCE


def test_the_goodness_of_fit_test_rejects_other_graphs():
    ring = fragment(usercount=1000).initial_friend_count
    assert goodness_of_fit(ring, 0.27) < 1e-12
    flatter = fragment(usercount=1000, relationship_theta=0.4, **SKEWED).initial_friend_count
    assert goodness_of_fit(flatter, 0.27) < 1e-9  # the exponent is what is tested
    assert goodness_of_fit(flatter, 0.4) > SIGNIFICANCE


def test_a_zipfian_graph_is_simple_with_mean_degree_phi_also_when_dense():
    for n, phi in ((1000, 10), (300, 100), (250, 120)):
        f = fragment(usercount=n, friendcountperuser=phi, confperc=0.5, **SKEWED)
        rows = f.friendships
        assert len(rows) == n * phi // 2
        assert not unsound_pairs(f.local_index(rows[:, :2]), n).any()  # no loops, no repeats
        assert set(rows[:, 2].tolist()) <= {CONFIRMED, PENDING}
        degree = np.bincount(f.local_index(rows[:, :2]).ravel(), minlength=n)
        assert degree.max() <= n - 1 and degree.max() > 2 * phi


def test_pairing_a_dense_fragment_beats_the_load_processs_liveness_each_round():
    f = fragment(usercount=250, friendcountperuser=120, **SKEWED)
    beats: list[None] = []
    f.progress = lambda: beats.append(None)
    rows = f.friendships
    assert len(rows) == 250 * 120 // 2
    assert beats  # pairing rounds, before any row is handed to a binding


def test_pairing_keeps_every_degree_of_a_sparse_graph():
    rng = np.random.default_rng(5)
    degrees = zipf_degrees(2000, 2000 * 6, 0.27, rng)
    pairs, dropped = pair_ends(degrees, rng)
    assert dropped == 0
    assert (np.bincount(pairs.ravel(), minlength=2000) == degrees).all()


def test_pending_invitations_follow_the_skew():
    f = fragment(usercount=1000, confperc=0.5, **SKEWED)
    pending = f.initial_pending_count
    assert pending.sum() == (f.friendships[:, 2] == PENDING).sum() > 0
    top = pending[:200].sum() / pending.sum()  # the 20% most popular members
    assert 0.5 < top < 0.7  # BG's weights give them 59% of relationship ends; the ring 20%
    inviters = np.bincount(f.local_index(f.friendships[f.friendships[:, 2] == PENDING][:, 0]))
    assert inviters[:200].sum() / pending.sum() > 0.5  # both directions are skewed


def test_fragments_stay_self_contained():
    capacities = (1.0, 2.0, 1.0)
    db = {"usercount": 900, "commentcountperresource": 2, "comments": "friends", **SKEWED}
    seen = []
    for index in range(3):
        f = fragment(index, capacities, **db)
        members = set(f.members.tolist())
        seen.append(members)
        assert set(f.friendships[:, :2].ravel().tolist()) <= members
        assert set(f.resources[:, 1:].ravel().tolist()) <= members
        assert {c for _, _, c, _ in f.comments()} <= members
    assert sum(map(len, seen)) == len(set().union(*seen)) == 900


def test_the_same_seed_gives_the_same_graph_and_another_seed_another():
    def arrays(seed: int) -> tuple[bytes, bytes, list]:
        f = fragment(usercount=500, seed=seed, commentcountperresource=1, **SKEWED)
        return f.friendships.tobytes(), f.resources.tobytes(), list(f.comments())

    assert arrays(4) == arrays(4)
    assert arrays(4)[0] != arrays(5)[0] and arrays(4)[1] != arrays(5)[1]


def test_the_uniform_ring_is_what_it_was_byte_for_byte():
    # The digest of the generator before the option existed (same settings, same seed).
    db = BGDatabaseConfig(usercount=500, confperc=0.6, commentcountperresource=2, seed=7)
    digest = hashlib.sha256()
    for index in range(2):
        f = Fragment(db, FragmentPlan((1.0, 2.0), 0.27), index)
        digest.update(f.friendships.tobytes())
        digest.update(f.resources.tobytes())
        digest.update(repr(list(f.comments())).encode())
    assert digest.hexdigest() == "ed1a78e7bfde20859c9e7565210b702842bf3f456cd0122f1466ac108605a50b"


def test_initial_comments_are_by_the_owner_or_friends_when_restricted():
    f = fragment(usercount=400, commentcountperresource=3, comments="friends", **SKEWED)
    confirmed = f.friendships[f.friendships[:, 2] == CONFIRMED][:, :2].tolist()
    friends = {(a, b) for a, b in confirmed} | {(b, a) for a, b in confirmed}
    wall = dict(zip(f.resources[:, 0].tolist(), f.resources[:, 2].tolist(), strict=True))
    authors = [(commenter, wall[rid]) for rid, _, commenter, _ in f.comments()]
    assert all(c == w or (c, w) in friends for c, w in authors)
    assert any(c != w for c, w in authors) and any(c == w for c, w in authors)
    anyone = fragment(usercount=400, commentcountperresource=3, **SKEWED)
    assert not all(c == wall[r] or (c, wall[r]) in friends for r, _, c, _ in anyone.comments())


def test_a_friends_only_comment_holds_the_friendship_and_refuses_strangers():
    f = fragment(usercount=400, comments="friends", **SKEWED)
    state = FragmentState(f)
    rng = random.Random(1)
    a = int(f.members[0])
    friend = next(iter(state.friends[a]))
    stranger = next(int(m) for m in f.members if m != a and m not in state.friends[a])
    on_friend = state.resources_on_wall(friend)[0]
    assert state.reserve_commenter(a, state.resources_on_wall(stranger)[0]) is None
    assert state.reserve_commenter(a, on_friend) == friend
    assert state.reserve_commenter(a, on_friend) is None  # one action on a pair at a time
    picks = {state.reserve_friend(a, rng) for _ in range(len(state.friends[a]) * 4)}
    assert friend not in picks  # no Thaw Friendship while the comment is posted
    state.release_commenter(a, friend)
    assert state.reserve_commenter(a, on_friend) == friend
    own = state.resources_on_wall(a)
    if own:
        assert state.reserve_commenter(a, own[0]) == a
    walls = {state.commentable_wall(a, rng) for _ in range(500)}
    assert walls <= state.friends[a] | {a} and a in walls


def test_settings_name_the_field_and_small_fragments_are_refused():
    with pytest.raises(ValidationError, match="friendship_distribution"):
        BGDatabaseConfig(friendship_distribution="pareto")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="comments"):
        BGDatabaseConfig(comments="everyone")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="relationship_theta"):
        BGDatabaseConfig(relationship_theta=1.0)
    config = BGConfig(database=BGDatabaseConfig(usercount=300, friendcountperuser=100, **SKEWED))  # type: ignore[arg-type]
    with pytest.raises(UserError, match="twice friendcountperuser=100 \\(zipfian"):
        WORKLOAD.check_fragments(config, [150, 150])
    WORKLOAD.check_fragments(
        config.model_copy(
            update={"database": BGDatabaseConfig(usercount=300, friendcountperuser=100)}
        ),
        [150, 150],
    )
    with pytest.raises(ValueError, match="too few"):
        fragment(0, (1.0, 1.0), usercount=300, friendcountperuser=100, **SKEWED)
