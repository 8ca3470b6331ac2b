"""The rating strategies on stores whose behaviour is a formula of T."""

import math
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bgbench.coordinator.search.exhaustive import exhaustive
from bgbench.coordinator.search.final import final
from bgbench.coordinator.search.memo import Memo, Outcome
from bgbench.coordinator.search.soar import soar
from bgbench.coordinator.search.socialites import socialites


def step(limit: int, rate: float = 10.0):
    """The SLA holds exactly for T <= limit; throughput rises linearly."""
    return lambda t: Outcome(t <= limit, rate * t, "" if t <= limit else "latency")


def quadratic(peak: float):
    """The paper's concave parabola with its vertex (T = sqrt(peak)) worth `peak`."""
    alpha = 2 * math.sqrt(peak)
    return lambda t: Outcome(True, max(0.0, alpha * t - t * t))


def assert_no_repeats(memo: Memo) -> None:
    assert len(memo.ran) == len(set(memo.ran)) == memo.unique


def test_socialites_on_a_step_store_is_37():
    memo = Memo(step(37))
    assert socialites(memo) == 37
    assert memo.ran == [1, 2, 4, 8, 16, 32, 64, 48, 40, 36, 38, 37]
    assert_no_repeats(memo)


@pytest.mark.parametrize("limit", [0, 1, 2, 3, 5, 37, 64, 100, 1000, 4097])
@pytest.mark.parametrize("t0", [1, 3, 16])
def test_socialites_finds_every_limit(limit, t0):
    memo = Memo(step(limit))
    assert socialites(memo, t0=t0) == limit
    assert_no_repeats(memo)
    assert memo.unique <= 2 * math.log2(max(limit, t0) + 2) + 3


def test_socialites_stops_at_the_maximum():
    memo = Memo(step(10_000))
    assert socialites(memo, t_max=100) == 100
    assert max(memo.ran) == 100


def test_soar_on_a_step_store_is_the_last_passing_t():
    memo = Memo(step(37))
    t, outcome = soar(memo)
    assert (t, outcome.throughput) == (37, 370.0)
    assert_no_repeats(memo)


@pytest.mark.parametrize("peak", [500, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8])
def test_soar_finds_the_quadratic_peak(peak):
    memo = Memo(quadratic(peak))
    t, outcome = soar(memo)
    assert outcome.throughput == pytest.approx(peak, rel=0.01)
    assert abs(t - math.sqrt(peak)) <= 1
    assert_no_repeats(memo)
    assert memo.total >= memo.unique
    assert memo.unique <= 3 * math.log2(peak)  # logarithmic in the peak


def test_soar_finds_a_peak_below_the_best_doubling_point():
    # doubling reaches T=16 (best so far), 32 falls; the vertex is at 13 (Figure 12.e)
    memo = Memo(lambda t: Outcome(True, 26 * t - t * t))
    t, outcome = soar(memo)
    assert t == 13 and outcome.throughput == 169
    assert 16 in memo.ran and 32 in memo.ran


def test_soar_on_a_square_root_store_is_limited_by_the_sla():
    # throughput keeps rising; the SLA fails from T=300 on
    memo = Memo(lambda t: Outcome(t < 300, 1000 * math.sqrt(t)))
    t, outcome = soar(memo)
    assert t == 299
    assert outcome.throughput == pytest.approx(1000 * math.sqrt(299))


def test_soar_when_one_thread_fails():
    memo = Memo(step(0))
    assert soar(memo) is None
    assert memo.ran == [1]


def test_soar_below_a_failing_t0():
    memo = Memo(step(5))
    t, _ = soar(memo, t0=16)
    assert t == 5
    assert_no_repeats(memo)


@settings(max_examples=200, deadline=None)
@given(
    vertex=st.integers(1, 400),
    limit=st.integers(0, 900),
    height=st.floats(1, 1e6),
)
def test_heuristics_agree_with_exhaustive_search(vertex, limit, height):
    """On any concave curve with a monotone SLA limit, the heuristics find what T=1,2,3... finds."""

    def store(t: int) -> Outcome:
        x = height * max(0.0, 1 - ((t - vertex) / vertex) ** 2) + 1e-9 * t
        return Outcome(t <= limit, x)

    t_max = 2000
    reference = Memo(store)
    s_ref, best_ref = exhaustive(reference, t_max=t_max)
    memo = Memo(store)
    assert socialites(memo, t_max=t_max) == s_ref
    found = soar(memo, t_max=t_max)
    if best_ref is None:
        assert found is None
    else:
        assert found is not None
        assert found[1].throughput == pytest.approx(best_ref[1].throughput, rel=0.01)
    assert_no_repeats(memo)


def test_exhaustive_walks_one_by_one():
    memo = Memo(step(6))
    assert exhaustive(memo)[0] == 6
    assert memo.ran == [1, 2, 3, 4, 5, 6, 7]


def test_memo_counts_repeats_but_runs_once():
    calls = Counter()

    def store(t):
        calls[t] += 1
        return Outcome(True, t)

    memo = Memo(store)
    for t in (1, 2, 1, 2, 3):
        memo(t)
    assert memo.total == 5 and memo.unique == 3
    assert set(calls.values()) == {1}
    with pytest.raises(ValueError):
        memo(0)


def test_memo_replays_known_outcomes_without_running():
    # a resumed rating: T=1, 2, 4 finished before the coordinator died
    known = {1: Outcome(True, 10), 2: Outcome(True, 20), 4: Outcome(False, 5)}
    memo = Memo(lambda t: Outcome(t <= 3, t), known=dict(known))
    assert socialites(memo) == 3
    assert memo.ran == [3]  # only the one experiment that had not run


def test_final_passes_first_time():
    r = final(Memo(step(50)), 40)
    assert (r.threads, r.backed_off, r.tried) == (40, False, [40])


def test_final_backs_off_by_halving_then_bisects():
    # the search chose 40, but for the full duration only T <= 13 holds
    memo = Memo(step(13))
    r = final(memo, 40)
    assert r.threads == 13 and r.backed_off
    assert r.tried == [40, 20, 10, 15, 12, 13, 14]
    assert "backed off to T=13" in r.describe(40)
    assert_no_repeats(memo)


def test_final_reports_when_nothing_holds():
    r = final(Memo(step(0)), 8)
    assert r.threads == 0 and r.outcome is None
    assert r.tried == [8, 4, 2, 1]
    assert "down to 1" in r.describe(8)
