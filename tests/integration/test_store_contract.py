"""The contract every BG store binding passes against its real server (YCSB's
AbstractDBTestCases idea). Parametrised over every registered binding."""

import threading
from collections import Counter
from typing import Any

import pytest

from bgbench.sdk import blocking_connection
from bgbench.workloads import registry
from bgbench.workloads.bg.config import BGDatabaseConfig
from bgbench.workloads.bg.generator import Fragment, FragmentPlan
from tests.integration.stores import SERVERS, relations

DB = BGDatabaseConfig(
    usercount=120, friendcountperuser=6, confperc=0.5, resourcecountperuser=3,
    commentcountperresource=2, insertimage=True, imagesize=4, attrcount=3, attrlength=16,
)  # fmt: skip
PLAN = FragmentPlan((1.0, 1.0), 0.27)


def store_names() -> list[str]:
    return registry.store_names("bg")


def binding_class(name: str) -> type:
    return registry.binding_class("bg", name)


def make_binding(name: str, options: dict) -> Any:
    return registry.make_binding("bg", name, options)


FULL_ANSWER_STORES = [n for n in store_names() if binding_class(n).full_answers]


@pytest.fixture(params=store_names())
def store(request, tmp_path):
    yield from _loaded(request.param, tmp_path, request)


@pytest.fixture(params=FULL_ANSWER_STORES)
def full_store(request, tmp_path):
    """Stores whose answers carry real content (all but the null store)."""
    yield from _loaded(request.param, tmp_path, request)


def _loaded(name, tmp_path, request):
    assert name in SERVERS, (
        f"no test server for store {name!r}: add it to tests/integration/stores.py"
    )
    for options in SERVERS[name](tmp_path, request):
        binding = make_binding(name, options)
        binding.create_schema(DB)
        fragments = [Fragment(DB, PLAN, k) for k in range(PLAN.count)]
        for f in fragments:
            binding.load_fragment(f)
        yield binding, fragments
        binding.close()


def test_profiles_show_the_generated_counts(store):
    binding, fragments = store
    conn = blocking_connection(binding)
    try:
        for f in fragments:
            for i, m in enumerate(f.members.tolist()):
                p = conn.view_profile(m, m)
                assert p.friend_count == f.initial_friend_count[i]
                assert p.resource_count == f.initial_resource_count[i]
                assert p.pending_count == f.initial_pending_count[i]
                other = conn.view_profile(m + 1 if m + 1 < DB.usercount else 0, m)
                assert other.pending_count is None  # only members see their own invitations
                assert other.friend_count == f.initial_friend_count[i]
                if binding.full_answers:
                    assert p.attributes == f.attributes(m)
                    assert p.image == f.profile_image
    finally:
        conn.close()


def test_lists_show_friends_and_invitations(store):
    binding, fragments = store
    conn = blocking_connection(binding)
    try:
        for f in fragments:
            friends, invited_by = relations(f)
            for m in f.members.tolist():
                rows = conn.list_friends(m, m)
                requests = conn.view_friend_requests(m)
                assert len(rows) == len(friends.get(m, ()))
                assert len(requests) == len(invited_by.get(m, ()))
                if binding.full_answers:
                    assert {r.member for r in rows} == friends.get(m, set())
                    assert {r.member for r in requests} == invited_by.get(m, set())
                    assert all(r.thumbnail == f.thumbnail for r in rows)
                    assert all(r.attributes == f.attributes(r.member) for r in rows)
    finally:
        conn.close()


def test_friendship_writes_change_exactly_their_counts(store):
    binding, fragments = store
    f = fragments[0]
    friends, invited_by = relations(f)
    conn = blocking_connection(binding)
    try:
        a = next(m for m in f.members.tolist() if invited_by.get(m))
        inviter = sorted(invited_by[a])[0]
        before_a, before_i = conn.view_profile(a, a), conn.view_profile(inviter, inviter)
        conn.accept_friend_request(inviter, a)
        after_a, after_i = conn.view_profile(a, a), conn.view_profile(inviter, inviter)
        assert after_a.pending_count == before_a.pending_count - 1
        assert after_a.friend_count == before_a.friend_count + 1
        assert after_i.friend_count == before_i.friend_count + 1
        assert after_i.pending_count == before_i.pending_count

        conn.thaw_friendship(a, inviter)
        assert conn.view_profile(a, a).friend_count == before_a.friend_count
        assert conn.view_profile(inviter, inviter).friend_count == before_i.friend_count

        related = friends.get(a, set()) | invited_by.get(a, set())
        related |= {x for x, ys in invited_by.items() if a in ys}
        stranger = next(m for m in f.members.tolist() if m != a and m not in related)
        conn.invite_friend(a, stranger)
        assert conn.view_profile(stranger, stranger).pending_count == (
            f.initial_pending_count[f.local_index([stranger])[0]] + 1
        )
        if binding.full_answers:
            assert a in {r.member for r in conn.view_friend_requests(stranger)}
        conn.reject_friend_request(a, stranger)
        assert (
            conn.view_profile(stranger, stranger).pending_count
            == (f.initial_pending_count[f.local_index([stranger])[0]])
        )
        assert (
            conn.view_profile(stranger, stranger).friend_count
            == (f.initial_friend_count[f.local_index([stranger])[0]])
        )
    finally:
        conn.close()


def test_resources_and_comments(store):
    binding, fragments = store
    f = fragments[1]
    conn = blocking_connection(binding)
    try:
        walls = Counter(f.resources[:, 2].tolist())
        member = max(walls, key=walls.get)
        top = conn.view_top_k_resources(member, member, 2)
        assert len(top) == min(2, walls[member])
        rids = sorted((r for r, _c, w in f.resources.tolist() if w == member), reverse=True)
        if binding.full_answers:
            assert [r.rid for r in top] == rids[:2]  # "top" is the highest rid, as in BG
        rid = rids[0]
        assert len(conn.view_comments(member, rid)) == DB.commentcountperresource
        conn.post_comment(member, rid, 50, "hello")
        comments = conn.view_comments(member, rid)
        assert len(comments) == DB.commentcountperresource + 1
        if binding.full_answers:
            assert any(
                c.mid == 50 and c.text == "hello" and c.commenter == member for c in comments
            )
        conn.delete_comment(rid, 0)
        conn.delete_comment(rid, 50)
        assert len(conn.view_comments(member, rid)) == DB.commentcountperresource - 1
    finally:
        conn.close()


def test_writes_that_match_nothing_are_errors(full_store):
    binding, fragments = full_store
    f = fragments[0]
    friends, _ = relations(f)
    a = next(m for m in f.members.tolist() if friends.get(m))
    stranger = next(m for m in f.members.tolist() if m != a and m not in friends[a])
    conn = blocking_connection(binding)
    try:
        with pytest.raises(Exception, match="no matching row"):
            conn.accept_friend_request(stranger, a)
        with pytest.raises(Exception, match="no matching row"):
            conn.thaw_friendship(a, stranger)
        with pytest.raises(Exception, match="no matching row"):
            conn.delete_comment(int(f.resources[0, 0]), 999)
    finally:
        conn.close()


def test_reloading_a_fragment_restores_it_and_leaves_others_alone(store):
    binding, fragments = store
    f0, f1 = fragments
    friends, _ = relations(f0)
    a = next(m for m in f0.members.tolist() if friends.get(m))
    conn = blocking_connection(binding)
    try:
        conn.thaw_friendship(a, sorted(friends[a])[0])
        b = int(f1.members[0])
        other = next(iter(relations(f1)[0][b]))
        conn.thaw_friendship(b, other)
    finally:
        conn.close()
    binding.load_fragment(f0)
    conn = blocking_connection(binding)
    try:
        assert conn.view_profile(a, a).friend_count == len(friends[a])
        assert conn.view_profile(b, b).friend_count == len(relations(f1)[0][b]) - 1
    finally:
        conn.close()


def test_concurrent_writers_lose_nothing(store):
    binding, fragments = store
    f = fragments[0]
    _friends, _ = relations(f)
    rid_of = {w: r for r, _c, w in f.resources.tolist()}
    targets = [m for m in f.members.tolist() if m in rid_of][:8]
    errors: list[BaseException] = []

    def writer(k: int) -> None:
        conn = blocking_connection(binding)
        try:
            rid = rid_of[targets[k]]
            for i in range(25):
                conn.post_comment(targets[k], rid, 1000 + i, f"c{k}-{i}")
        except BaseException as exc:  # surfaced below
            errors.append(exc)
        finally:
            conn.close()

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(len(targets))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    conn = blocking_connection(binding)
    try:
        for m in targets:
            assert len(conn.view_comments(m, rid_of[m])) == DB.commentcountperresource + 25
    finally:
        conn.close()


def _load_all(pairs) -> list[BaseException]:  # type: ignore[no-untyped-def]
    """Each (binding, fragment) loaded in a thread of its own, all at once; what they raised."""
    errors: list[BaseException] = []

    def load(binding, fragment) -> None:  # type: ignore[no-untyped-def]
        try:
            binding.load_fragment(fragment)
        except BaseException as exc:  # surfaced by the caller
            errors.append(exc)

    threads = [threading.Thread(target=load, args=pair) for pair in pairs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


@pytest.mark.parametrize("name", store_names())
def test_load_processes_share_a_schema_one_of_them_created(name, tmp_path, request):
    """As the agents prepare: one binding creates the schema, the others only use it (no
    DDL), and all load their fragments at the same time."""
    for options in SERVERS[name](tmp_path, request):
        creator, user = make_binding(name, options), make_binding(name, options)
        try:
            creator.create_schema(DB)
            user.use_schema(DB)
            fragments = [Fragment(DB, PLAN, k) for k in range(PLAN.count)]
            errors = _load_all(zip((creator, user), fragments, strict=True))
            assert not errors, errors
            # each fragment through the binding that did not load it, where the store is shared
            readers = (user, creator) if binding_class(name).full_answers else (creator, user)
            for binding, f in zip(readers, fragments, strict=True):
                conn = blocking_connection(binding)
                try:
                    m = int(f.members[0])
                    assert conn.view_profile(m, m).friend_count == f.initial_friend_count[0]
                finally:
                    conn.close()
        finally:
            creator.close()
            user.close()
