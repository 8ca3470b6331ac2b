import itertools

import pytest

from bgbench.coordinator.configuration.plan import AgentSlot, layout, split_threads


@pytest.mark.parametrize("total", range(0, 40))
@pytest.mark.parametrize("weights", [[1], [1, 1], [1, 2], [3, 1, 1], [1, 1, 1, 1, 1]])
def test_split_threads_sums_and_is_proportional(total, weights):
    shares = split_threads(total, weights)
    assert sum(shares) == total
    assert len(shares) == len(weights)
    s = sum(weights)
    for share, w in zip(shares, weights, strict=True):
        assert abs(share - total * w / s) < 1  # largest remainder: off by less than one


def test_split_threads_gives_remainders_to_the_first_on_ties():
    assert split_threads(3, [1, 1]) == [2, 1]
    assert split_threads(5, [1, 1, 1]) == [2, 2, 1]


def test_split_threads_refuses_bad_input():
    with pytest.raises(ValueError):
        split_threads(-1, [1])
    with pytest.raises(ValueError):
        split_threads(3, [1, 0])


@pytest.mark.parametrize("procs", list(itertools.product([1, 2, 3], repeat=3)))
def test_layout_gives_each_process_one_fragment(procs):
    plan = layout([AgentSlot(p, capacity=float(i + 1)) for i, p in enumerate(procs)])
    flat = [k for frags in plan.fragments for k in frags]
    assert flat == list(range(sum(procs)))
    for i, frags in enumerate(plan.fragments):
        assert len(frags) == procs[i]
        # an agent's capacity is shared by its processes
        assert sum(plan.capacities[k] for k in frags) == pytest.approx(i + 1)


def test_layout_refuses_empty_or_bad_agents():
    with pytest.raises(ValueError):
        layout([])
    with pytest.raises(ValueError):
        layout([AgentSlot(0)])
