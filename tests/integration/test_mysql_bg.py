"""BG's MySQL binding on a real MariaDB (deploy/local's mysql): every action's answers on
the asynchronous connection the runs use, the blocking one tools use, read-back, and the
schema checks. The contract every BG binding passes (test_store_contract.py) runs on it
too; these are what only MySQL's binding does."""

import asyncio
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from bgbench.drivers.mysql import DRIVER_ERRORS
from bgbench.errors import StoreError, UserError
from bgbench.workloads.bg.config import BGDatabaseConfig
from bgbench.workloads.bg.generator import CONFIRMED, PENDING, Fragment, FragmentPlan
from bgbench.workloads.registry import make_binding
from tests.conftest import fresh_mysql_database
from tests.integration.stores import relations

DB = BGDatabaseConfig(
    usercount=80, friendcountperuser=6, confperc=0.5, resourcecountperuser=2,
    commentcountperresource=2, insertimage=True, imagesize=2, attrcount=3, attrlength=12,
)  # fmt: skip
PLAN = FragmentPlan((1.0, 1.0), 0.27)


@pytest.fixture(scope="module")
def loaded(mysql_server) -> Iterator[tuple[Any, list[Fragment], dict]]:
    """One database for the module: the schema and both fragments loaded."""
    options = fresh_mysql_database(mysql_server)
    binding = make_binding("bg", "mysql", options)
    binding.create_schema(DB)
    fragments = [Fragment(DB, PLAN, k) for k in range(PLAN.count)]
    for f in fragments:
        binding.load_fragment(f)
    yield binding, fragments, options
    binding.close()


def on_loop(binding: Any, actions: Any) -> Any:
    """`actions(conn)` on a connection of a fresh event loop, as a socialite runs them."""

    async def run() -> Any:
        conn = await binding.connect_async()
        try:
            return await actions(conn)
        finally:
            await conn.close()
            await binding.aclose()

    return asyncio.run(run())


def test_every_action_answers_what_the_fragment_holds_and_writes_show(loaded):
    binding, fragments, _ = loaded
    f = fragments[1]
    friends, invited_by = relations(f)
    walls = Counter(f.resources[:, 2].tolist())
    member = next(m for m in f.members.tolist() if invited_by.get(m) and walls[m] >= 2)
    i = int(f.local_index([member])[0])
    inviter = min(invited_by[member])
    wall_rids = sorted((r for r, _c, w in f.resources.tolist() if w == member), reverse=True)
    rid = int(f.resources[0, 0])

    async def actions(conn: Any) -> dict[str, Any]:
        seen: dict[str, Any] = {
            "own": await conn.view_profile(member, member),
            "other": await conn.view_profile(inviter, member),
            "friends": await conn.list_friends(inviter, member),
            "requests": await conn.view_friend_requests(member),
            "top": await conn.view_top_k_resources(inviter, member, 2),
            "comments": await conn.view_comments(member, rid),
        }
        await conn.accept_friend_request(inviter, member)
        seen["accepted"] = await conn.view_profile(member, member)
        await conn.thaw_friendship(member, inviter)
        await conn.invite_friend(inviter, member)
        await conn.reject_friend_request(inviter, member)
        seen["restored"] = await conn.view_profile(member, member)
        await conn.post_comment(member, rid, 77, "a new comment")
        seen["posted"] = await conn.view_comments(member, rid)
        await conn.delete_comment(rid, 77)
        seen["deleted"] = await conn.view_comments(member, rid)
        return seen

    seen = on_loop(binding, actions)
    own, other = seen["own"], seen["other"]
    assert (own.member, own.attributes, own.image) == (
        member,
        f.attributes(member),
        f.profile_image,
    )
    assert (own.friend_count, own.resource_count, own.pending_count) == (
        f.initial_friend_count[i], f.initial_resource_count[i], f.initial_pending_count[i],
    )  # fmt: skip
    assert other.pending_count is None and other.friend_count == own.friend_count
    assert {r.member for r in seen["friends"]} == friends.get(member, set())
    assert all(r.attributes == f.attributes(r.member) for r in seen["friends"])
    assert all(r.thumbnail == f.thumbnail for r in seen["friends"] + seen["requests"])
    assert {r.member for r in seen["requests"]} == invited_by[member]
    assert [(r.rid, r.wall) for r in seen["top"]] == [(r, member) for r in wall_rids[:2]]
    generated = {(r, m, who, text) for r, m, who, text in f.comments() if r == rid}
    assert {(c.rid, c.mid, c.commenter, c.text) for c in seen["comments"]} == generated
    accepted = seen["accepted"]
    assert accepted.friend_count == own.friend_count + 1
    assert accepted.pending_count == own.pending_count - 1
    restored = seen["restored"]
    assert (restored.friend_count, restored.pending_count) == (
        own.friend_count,
        own.pending_count - 1,
    )
    assert (rid, 77, member, "a new comment") in {
        (c.rid, c.mid, c.commenter, c.text) for c in seen["posted"]
    }
    assert len(seen["deleted"]) == len(generated)


def test_writes_that_change_nothing_raise_and_a_second_invitation_is_refused(loaded):
    binding, fragments, _ = loaded
    f = fragments[0]
    pairs = {(x, y) for x, y, _st in f.friendships.tolist()}
    a = int(f.members[0])
    stranger = next(m for m in f.members.tolist() if m != a and not {(a, m), (m, a)} & pairs)
    inviter, invitee = next((x, y) for x, y, st in f.friendships.tolist() if st == CONFIRMED)

    async def actions(conn: Any) -> list[str]:
        refused = []
        for call in (
            conn.accept_friend_request(stranger, a),
            conn.reject_friend_request(stranger, a),
            conn.thaw_friendship(a, stranger),
            conn.delete_comment(int(f.resources[0, 0]), 999),
        ):
            with pytest.raises(StoreError, match="no matching row") as caught:
                await call
            refused.append(str(caught.value))
        # the friendship's row exists: its primary key refuses a second one
        with pytest.raises(Exception, match="Duplicate entry"):
            await conn.invite_friend(inviter, invitee)
        return refused

    assert len(on_loop(binding, actions)) == 4


def test_read_back_returns_the_fragment_as_stored_after_writes(loaded):
    binding, fragments, _ = loaded
    f = fragments[0]
    before = binding.read_back(f)
    assert sorted(before.friendships) == sorted(map(tuple, f.friendships.tolist()))
    assert sorted(before.comments) == sorted((r, m) for r, m, _w, _t in f.comments())
    _, invited_by = relations(f)
    invitee = next(m for m in f.members.tolist() if invited_by.get(m))
    inviter = min(invited_by[invitee])
    rid = int(f.resources[-1, 0])

    async def actions(conn: Any) -> None:
        await conn.accept_friend_request(inviter, invitee)
        await conn.post_comment(invitee, rid, 500, "kept")

    on_loop(binding, actions)
    after = binding.read_back(f)
    assert (inviter, invitee, CONFIRMED) in after.friendships
    assert (inviter, invitee, PENDING) not in after.friendships
    assert len(after.friendships) == len(before.friendships)
    assert set(after.comments) == set(before.comments) | {(rid, 500)}
    other = binding.read_back(fragments[1])  # the other fragment's rows only
    assert not {a for a, _b, _s in other.friendships} & set(f.members.tolist())


def test_the_blocking_connection_answers_as_the_asynchronous_one(loaded):
    binding, fragments, _ = loaded
    f = fragments[1]
    m = int(f.members[-1])
    conn = binding.connect()
    try:
        profile, friends = conn.view_profile(m, m), conn.list_friends(m, m)
        top = conn.view_top_k_resources(m, m, 5)
    finally:
        conn.close()

    async def actions(c: Any) -> tuple[Any, Any, Any]:
        return (
            await c.view_profile(m, m),
            await c.list_friends(m, m),
            await c.view_top_k_resources(m, m, 5),
        )

    assert on_loop(binding, actions) == (profile, friends, top)


def test_schema_checks_name_the_field_and_describe_names_the_server(loaded, mysql_server):
    binding, _, options = loaded
    binding.create_schema(DB)  # again: nothing changes, nothing fails
    other = make_binding("bg", "mysql", options)
    with pytest.raises(UserError, match=r"store\.options\.database.*3 attributes"):
        other.use_schema(DB.model_copy(update={"attrcount": 4}))
    empty = make_binding("bg", "mysql", fresh_mysql_database(mysql_server))
    with pytest.raises(StoreError, match="create_schema must run first"):
        empty.use_schema(DB)
    unreachable = make_binding("bg", "mysql", {**options, "port": 9, "connect_timeout_s": 2})
    with pytest.raises(UserError, match=r"store\.options\.host"):
        unreachable.create_schema(DB)
    described = binding.describe()
    assert described.startswith("MariaDB 10.") and "(repeatable read)" in described


def test_after_its_connection_is_killed_a_socialite_prepares_again_on_a_fresh_one(loaded):
    """The server ends the connection (KILL): the action in flight fails, the next one
    runs on a fresh connection of the pool with its statements prepared again."""
    binding, fragments, _ = loaded
    m = int(fragments[0].members[0])

    async def actions(conn: Any) -> tuple[Any, ...]:
        before = await conn.view_profile(m, m)
        killed = conn.con.thread_id()
        killer = binding.connect()
        try:
            killer.conn.cursor().execute(f"KILL CONNECTION {int(killed)}")
        finally:
            killer.close()
        with pytest.raises(DRIVER_ERRORS, match="Lost connection"):
            await conn.view_profile(m, m)
        after = await conn.view_profile(m, m)
        return before, after, killed, conn.con.thread_id()

    before, after, killed, fresh = on_loop(binding, actions)
    assert after == before and fresh != killed
