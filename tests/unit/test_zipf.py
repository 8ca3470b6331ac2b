import numpy as np
import pytest
from scipy import stats

from bgbench.workloads.zipf import (
    LocalZipf,
    assign_fragments,
    fragment_members,
    mixture,
    total_variation,
    zipf_weights,
)

N = 10_000
THETA = 0.27


def test_weights_match_bg_distofaccess():
    p = zipf_weights(10, 0.27)
    assert p[0] == pytest.approx(0.2603, abs=5e-5)
    assert p[-1] == pytest.approx(0.0485, abs=5e-5)
    assert p.sum() == pytest.approx(1.0)
    assert np.all(np.diff(p) < 0)


@pytest.mark.parametrize("fragments", [1, 2, 4, 8, 16])
@pytest.mark.parametrize("kind", ["equal", "unequal", "one-fast"])
def test_mixture_of_local_distributions_is_the_global_one(fragments, kind):
    capacities = {
        "equal": [1.0] * fragments,
        "unequal": [float(i + 1) for i in range(fragments)],
        "one-fast": [1.0] * (fragments - 1) + [4.0],
    }[kind]
    owner = assign_fragments(N, THETA, capacities)
    assert sorted(set(owner.tolist())) == list(range(fragments))
    q = mixture(N, THETA, owner, capacities)
    assert q.sum() == pytest.approx(1.0)
    assert total_variation(zipf_weights(N, THETA), q) < 0.01


def test_fragment_mass_follows_capacity():
    capacities = [1.0, 3.0]
    owner = assign_fragments(N, THETA, capacities)
    mass = np.bincount(owner, weights=zipf_weights(N, THETA))
    assert mass == pytest.approx([0.25, 0.75], abs=1e-3)


def test_fragments_are_disjoint_and_cover_everyone():
    owner = assign_fragments(1000, THETA, [1, 1, 1])
    members = [fragment_members(owner, k) for k in range(3)]
    joined = np.sort(np.concatenate(members))
    assert np.array_equal(joined, np.arange(1000))


def test_sampled_draws_fit_the_local_distribution():
    owner = assign_fragments(N, THETA, [1.0, 2.0])
    local = LocalZipf(fragment_members(owner, 1), THETA, N)
    rng = np.random.default_rng(7)
    draws = local.draw_indexes(rng, 1_000_000)
    observed = np.bincount(draws, minlength=len(local.members))
    expected = local.probabilities * len(draws)
    chi2 = stats.chisquare(observed, expected)
    assert chi2.pvalue > 0.001
    # and the sampled distribution is as close as sampling noise allows (about 0.03)
    tv = total_variation(observed / len(draws), local.probabilities)
    assert tv < 0.04


def test_draws_return_members_of_the_fragment():
    owner = assign_fragments(500, THETA, [1, 1])
    members = fragment_members(owner, 0)
    local = LocalZipf(members, THETA, 500)
    ids = local.draw(np.random.default_rng(1), 10_000)
    assert set(ids.tolist()) <= set(members.tolist())
    # the most popular member of the fragment is drawn most often
    values, counts = np.unique(ids, return_counts=True)
    assert values[np.argmax(counts)] == members[0]


def test_bad_capacities_are_refused():
    with pytest.raises(ValueError, match="capacity"):
        assign_fragments(100, THETA, [1.0, 0.0])
    with pytest.raises(ValueError, match="capacity"):
        assign_fragments(100, THETA, [])
