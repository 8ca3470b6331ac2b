"""Micro over entity groups on a key-value store (drivers/groups.py, Strudel 4.4.1): one
binding for HBase, MongoDB and Cassandra; each store's file (hbase.py, mongodb.py,
cassandra.py) names its driver.

A Micro group is one group of the store, keyed by its number, its entries:

    i<item>   the item's value            total   the stored total
    next      the last message key given  m<key>  a message: "<sender>:<body>"

Every operation is one transaction attempt, optimistic: read the group (version and
entries, one atomic read), compute, commit the changed entries with a compare-and-set
on the version. A commit that finds the version moved applied nothing: the attempt
raises sdk.Abort("conflict") for the workload's retry policy. A message's key is the
group's `next` counter plus one, written in the same commit, so keys are unique within
the group. Values are decimal ASCII, decoded with int() and bounded (the store's
answers are untrusted).
"""

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from bgbench import sdk
from bgbench.drivers.groups import (
    AsyncGroupKV,
    Commit,
    GroupData,
    GroupKV,
    GroupTableBinding,
    Op,
    Read,
    admin_of,
    play,
    play_async,
)
from bgbench.errors import StoreError
from bgbench.workloads.micro.store import FragmentGroups, GroupView

if TYPE_CHECKING:
    pass

TABLE = "micro_groups"
TOTAL, NEXT = "total", "next"
READ_BATCH = 500
Change = tuple[dict[str, bytes], Any]  # the entries to put, and the operation's answer


def number(raw: bytes, where: str) -> int:
    if len(raw) > 24:
        raise StoreError(f"Micro group entry {where}: {len(raw)} bytes is no number")
    try:
        return int(raw)
    except ValueError:
        raise StoreError(f"Micro group entry {where}: not a number") from None


def encoded(n: int) -> bytes:
    return b"%d" % n


def loaded_entries(values: Sequence[int]) -> dict[str, bytes]:
    entries = {f"i{i}": encoded(v) for i, v in enumerate(values)}
    entries[TOTAL] = encoded(sum(values))
    return entries


def view(data: GroupData) -> GroupView:
    values: dict[int, int] = {}
    messages = 0
    for key, raw in data.entries.items():
        if key.startswith("i"):
            values[number(key[1:].encode(), key)] = number(raw, key)
        elif key.startswith("m"):
            messages += 1
    total = number(data.entries[TOTAL], TOTAL) if TOTAL in data.entries else 0
    return GroupView(values, total, messages)


def update(data: GroupData, items: Sequence[int], delta: int) -> Change:
    """The entries update_items writes, and the values it read (before)."""
    if not data.version:
        raise StoreError("update_items on a group that is not loaded")
    values = {k: number(v, k) for k, v in data.entries.items() if k.startswith("i")}
    before: list[int] = []
    for item in items:
        key = f"i{item}"
        if key not in values:
            raise StoreError(f"update_items: the group has no item {item}")
        before.append(values[key])
        values[key] += delta
    puts = {f"i{item}": encoded(values[f"i{item}"]) for item in items}
    total = number(data.entries.get(TOTAL, b"0"), TOTAL)
    puts[TOTAL] = encoded(total + delta * len(items))
    return puts, before


def message(data: GroupData, sender: int, body: int) -> Change:
    """The entries send_message writes, and the message's key."""
    key = number(data.entries.get(NEXT, b"0"), NEXT) + 1
    return {NEXT: encoded(key), f"m{key}": b"%d:%d" % (sender, body)}, key


def group_key(group: int) -> str:
    return str(group)


def transaction(group: int, change: Callable[[GroupData], Change]) -> Op:
    """One attempt: read the group, commit `change`'s entries on its version; the answer."""
    key = group_key(group)
    (data,) = yield Read((key,))
    puts, answer = change(data)
    if not (yield Commit(key, data.version, puts)):
        raise sdk.Abort("conflict", f"group {group} changed since it was read")
    return answer


class MicroKVConnection:
    """One socialite thread's handle (a blocking store: HBase)."""

    def __init__(self, kv: GroupKV) -> None:
        self.kv = kv

    def _transact(self, group: int, change: Callable[[GroupData], Change]) -> Any:
        return play(self.kv, transaction(group, change))

    def read_group(self, group: int) -> GroupView:
        return view(self.kv.read(group_key(group)))

    def update_items(self, group: int, items: Sequence[int], delta: int) -> list[int]:
        before: list[int] = self._transact(group, lambda d: update(d, items, delta))
        return before

    def send_message(self, group: int, sender: int, body: int) -> int:
        return int(self._transact(group, lambda d: message(d, sender, body)))

    def close(self) -> None:
        self.kv.close()


class AsyncMicroKVConnection:
    """One socialite task's handle (an asynchronous store: MongoDB, Cassandra)."""

    def __init__(self, kv: AsyncGroupKV) -> None:
        self.kv = kv

    async def _transact(self, group: int, change: Callable[[GroupData], Change]) -> Any:
        return await play_async(self.kv, transaction(group, change))

    async def read_group(self, group: int) -> GroupView:
        return view(await self.kv.read(group_key(group)))

    async def update_items(self, group: int, items: Sequence[int], delta: int) -> list[int]:
        before: list[int] = await self._transact(group, lambda d: update(d, items, delta))
        return before

    async def send_message(self, group: int, sender: int, body: int) -> int:
        return int(await self._transact(group, lambda d: message(d, sender, body)))

    async def close(self) -> None:
        await self.kv.close()


class MicroGroupKVBinding(GroupTableBinding):
    """The binding; a store's file subclasses it with its name, options and
    `make_groups` (drivers/groups.py: GroupTableBinding)."""

    def load_fragment(self, fragment: FragmentGroups, progress: Callable[[], None]) -> None:
        with admin_of(self.groups) as admin:
            for batch in fragment.group_batches():
                admin.replace((group_key(g.group), loaded_entries(g.values)) for g in batch)
                progress()

    def read_back(
        self, fragment: FragmentGroups, progress: Callable[[], None]
    ) -> dict[int, GroupView]:
        keys = list(fragment.group_keys())
        found: dict[int, GroupView] = {}
        with admin_of(self.groups) as admin:
            for at in range(0, len(keys), READ_BATCH):
                chunk = keys[at : at + READ_BATCH]
                groups = admin.read_many([group_key(g) for g in chunk])
                found.update((g, view(groups[group_key(g)])) for g in chunk)
                progress()
        return found

    def connect(self) -> MicroKVConnection:
        if self.concurrency != "threads":
            raise NotImplementedError(f"the {self.name} binding runs socialites as tasks")
        return MicroKVConnection(self.groups.connect())

    async def connect_async(self) -> AsyncMicroKVConnection:
        if self.concurrency != "asyncio":
            raise NotImplementedError(f"the {self.name} binding runs socialites as threads")
        return AsyncMicroKVConnection(await self.groups.connect_async())
