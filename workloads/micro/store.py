"""The store seam of Strudel's Micro benchmark: what a binding implements (Protocols).

The database is a set of entity groups (Strudel 4.1): a group has an integer key, a
fixed set of items (0 .. n-1) holding integer values, a stored `total` kept equal to
the sum of its items by every transaction, and an inbox of messages whose keys the
store generates, unique within the group (Strudel 4.2: locally unique keys). The
workload decides what a group is (a user's personal items, a shared set, a user's
public items, a user's inbox: workload.py); the binding sees only group keys.

Every operation is one transaction on one group, and the binding decides how it
isolates it, by its `concurrency_control` option where the store offers both:
"optimistic" (read the group's version, buffer, compare-and-set at commit: Strudel's
HBase and MongoDB implementations; PostgreSQL's SERIALIZABLE) or "pessimistic" (locks:
SELECT ... FOR UPDATE, the store's multi-statement transactions). An attempt the store
refused raises `sdk.Abort(cause)` with cause "conflict" (a compare-and-set that found
the version moved, a serialization failure), "deadlock" or "lock_timeout", and then
nothing of it may have applied. A binding never retries: the workload's retry policy
does (sdk.transactions). Any other exception means the outcome is unknown.

A binding with an asynchronous driver declares `concurrency = "asyncio"` and gives each
socialite an `AsyncMicroConnection` from `connect_async`; a blocking one ("threads")
gives each thread a `MicroConnection` from `connect`, viewed asynchronously through
`sdk.connection_for`. Schema, load and read-back stay blocking for every binding.
"""

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, ClassVar, Literal, NamedTuple, Protocol, runtime_checkable

from pydantic import BaseModel

if TYPE_CHECKING:
    from bgbench.workloads.micro.config import MicroDatabaseConfig

ENTRY_POINT_GROUP = "bgbench.micro_stores"

Concurrency = Literal["threads", "asyncio"]
ConcurrencyControl = Literal["optimistic", "pessimistic"]


class GroupRows(NamedTuple):
    """One group as loaded: its key and its items' values (item i holds values[i]); its
    total is sum(values) and its inbox is empty."""

    group: int
    values: list[int]


class GroupView(NamedTuple):
    """One group as one snapshot shows it: every item's value (item -> value), the stored
    total, and how many messages its inbox holds."""

    values: dict[int, int]
    total: int
    messages: int


class FragmentGroups(Protocol):
    """What `load_fragment` and `read_back` get: one fragment's groups, generated batch by
    batch as they are iterated (generator.py)."""

    index: int

    def group_keys(self) -> Sequence[int]: ...
    def group_batches(self) -> Iterator[list[GroupRows]]: ...


@runtime_checkable
class MicroConnection(Protocol):
    """One socialite thread's handle on the store: one call is one transaction attempt."""

    def read_group(self, group: int) -> GroupView:
        """Every item, the total and the inbox size of `group`, from one snapshot (a
        read-only transaction, one document or row or partition read)."""
        ...

    def update_items(self, group: int, items: Sequence[int], delta: int) -> list[int]:
        """In one transaction: read the given items of `group`, add `delta` to each, add
        delta * len(items) to the group's total. Returns the values read (before the
        update), in the order of `items`. Raises sdk.Abort when the store refused it."""
        ...

    def send_message(self, group: int, sender: int, body: int) -> int:
        """In one transaction: add a message to the inbox of `group` under a key the store
        generates, unique within the group. Returns that key."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class AsyncMicroConnection(Protocol):
    """One socialite task's handle on the store, on the load process's event loop."""

    async def read_group(self, group: int) -> GroupView: ...
    async def update_items(self, group: int, items: Sequence[int], delta: int) -> list[int]: ...
    async def send_message(self, group: int, sender: int, body: int) -> int: ...
    async def close(self) -> None: ...


class MicroBinding(Protocol):
    """A store for the Micro benchmark. Constructed once per load process with its options."""

    name: ClassVar[str]
    concurrency: ClassVar[Concurrency]
    suspends: ClassVar[bool]
    embedded: ClassVar[bool]
    # True when read_back() can read every group of a fragment in the quiescent store.
    can_read_back: ClassVar[bool]
    Options: ClassVar[type[BaseModel]]
    file_options: ClassVar[tuple[str, ...]]

    def create_schema(self, db: "MicroDatabaseConfig") -> None:
        """Create the tables (DDL), then as use_schema. Runs once per database, in one load
        process, before any fragment loads."""
        ...

    def use_schema(self, db: "MicroDatabaseConfig") -> None:
        """Ready this binding for a schema another process created: no DDL."""
        ...

    def load_fragment(self, fragment: FragmentGroups, progress: Callable[[], None]) -> None:
        """Replace the fragment's groups (items, totals, inboxes: what runs changed too)
        with the generated ones, calling `progress` at least once per batch. Load processes
        call it at the same time, each for its own fragment."""
        ...

    def read_back(
        self, fragment: FragmentGroups, progress: Callable[[], None]
    ) -> dict[int, GroupView]:
        """Every group of the fragment as the quiescent store holds it."""
        ...

    def connect(self) -> MicroConnection: ...
    async def connect_async(self) -> AsyncMicroConnection: ...
    async def aclose(self) -> None: ...
    def describe(self) -> str: ...
    def counters(self) -> dict[str, int]: ...
    def close(self) -> None: ...
