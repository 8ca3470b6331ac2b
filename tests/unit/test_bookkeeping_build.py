"""FragmentState's picture, built a member at a time (at C speed), is the one a row at a time
builds: the same friends, invitations, walls and comments, each set and list in the same
order (the order decides which friend or comment a seeded choice picks)."""

import random
from collections import defaultdict

import numpy as np
import pytest

from bgbench.workloads.bg.bookkeeping import FragmentState
from bgbench.workloads.bg.config import BGDatabaseConfig
from bgbench.workloads.bg.generator import CONFIRMED, PENDING, Fragment, FragmentPlan
from bgbench.workloads.bg.store import FragmentContents

DB = BGDatabaseConfig(usercount=400, friendcountperuser=8, confperc=0.5, commentcountperresource=2)


def row_at_a_time(rows: list[list[int]], resources: list[list[int]]) -> dict[str, dict]:
    friends: dict[int, set[int]] = defaultdict(set)
    invited_by: dict[int, set[int]] = defaultdict(set)
    invited: dict[int, set[int]] = defaultdict(set)
    for inviter, invitee, status in rows:
        if status == CONFIRMED:
            friends[inviter].add(invitee)
            friends[invitee].add(inviter)
        elif status == PENDING:
            invited_by[invitee].add(inviter)
            invited[inviter].add(invitee)
    walls: dict[int, list[int]] = defaultdict(list)
    for rid, _creator, wall in resources:
        walls[wall].append(rid)
    return {"friends": friends, "invited_by": invited_by, "invited": invited, "walls": walls}


def in_order(groups: dict) -> dict[int, list[int]]:
    return {key: list(values) for key, values in groups.items() if values}


def assert_same_picture(state: FragmentState, rows: list[list[int]]) -> None:
    expected = row_at_a_time(rows, state.fragment.resources.tolist())
    assert in_order(state.friends) == in_order(expected["friends"])
    assert in_order(state.invited_by) == in_order(expected["invited_by"])
    assert in_order(state.invited) == in_order(expected["invited"])
    assert in_order(state.wall_resources) == in_order(expected["walls"])


def test_a_fresh_fragment_is_pictured_as_row_by_row() -> None:
    fragment = Fragment(DB, FragmentPlan((1.0,), 0.27), 0)
    state = FragmentState(fragment)
    assert_same_picture(state, fragment.friendships.tolist())
    rids = sorted(fragment.resources[:, 0].tolist())
    assert all(state.comments[rid] == [0, 1] for rid in rids[:50])
    assert set(state.next_mid.values()) == {2} and sorted(state.next_mid) == rids
    got_rids, counts = state.comment_counts()
    assert got_rids.tolist() == rids and set(counts.tolist()) == {2}
    with pytest.raises(KeyError):
        state.comments[max(rids) + 1]


def test_comment_counts_follow_posts_and_deletes_on_a_fresh_fragment() -> None:
    fragment = Fragment(DB, FragmentPlan((1.0,), 0.27), 0)
    state = FragmentState(fragment)
    rid = int(fragment.resources[0, 0])
    mid = state.new_comment_id(rid)
    state.finish_post(rid, mid, ok=True)
    wall = int(fragment.resources[0, 2])
    taken = state.reserve_comment(wall, random.Random(1))
    assert taken is not None
    rids, counts = state.comment_counts()
    by_rid = dict(zip(rids.tolist(), counts.tolist(), strict=True))
    assert by_rid[rid] == 3 - (taken[0] == rid)
    assert sum(counts.tolist()) == 2 * len(rids)  # one posted, one reserved for deletion


def test_contents_read_back_are_pictured_as_row_by_row() -> None:
    fragment = Fragment(DB, FragmentPlan((1.0,), 0.27), 0)
    rows = fragment.friendships.tolist()[::-1]  # a store returns rows in its own order
    rids = fragment.resources[:, 0].tolist()
    comments = [(rid, mid) for rid in rids[::3] for mid in (4, 1)]
    state = FragmentState(fragment, contents=FragmentContents([tuple(r) for r in rows], comments))
    assert_same_picture(state, rows)
    assert state.comments[rids[0]] == [4, 1] and state.comments[rids[1]] == []
    assert state.next_mid[rids[0]] == 5 and state.next_mid[rids[1]] == 2
    got_rids, counts = state.comment_counts()
    assert got_rids.tolist() == sorted(rids)
    assert int(np.sum(counts)) == len(comments)


def test_no_friendships_read_back_is_an_empty_picture() -> None:
    fragment = Fragment(DB, FragmentPlan((1.0,), 0.27), 0)
    state = FragmentState(fragment, contents=FragmentContents([], []))
    assert not in_order(state.friends) and not in_order(state.invited)
    assert state.friend_counts().sum() == 0
