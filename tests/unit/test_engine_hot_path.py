"""The engine's per-action path made cheaper gives the same answers: draws through the
guide table are the binary search's, the null store's kept profiles follow its counts,
a runner's claim on a socialite holds until released, and histograms counted in numpy
are the ones recorded value by value."""

import asyncio

import numpy as np
import pytest
from hdrh.histogram import HdrHistogram

from bgbench.protos import HIST_HIGHEST_US, HIST_LOWEST_US, new_histogram
from bgbench.worker.measurement import histogram_of, visibility_histogram
from bgbench.worker.plan import LONGEST_SLICE_NS, NEVER_NS, SLICE_NS, TURN_NS, slice_for
from bgbench.worker.tally import Buckets
from bgbench.workloads.bg.bookkeeping import FragmentState
from bgbench.workloads.bg.config import BGDatabaseConfig
from bgbench.workloads.bg.generator import Fragment, FragmentPlan
from bgbench.workloads.bg.stores.null import NullBinding, NullOptions
from bgbench.workloads.zipf import LocalZipf


class FixedUniforms:
    """A generator whose `random` gives the values asked for."""

    def __init__(self, values: np.ndarray) -> None:
        self.values = values

    def random(self, count: int) -> np.ndarray:
        assert count == len(self.values)
        return self.values.copy()


@pytest.mark.parametrize(
    ("members", "theta"), [(1, 0.27), (7, 0.01), (500, 0.27), (20_000, 0.27), (3_000, 0.99)]
)
def test_guided_draws_are_the_binary_searchs(members, theta):
    local = LocalZipf(np.arange(members) * 3 + 1, theta, 3 * members + 1)
    cdf = local._cdf
    rng, same = np.random.default_rng(5), np.random.default_rng(5)
    for _ in range(5):
        drawn = local.draw_indexes(rng, 50_000)
        assert np.array_equal(drawn, np.searchsorted(cdf, same.random(50_000), side="right"))
    # the values where rounding could mislead the guide: each weight's bound, just below
    # it, every slice's bound, 0 and the largest float below 1
    slices = local.GUIDE_PER_MEMBER * members
    edges = np.concatenate(
        [cdf[:-1], np.nextafter(cdf[:-1], 0), np.arange(slices) / slices, [0.0],
         [np.nextafter(1.0, 0)]]
    )  # fmt: skip
    drawn = local.draw_indexes(FixedUniforms(edges), len(edges))
    assert np.array_equal(drawn, np.searchsorted(cdf, edges, side="right"))
    assert local.draw(rng, 1000).min() >= 1


def null_store() -> NullBinding:
    db = BGDatabaseConfig(usercount=200, friendcountperuser=4, resourcecountperuser=3)
    fragment = Fragment(db, FragmentPlan((1.0,), 0.27), 0)
    binding = NullBinding(NullOptions())
    binding.load_fragment(fragment)
    return binding


def test_null_profiles_kept_follow_the_friend_counts():
    binding = null_store()

    async def play() -> None:
        one, other = await binding.connect_async(), await binding.connect_async()
        a, b = 0, 1
        seen = await one.view_profile(b, a)
        assert seen.friend_count == binding.friends[a] and seen.pending_count is None
        await other.invite_friend(b, a)
        await other.accept_friend_request(b, a)
        after = await one.view_profile(b, a)
        assert after.friend_count == seen.friend_count + 1 == binding.friends[a]
        await one.thaw_friendship(a, b)
        assert (await other.view_profile(b, a)).friend_count == seen.friend_count
        own = await one.view_profile(a, a)
        assert own.pending_count == binding.pending[a]
        tops = await one.view_top_k_resources(b, a, 2)
        assert len(tops) == min(2, binding.resources[a])
        assert len(await one.view_top_k_resources(b, a, 100)) == binding.resources[a]

    asyncio.run(play())


def test_a_runners_claim_holds_until_released():
    db = BGDatabaseConfig(usercount=200, friendcountperuser=4, resourcecountperuser=3)
    state = FragmentState(Fragment(db, FragmentPlan((1.0,), 0.27), 0), threaded=False)

    def first() -> int:
        return 5

    def second() -> int:
        return 5

    assert state.acquire_socialite(first) == 5
    assert state.acquire_socialite(second, attempts=3) is None  # another runner's member
    state.release_socialite(5)
    assert state.acquire_socialite(second) == 5


def recorded_one_by_one(latencies_ns: np.ndarray, lowest_us: int) -> HdrHistogram:
    h = new_histogram()
    us = np.clip(latencies_ns // 1000, lowest_us, HIST_HIGHEST_US)
    for value, count in zip(*np.unique(us, return_counts=True), strict=True):
        h.record_value(int(value), int(count))
    return h


@pytest.mark.parametrize(
    "latencies_ns",
    [
        np.random.default_rng(3).lognormal(10, 3, 50_000).astype(np.int64),
        np.zeros(5, np.int64),
        np.array([10**15, 1, 999, 1000, 1001]),
        np.arange(0, 10**7, 997),
    ],
)
def test_histograms_counted_in_numpy_are_the_recorded_ones(latencies_ns):
    for made, lowest in ((histogram_of(latencies_ns), HIST_LOWEST_US),
                         (visibility_histogram(latencies_ns), 0)):  # fmt: skip
        want = recorded_one_by_one(latencies_ns, lowest)
        assert made.encode() == want.encode()
        assert made.get_total_count() == want.get_total_count() == len(latencies_ns)
        assert (made.get_min_value(), made.get_max_value()) == (
            want.get_min_value(), want.get_max_value())  # fmt: skip
        assert made.get_value_at_percentile(99) == want.get_value_at_percentile(99)


def test_bucket_indexes_are_hdrhs():
    h = new_histogram()
    values = np.concatenate([np.arange(0, 70_000), 2 ** np.arange(17, 40), [HIST_HIGHEST_US]])
    want = [h._counts_index_for(int(v)) for v in values.tolist()]
    assert Buckets.index_of(values).tolist() == want


def test_a_round_of_tasks_stays_short_and_slices_never_shorter_than_before():
    assert slice_for(1, suspends=False) == LONGEST_SLICE_NS
    for tasks in (1, 16, 250, 1024, 4096, 65_535):
        slice_ns = slice_for(tasks, suspends=False)
        assert SLICE_NS <= slice_ns <= LONGEST_SLICE_NS
        assert tasks * slice_ns <= max(TURN_NS, tasks * SLICE_NS)
    assert slice_for(8, suspends=True) == NEVER_NS
