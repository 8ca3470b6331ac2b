import random
import threading
from collections import Counter

import numpy as np

from bgbench.workloads.bg.bookkeeping import FragmentState
from bgbench.workloads.bg.config import BGDatabaseConfig
from bgbench.workloads.bg.generator import Fragment, FragmentPlan

DB = BGDatabaseConfig(usercount=200, friendcountperuser=6, confperc=0.5, commentcountperresource=1)


def state(exclusive: bool = True) -> FragmentState:
    return FragmentState(Fragment(DB, FragmentPlan((1.0,), 0.27), 0), exclusive)


def test_counts_start_at_the_generated_values():
    s = state()
    f = s.fragment
    assert np.array_equal(s.friend_counts(), f.initial_friend_count)
    assert np.array_equal(s.pending_counts(), f.initial_pending_count)
    rids, counts = s.comment_counts()
    assert set(counts.tolist()) == {1} and len(rids) == len(f.resources)


def test_exclusivity_hands_out_each_member_once():
    s = state()
    seq = iter([3, 3, 3, 4])
    assert s.acquire_socialite(lambda: next(seq)) == 3
    assert s.acquire_socialite(lambda: next(seq)) == 4  # 3 is busy: redrawn twice, then 4
    s.release_socialite(3)
    assert s.acquire_socialite(lambda: 3) == 3


def test_without_exclusivity_members_can_be_shared():
    s = state(exclusive=False)
    assert s.acquire_socialite(lambda: 3) == 3
    assert s.acquire_socialite(lambda: 3) == 3


def test_an_invitation_is_answered_at_most_once_under_races():
    s = state()
    members = s.members.tolist()
    answered: Counter = Counter()
    invited: Counter = Counter((i, j) for i, j, st in s.fragment.friendships.tolist() if st == 1)
    lock = threading.Lock()
    barrier = threading.Barrier(8)

    def worker(seed: int) -> None:
        r = random.Random(seed)
        barrier.wait()
        for _ in range(400):
            a = r.choice(members)
            inviter = s.reserve_inviter(a, r)
            if inviter is not None:
                with lock:
                    answered[(inviter, a)] += 1
                s.finish_answer(inviter, a, accepted=r.random() < 0.5, ok=True)
            b = s.reserve_invitee(a, lambda: r.choice(members))
            if b is not None:
                with lock:
                    invited[(a, b)] += 1
                s.finish_invite(a, b, ok=True)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(answered.values()) > 100
    # an invitation is answered at most as often as it was sent (never twice at once)
    for pair, n in answered.items():
        assert n <= invited[pair], pair
    # the picture stays symmetric and consistent
    for m in members:
        for f in s.friends[m]:
            assert m in s.friends[f]
            assert f not in s.invited_by[m] and m not in s.invited_by[f]
        for inviter in s.invited_by[m]:
            assert m in s.invited[inviter]
    assert not s.uncertain


def test_reserved_pairs_are_not_handed_out_twice():
    s = state()
    a = next(m for m in s.members.tolist() if s.invited_by[m])
    inviters = set(s.invited_by[a])
    got = {s.reserve_inviter(a, random.Random(i)) for i in range(len(inviters))}
    assert got == inviters
    assert s.reserve_inviter(a, random.Random(0)) is None  # all reserved


def test_a_failed_write_keeps_its_target_and_marks_the_state_uncertain():
    s = state()
    a = next(m for m in s.members.tolist() if s.friends[m])
    f = s.reserve_friend(a, random.Random(0))
    s.finish_thaw(a, f, ok=False)
    assert s.uncertain
    assert f in s.friends[a]  # unknown whether it was thawed: the picture keeps it
    assert f not in {s.reserve_friend(a, random.Random(i)) for i in range(20)}


def test_a_comment_is_deleted_once():
    s = state()
    owner = next(m for m in s.members.tolist() if s.resources_on_wall(m))
    picked = {s.reserve_comment(owner, random.Random(i)) for i in range(50)}
    picked.discard(None)
    assert len(picked) == len(s.resources_on_wall(owner))  # one comment each, then none left
    assert s.reserve_comment(owner, random.Random(0)) is None
