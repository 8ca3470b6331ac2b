from collections import Counter

import numpy as np
import pytest

from bgbench.workloads.bg.config import BGDatabaseConfig
from bgbench.workloads.bg.generator import CONFIRMED, PENDING, Fragment, FragmentPlan

DB = BGDatabaseConfig(
    usercount=600, friendcountperuser=10, confperc=0.7, resourcecountperuser=4,
    commentcountperresource=2, insertimage=True, imagesize=3, attrcount=4, attrlength=20,
)  # fmt: skip
PLAN = FragmentPlan((1.0, 2.0, 1.0), 0.27)


@pytest.fixture(scope="module")
def fragments():
    return [Fragment(DB, PLAN, k) for k in range(PLAN.count)]


def test_fragments_partition_the_members(fragments):
    everyone = np.sort(np.concatenate([f.members for f in fragments]))
    assert np.array_equal(everyone, np.arange(DB.usercount))


def test_nothing_crosses_a_fragment(fragments):
    for f in fragments:
        mine = set(f.members.tolist())
        assert set(f.friendships[:, 0].tolist()) <= mine
        assert set(f.friendships[:, 1].tolist()) <= mine
        assert set(f.resources[:, 1].tolist()) <= mine  # creators
        assert set(f.resources[:, 2].tolist()) <= mine  # walls
        rids = set(f.resources[:, 0].tolist())
        for rid, _mid, commenter, _text in f.comments():
            assert rid in rids and commenter in mine


def test_every_member_has_phi_relationships_and_no_duplicates(fragments):
    for f in fragments:
        pairs = {tuple(sorted(p)) for p in f.friendships[:, :2].tolist()}
        assert len(pairs) == len(f.friendships)  # no pair twice, in either direction
        degree = Counter(f.friendships[:, 0].tolist()) + Counter(f.friendships[:, 1].tolist())
        assert set(degree.values()) == {DB.friendcountperuser}
        assert all(a != b for a, b, _ in f.friendships.tolist())


def test_confirmed_share_follows_confperc(fragments):
    statuses = np.concatenate([f.friendships[:, 2] for f in fragments])
    assert set(statuses.tolist()) <= {PENDING, CONFIRMED}
    assert (statuses == CONFIRMED).mean() == pytest.approx(DB.confperc, abs=0.05)


def test_initial_values_agree_with_the_rows(fragments):
    for f in fragments:
        friends, pending, resources = Counter(), Counter(), Counter()
        for inviter, invitee, status in f.friendships.tolist():
            if status == CONFIRMED:
                friends[inviter] += 1
                friends[invitee] += 1
            else:
                pending[invitee] += 1
        for _rid, _creator, wall in f.resources.tolist():
            resources[wall] += 1
        members = f.members.tolist()
        assert f.initial_friend_count.tolist() == [friends[m] for m in members]
        assert f.initial_pending_count.tolist() == [pending[m] for m in members]
        assert f.initial_resource_count.tolist() == [resources[m] for m in members]
        per_resource = Counter(rid for rid, *_ in f.comments())
        assert set(per_resource.values()) == {f.initial_comment_count}


def test_deterministic_from_config_and_seed():
    a, b = Fragment(DB, PLAN, 1), Fragment(DB, PLAN, 1)
    assert np.array_equal(a.friendships, b.friendships)
    assert np.array_equal(a.resources, b.resources)
    assert list(a.comments()) == list(b.comments())
    assert a.attributes(5) == b.attributes(5)
    c = Fragment(DB.model_copy(update={"seed": 2}), PLAN, 1)
    assert not np.array_equal(a.friendships, c.friendships)


def test_members_have_attributes_and_images(fragments):
    f = fragments[0]
    attrs = f.attributes(int(f.members[0]))
    assert len(attrs) == DB.attrcount and all(len(a) == DB.attrlength for a in attrs)
    assert len(f.thumbnail) == DB.thumbnailsize * 1024
    assert len(f.profile_image) == DB.imagesize * 1024
    no_images = Fragment(DB.model_copy(update={"insertimage": False}), PLAN, 0)
    assert no_images.thumbnail is None and no_images.profile_image is None


def test_too_small_fragment_is_refused():
    with pytest.raises(ValueError, match="too few"):
        Fragment(
            BGDatabaseConfig(usercount=20, friendcountperuser=10), FragmentPlan((1, 1), 0.27), 0
        )
