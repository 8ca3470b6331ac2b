"""Entity-group transactions over a key-value store (Strudel 4.4.1, "Transactional KVS"),
written once per store and shared by every workload's bindings on it.

A group is one row (HBase), one document (MongoDB) or one partition (Cassandra) holding
named entries (str -> bytes) and a version. A transaction reads the group (`read`: one
atomic read, the version with the entries), buffers its writes, and commits them with
`commit(group, version, puts, deletes)`: one compare-and-set that applies only if the
stored version is still `version` (0: the group does not exist yet), and then stores
version + 1. A False answer is a conflict: another transaction changed the group since
the read, nothing was applied, and the caller raises `sdk.Abort("conflict")` for its
retry policy. There is no concurrency within a group, exactly as in Strudel's HBase
and MongoDB implementations (Figures 10 and 11 show what that costs).

Per store: `drivers/hbase_groups.py` (check-and-put on the group's row, the version in
its own column), `drivers/mongodb_groups.py` (update_one filtered on _id and the version
field), `drivers/cassandra_groups.py` (a lightweight transaction, `IF version = ?` on the
group's partition, reads at SERIAL). Each offers the asynchronous or the blocking form
its driver has, and a blocking `GroupAdmin` for schema and loading.

A workload writes each operation once, as a generator of `Read` and `Commit` requests
(`Op`: each yield answers with the groups read, or with the commit's bool), and `play` or
`play_async` runs it on a blocking or an asynchronous handle.
"""

import asyncio
from collections.abc import Generator, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, ClassVar, NamedTuple, Protocol

from pydantic import BaseModel

from bgbench.sdk.workload import Concurrency


class GroupData(NamedTuple):
    """A group as one atomic read found it: version 0 and no entries when it is absent."""

    version: int
    entries: dict[str, bytes]


class GroupKV(Protocol):
    """One socialite thread's blocking handle on one table of groups."""

    def read(self, group: str) -> GroupData: ...

    def commit(
        self, group: str, version: int, puts: Mapping[str, bytes], deletes: Sequence[str] = ()
    ) -> bool:
        """Apply `puts` and `deletes` and store version + 1 if the stored version is still
        `version` (0: create the group); False, applying nothing, otherwise."""
        ...

    def close(self) -> None: ...


class AsyncGroupKV(Protocol):
    """One socialite task's handle on one table of groups, on the running event loop."""

    async def read(self, group: str) -> GroupData: ...

    async def commit(
        self, group: str, version: int, puts: Mapping[str, bytes], deletes: Sequence[str] = ()
    ) -> bool: ...

    async def close(self) -> None: ...


class GroupAdmin(Protocol):
    """Blocking schema and bulk loading of one table of groups (no transactions: loads run
    before any experiment, each load process on its own groups)."""

    def create_table(self) -> None:
        """The table, unless it exists (another process making it meanwhile is fine)."""
        ...

    def replace(self, groups: Iterable[tuple[str, Mapping[str, bytes]]]) -> None:
        """Write each group afresh (every old entry gone) at version 1."""
        ...

    def delete(self, groups: Iterable[str]) -> None: ...

    def read_many(self, groups: Sequence[str]) -> dict[str, GroupData]: ...

    def describe(self) -> str: ...

    def close(self) -> None: ...


class Read(NamedTuple):
    groups: tuple[str, ...]


class Commit(NamedTuple):
    group: str
    version: int
    puts: dict[str, bytes]
    deletes: tuple[str, ...] = ()


Op = Generator[Read | Commit, Any, Any]


def play(kv: GroupKV, op: Op) -> Any:
    """Run `op` on a blocking handle: its answer."""
    answer: Any = None
    try:
        while True:
            request = op.send(answer)
            if isinstance(request, Read):
                answer = [kv.read(g) for g in request.groups]
            else:
                answer = kv.commit(*request)
    except StopIteration as done:
        return done.value


async def play_async(kv: AsyncGroupKV, op: Op) -> Any:
    """Run `op` on an asynchronous handle (a Read's groups read at once): its answer."""
    answer: Any = None
    try:
        while True:
            request = op.send(answer)
            if isinstance(request, Read):
                answer = await asyncio.gather(*(kv.read(g) for g in request.groups))
            else:
                answer = await kv.commit(*request)
    except StopIteration as done:
        return done.value


@contextmanager
def admin_of(groups: Any) -> Iterator[GroupAdmin]:
    """A store's table of groups' GroupAdmin, closed after the block."""
    admin = groups.admin()
    try:
        yield admin
    finally:
        admin.close()


class GroupTableBinding:
    """What a workload's binding over a table of groups shares, whatever the workload: a
    store's file names its options and `make_groups` (its driver's table of groups:
    admin(), connect() or connect_async(), describe(), close(), aclose()); the workload's
    class adds loading, read-back and its connections."""

    name: ClassVar[str]
    concurrency: ClassVar[Concurrency]
    suspends: ClassVar[bool] = True
    embedded: ClassVar[bool] = False
    can_read_back: ClassVar[bool] = True
    Options: ClassVar[type[BaseModel]]
    file_options: ClassVar[tuple[str, ...]] = ()

    def __init__(self, options: BaseModel) -> None:
        self.options = options
        self.groups = self.make_groups(options)

    def make_groups(self, options: Any) -> Any:
        raise NotImplementedError

    def create_schema(self, db: Any) -> None:
        with admin_of(self.groups) as admin:
            admin.create_table()

    def use_schema(self, db: Any) -> None:
        """Nothing to check: the first read of a missing table fails as a store fault."""

    async def aclose(self) -> None:
        if self.concurrency == "asyncio":
            await self.groups.aclose()

    def describe(self) -> str:
        return f"{self.groups.describe()}, entity groups (optimistic: version compare-and-set)"

    def counters(self) -> dict[str, int]:
        return {}

    def close(self) -> None:
        self.groups.close()
