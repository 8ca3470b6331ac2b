"""The store seam of the BG workload: what a binding implements, declared as Protocols.

A binding is small and dumb: schema and load hooks plus the 11 actions. It never
times itself; `timed.TimedConnection` times every call. One binding per file
under `stores/`, registered once as an entry point in pyproject.toml.

A binding with a maintained asynchronous driver declares `concurrency = "asyncio"` and
gives each socialite an AsyncBGConnection (`connect_async`, on the load process's event
loop); a blocking one (`"threads"`) gives each socialite thread a BGConnection, which the
workload views through `sdk.connection_for` as an AsyncBGConnection, so one asynchronous
definition of the actions and sessions serves both. Loading, schema and read-back stay
blocking for every binding.
"""

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Literal, Protocol, runtime_checkable

from pydantic import BaseModel

if TYPE_CHECKING:
    from bgbench.workloads.bg.config import BGDatabaseConfig
    from bgbench.workloads.bg.generator import Fragment

ENTRY_POINT_GROUP = "bgbench.bg_stores"


@dataclass(slots=True)
class Profile:
    member: int
    attributes: list[str]
    friend_count: int
    resource_count: int
    pending_count: int | None  # only when members view their own profile
    image: bytes | None


@dataclass(slots=True)
class MemberRow:
    """A friend or an inviter, as LF and VFR list them (thumbnail, not profile image)."""

    member: int
    attributes: list[str]
    thumbnail: bytes | None


@dataclass(slots=True)
class ResourceRow:
    rid: int
    creator: int
    wall: int


@dataclass(slots=True)
class CommentRow:
    rid: int
    mid: int
    commenter: int
    text: str


@dataclass(slots=True)
class FragmentContents:
    """What read_back() returns: rows of (inviter, invitee, status), and (rid, mid)."""

    friendships: list[tuple[int, int, int]]
    comments: list[tuple[int, int]]


@runtime_checkable
class BGConnection(Protocol):
    """One thread's handle on the store. Calls may raise; they are never retried here."""

    def view_profile(self, requester: int, member: int) -> Profile: ...
    def list_friends(self, requester: int, member: int) -> list[MemberRow]: ...
    def view_friend_requests(self, member: int) -> list[MemberRow]: ...
    def invite_friend(self, inviter: int, invitee: int) -> None: ...
    def accept_friend_request(self, inviter: int, invitee: int) -> None: ...
    def reject_friend_request(self, inviter: int, invitee: int) -> None: ...
    def thaw_friendship(self, member: int, friend: int) -> None: ...
    def view_top_k_resources(self, requester: int, member: int, k: int) -> list[ResourceRow]: ...
    def view_comments(self, requester: int, rid: int) -> list[CommentRow]: ...
    def post_comment(self, commenter: int, rid: int, mid: int, text: str) -> None: ...
    def delete_comment(self, rid: int, mid: int) -> None: ...
    def close(self) -> None: ...


@runtime_checkable
class AsyncBGConnection(Protocol):
    """One socialite task's handle on the store, on the load process's event loop."""

    async def view_profile(self, requester: int, member: int) -> Profile: ...
    async def list_friends(self, requester: int, member: int) -> list[MemberRow]: ...
    async def view_friend_requests(self, member: int) -> list[MemberRow]: ...
    async def invite_friend(self, inviter: int, invitee: int) -> None: ...
    async def accept_friend_request(self, inviter: int, invitee: int) -> None: ...
    async def reject_friend_request(self, inviter: int, invitee: int) -> None: ...
    async def thaw_friendship(self, member: int, friend: int) -> None: ...
    async def view_top_k_resources(
        self, requester: int, member: int, k: int
    ) -> list[ResourceRow]: ...
    async def view_comments(self, requester: int, rid: int) -> list[CommentRow]: ...
    async def post_comment(self, commenter: int, rid: int, mid: int, text: str) -> None: ...
    async def delete_comment(self, rid: int, mid: int) -> None: ...
    async def close(self) -> None: ...


Concurrency = Literal["threads", "asyncio"]


class BGBinding(Protocol):
    """A store for the BG workload. Constructed once per load process with its options."""

    name: ClassVar[str]
    # "asyncio": socialites are tasks on one event loop per load process (connect_async);
    # "threads": one OS thread per socialite (connect), for drivers that only block.
    concurrency: ClassVar[Concurrency]
    # False when the store's calls return without ever suspending the task (the null
    # store): the engine then yields to the loop between units itself.
    suspends: ClassVar[bool]
    # True when the store runs inside the load process (SQLite): its CPU is the client's.
    embedded: ClassVar[bool]
    # True when answers carry real content (attributes, ids, images); the null store's
    # answers only have the right lengths and counts.
    full_answers: ClassVar[bool]
    # True when read_back() can return the fragment's current rows.
    can_read_back: ClassVar[bool]
    Options: ClassVar[type[BaseModel]]
    # The options that name files (SQLite's "path"): a remote agent keeps them inside its
    # work dir. A binding without the attribute names none.
    file_options: ClassVar[tuple[str, ...]] = ()

    def create_schema(self, db: "BGDatabaseConfig") -> None:
        """Create the tables (DDL), then as use_schema. Runs once per database, in one load
        process, before any fragment loads: never beside another process's load."""
        ...

    def use_schema(self, db: "BGDatabaseConfig") -> None:
        """Ready this binding for a schema another process created: no DDL, no lock that
        could conflict with a load. Every other load process calls this instead."""
        ...

    def load_fragment(self, fragment: "Fragment") -> None:
        """Replace this fragment's rows with its generated initial state. Load processes
        call it at the same time, each for its own fragment: it must be safe concurrently."""
        ...

    def read_back(self, fragment: "Fragment") -> "FragmentContents":
        """The fragment's relationships and comments as the quiescent store holds them."""
        ...

    def connect(self) -> BGConnection:
        """A blocking connection (concurrency "threads")."""
        ...

    async def connect_async(self) -> AsyncBGConnection:
        """A connection on the running event loop (concurrency "asyncio"). Tests may call
        it from several loops: keep loop-bound resources (pools) per loop."""
        ...

    async def aclose(self) -> None:
        """Release what connect_async made on the running loop (pools), before it closes."""
        ...

    def describe(self) -> str:
        """The server this binding talks to (name and version), for results."""
        ...

    def counters(self) -> dict[str, int]:
        """The binding's own counts (a cache's hits, misses, oversized values), for results."""
        ...

    def close(self) -> None: ...
