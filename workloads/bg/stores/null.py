"""The null store: no I/O, plausible answers, to measure the framework itself.

It keeps only the counts of tracked items (so its answers validate cleanly) and
answers lists with shared placeholder rows of the right length. By default its
socialites are tasks on the load process's event loop, like a network store's with an
asynchronous driver (its calls never suspend, so the engine yields between units);
`concurrency = "threads"` measures the threaded engine that blocking stores use.
"""

import threading
from typing import ClassVar

from pydantic import BaseModel

from bgbench.errors import UserError
from bgbench.workloads.bg.config import BGDatabaseConfig
from bgbench.workloads.bg.generator import Fragment
from bgbench.workloads.bg.store import (
    CommentRow,
    FragmentContents,
    MemberRow,
    Profile,
    ResourceRow,
)
from bgbench.workloads.bg.stores.options import NullOptions

_MEMBER = MemberRow(member=0, attributes=[], thumbnail=None)
_RESOURCE = ResourceRow(rid=0, creator=0, wall=0)
_COMMENT = CommentRow(rid=0, mid=0, commenter=0, text="")


class NullBinding:
    name: ClassVar[str] = "null"
    embedded: ClassVar[bool] = True
    full_answers: ClassVar[bool] = False
    can_read_back: ClassVar[bool] = False
    Options: ClassVar[type[BaseModel]] = NullOptions
    suspends: ClassVar[bool] = False
    concurrency: str = "asyncio"  # per instance: the option may ask for threads

    def __init__(self, options: NullOptions) -> None:
        self.concurrency = options.concurrency
        self.lock = threading.Lock()
        self.friends: dict[int, int] = {}
        self.pending: dict[int, int] = {}
        self.resources: dict[int, int] = {}
        self.comments: dict[int, int] = {}
        self.rows: list[MemberRow] = []
        # member -> its profile as others see it (NullAsyncConnection), any friend count
        self.shared_profiles: dict[int, Profile] = {}
        self.rows_of_resources: list[list[ResourceRow]] = [[]]  # n -> n placeholder rows

    def create_schema(self, db: BGDatabaseConfig) -> None:
        pass

    def use_schema(self, db: BGDatabaseConfig) -> None:
        pass

    def load_fragment(self, fragment: Fragment) -> None:
        members = fragment.members.tolist()
        self.friends.update(zip(members, fragment.initial_friend_count.tolist(), strict=True))
        self.pending.update(zip(members, fragment.initial_pending_count.tolist(), strict=True))
        self.resources.update(zip(members, fragment.initial_resource_count.tolist(), strict=True))
        per = fragment.initial_comment_count
        self.comments.update(dict.fromkeys(fragment.resources[:, 0].tolist(), per))
        longest = max([*self.friends.values(), *self.pending.values(), *self.comments.values(), 0])
        self.rows = [_MEMBER] * (longest + fragment.db.usercount)
        self.shared_profiles.clear()
        most = max([*self.resources.values(), 0])
        self.rows_of_resources = [[_RESOURCE] * n for n in range(most + 1)]

    def read_back(self, fragment: Fragment) -> FragmentContents:
        raise UserError("the null store keeps counts only: use rating.state carry or reload")

    def connect(self) -> "NullConnection":
        return NullConnection(self)

    async def connect_async(self) -> "NullAsyncConnection":
        return NullAsyncConnection(self)

    async def aclose(self) -> None:
        pass

    def describe(self) -> str:
        return "null store (in-process counters, no I/O)"

    def counters(self) -> dict[str, int]:
        return {}

    def close(self) -> None:
        pass


class NullConnection:
    def __init__(self, store: NullBinding) -> None:
        self.s = store

    def view_profile(self, requester: int, member: int) -> Profile:
        s = self.s
        pending = s.pending[member] if requester == member else None
        return Profile(member, [], s.friends[member], s.resources[member], pending, None)

    def list_friends(self, requester: int, member: int) -> list[MemberRow]:
        return self.s.rows[: self.s.friends[member]]

    def view_friend_requests(self, member: int) -> list[MemberRow]:
        return self.s.rows[: self.s.pending[member]]

    def _add(self, table: dict[int, int], key: int, delta: int) -> None:
        with self.s.lock:
            table[key] += delta

    def invite_friend(self, inviter: int, invitee: int) -> None:
        self._add(self.s.pending, invitee, 1)

    def accept_friend_request(self, inviter: int, invitee: int) -> None:
        with self.s.lock:
            self.s.pending[invitee] -= 1
            self.s.friends[invitee] += 1
            self.s.friends[inviter] += 1

    def reject_friend_request(self, inviter: int, invitee: int) -> None:
        self._add(self.s.pending, invitee, -1)

    def thaw_friendship(self, member: int, friend: int) -> None:
        with self.s.lock:
            self.s.friends[member] -= 1
            self.s.friends[friend] -= 1

    def view_top_k_resources(self, requester: int, member: int, k: int) -> list[ResourceRow]:
        return [_RESOURCE] * min(k, self.s.resources[member])

    def view_comments(self, requester: int, rid: int) -> list[CommentRow]:
        return [_COMMENT] * self.s.comments[rid]

    def post_comment(self, commenter: int, rid: int, mid: int, text: str) -> None:
        self._add(self.s.comments, rid, 1)

    def delete_comment(self, rid: int, mid: int) -> None:
        self._add(self.s.comments, rid, -1)

    def close(self) -> None:
        pass


class NullAsyncConnection:
    """The same answers on the event loop: one task runs at a time, so no lock. A member's
    profile as others see it is made once and made again when its friend count changed
    (the store's own cost stays small beside the framework's it is there to measure)."""

    def __init__(self, store: NullBinding) -> None:
        self.s = store
        self.profiles = store.shared_profiles

    async def view_profile(self, requester: int, member: int) -> Profile:
        s = self.s
        if requester != member:
            p = self.profiles.get(member)
            friends = s.friends[member]
            if p is None or p.friend_count != friends:
                p = Profile(member, [], friends, s.resources[member], None, None)
                self.profiles[member] = p
            return p
        pending = s.pending[member]
        return Profile(member, [], s.friends[member], s.resources[member], pending, None)

    async def list_friends(self, requester: int, member: int) -> list[MemberRow]:
        return self.s.rows[: self.s.friends[member]]

    async def view_friend_requests(self, member: int) -> list[MemberRow]:
        return self.s.rows[: self.s.pending[member]]

    async def invite_friend(self, inviter: int, invitee: int) -> None:
        self.s.pending[invitee] += 1

    async def accept_friend_request(self, inviter: int, invitee: int) -> None:
        s = self.s
        s.pending[invitee] -= 1
        s.friends[invitee] += 1
        s.friends[inviter] += 1

    async def reject_friend_request(self, inviter: int, invitee: int) -> None:
        self.s.pending[invitee] -= 1

    async def thaw_friendship(self, member: int, friend: int) -> None:
        self.s.friends[member] -= 1
        self.s.friends[friend] -= 1

    async def view_top_k_resources(self, requester: int, member: int, k: int) -> list[ResourceRow]:
        s = self.s
        n = s.resources[member]
        return s.rows_of_resources[n if n < k else k]  # no call to min(): half of its actions

    async def view_comments(self, requester: int, rid: int) -> list[CommentRow]:
        return [_COMMENT] * self.s.comments[rid]

    async def post_comment(self, commenter: int, rid: int, mid: int, text: str) -> None:
        self.s.comments[rid] += 1

    async def delete_comment(self, rid: int, mid: int) -> None:
        self.s.comments[rid] -= 1

    async def close(self) -> None:
        pass
