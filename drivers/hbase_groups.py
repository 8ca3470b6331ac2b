"""Entity groups on HBase (drivers/groups.py): one row per group, the group in ONE cell.

    {prefix}{table}   row = the group key    g:d = version and entries, encoded below

The commit is HBase's checkAndPut on the group's row, as in Strudel. Over the Thrift
gateway (Thrift1, what happybase speaks) checkAndPut takes a single Mutation: it can
check one cell and put one cell, never several columns at once, nor a delete. So the
group's entries are not columns of their own: the version and every entry are encoded
in one cell, and a commit is checkAndPut(expected = the exact bytes read, put = the new
bytes). The version inside makes the bytes of every committed state distinct, so the
check is a compare-and-set on the version; a delete is simply an entry left out of the
new cell. Version 0 (no group yet) is checkAndPut against the cell's absence. The cost:
a commit writes the whole group, so it suits groups of modest size (the Micro and
Auction groups: items, counters and index entries).

The handle remembers the cells it last read (the latest 64 groups), so a commit after
a read sends no second read; a commit on a version it has not kept reads the cell first.
Happybase blocks: bindings over it run socialites as threads, one handle each.
"""

import struct
from collections.abc import Iterable, Mapping, Sequence

from happybase.batch import Mutation  # the Thrift IDL's struct, as happybase loads it

from bgbench.drivers import hbase
from bgbench.drivers.groups import GroupData
from bgbench.drivers.hbase_options import HBaseOptions
from bgbench.errors import StoreError

__all__ = ["HBaseGroupAdmin", "HBaseGroupKV", "HBaseGroups", "decode", "encode"]

FAMILY = "g"
CELL = b"g:d"
HEADER = struct.Struct(">QI")  # version, entry count
KEY_LEN = struct.Struct(">H")
VALUE_LEN = struct.Struct(">I")
MAX_ENTRIES = 1_000_000
SEEN = 64  # cells a handle remembers for its next commits


def encode(version: int, entries: Mapping[str, bytes]) -> bytes:
    parts = [HEADER.pack(version, len(entries))]
    for key in sorted(entries):
        name = key.encode()
        value = entries[key]
        parts += [KEY_LEN.pack(len(name)), name, VALUE_LEN.pack(len(value)), value]
    return b"".join(parts)


def decode(cell: bytes) -> GroupData:
    """A cell as encode() wrote it; a StoreError for anything else (a server's answer is
    untrusted: every length is checked against what is left)."""
    try:
        version, count = HEADER.unpack_from(cell, 0)
        if count > MAX_ENTRIES:
            raise ValueError(f"{count} entries")
        at = HEADER.size
        entries: dict[str, bytes] = {}
        for _ in range(count):
            (n,) = KEY_LEN.unpack_from(cell, at)
            at += KEY_LEN.size
            key = cell[at : at + n].decode()
            at += n
            (m,) = VALUE_LEN.unpack_from(cell, at)
            at += VALUE_LEN.size
            if at + m > len(cell):
                raise ValueError("a value runs past the cell")
            entries[key] = cell[at : at + m]
            at += m
        if at != len(cell):
            raise ValueError("bytes after the last entry")
    except (struct.error, ValueError) as exc:
        raise StoreError(f"HBase group cell not in bgbench's form: {exc}") from None
    return GroupData(version, entries)


def _key(group: str) -> bytes:
    return group.encode()


class HBaseGroupKV:
    """One socialite thread's handle (GroupKV) on one table of groups."""

    def __init__(self, options: HBaseOptions, table: str) -> None:
        self.conn = hbase.connect(options)
        self.table = self.conn.table(table)
        self.seen: dict[str, bytes] = {}

    def _cell(self, group: str) -> bytes | None:
        try:
            row = self.table.row(_key(group), columns=[CELL])
        except hbase.DRIVER_ERRORS as exc:
            raise StoreError(f"reading HBase group {group!r}: {exc}") from None
        cell: bytes | None = row.get(CELL)
        return cell

    def read(self, group: str) -> GroupData:
        cell = self._cell(group)
        if cell is None:
            self.seen.pop(group, None)
            return GroupData(0, {})
        self.seen.pop(group, None)
        self.seen[group] = cell
        if len(self.seen) > SEEN:  # a read-only walk over many groups: forget the oldest
            del self.seen[next(iter(self.seen))]
        return decode(cell)

    def commit(
        self, group: str, version: int, puts: Mapping[str, bytes], deletes: Sequence[str] = ()
    ) -> bool:
        expected: bytes | None = None
        entries: dict[str, bytes] = {}
        if version:
            expected = self.seen.pop(group, None)
            if expected is None or decode(expected).version != version:
                expected = self._cell(group)
            if expected is None:
                return False
            data = decode(expected)
            if data.version != version:
                return False
            entries = data.entries
        for key in deletes:
            entries.pop(key, None)
        entries.update(puts)
        put = Mutation(column=CELL, value=encode(version + 1, entries), isDelete=False)
        try:
            applied = self.conn.client.checkAndPut(
                self.table.name, _key(group), CELL, expected, put, {}
            )
        except hbase.DRIVER_ERRORS as exc:
            raise StoreError(f"committing HBase group {group!r}: {exc}") from None
        return bool(applied)

    def close(self) -> None:
        self.conn.close()


class HBaseGroupAdmin:
    """Blocking schema and loading (GroupAdmin) of one table of groups."""

    def __init__(self, options: HBaseOptions, table: str) -> None:
        self.options = options
        self.name = table
        self.conn = hbase.connect(options)

    def create_table(self) -> None:
        hbase.create_tables(self.conn, {self.name: {FAMILY: {"max_versions": 1}}})

    def replace(self, groups: Iterable[tuple[str, Mapping[str, bytes]]]) -> None:
        try:
            with self.conn.table(self.name).batch(batch_size=self.options.batch_size) as b:
                for group, entries in groups:
                    b.put(_key(group), {CELL: encode(1, entries)})
        except hbase.DRIVER_ERRORS as exc:
            raise StoreError(f"loading HBase groups: {exc}") from None

    def delete(self, groups: Iterable[str]) -> None:
        try:
            with self.conn.table(self.name).batch(batch_size=self.options.batch_size) as b:
                for group in groups:
                    b.delete(_key(group))
        except hbase.DRIVER_ERRORS as exc:
            raise StoreError(f"deleting HBase groups: {exc}") from None

    def read_many(self, groups: Sequence[str]) -> dict[str, GroupData]:
        found: dict[str, GroupData] = {g: GroupData(0, {}) for g in groups}
        table = self.conn.table(self.name)
        size = self.options.batch_size
        try:
            for at in range(0, len(groups), size):
                rows = table.rows([_key(g) for g in groups[at : at + size]], columns=[CELL])
                for key, row in rows:
                    if CELL in row:
                        found[key.decode()] = decode(row[CELL])
        except hbase.DRIVER_ERRORS as exc:
            raise StoreError(f"reading HBase groups: {exc}") from None
        return found

    def describe(self) -> str:
        return hbase.describe(self.options)

    def close(self) -> None:
        self.conn.close()


class HBaseGroups:
    """A binding's table of groups on HBase: blocking handles, one per socialite thread."""

    concurrency = "threads"

    def __init__(self, options: HBaseOptions, table: str) -> None:
        self.options = options
        self.table = table

    def admin(self) -> HBaseGroupAdmin:
        return HBaseGroupAdmin(self.options, self.table)

    def connect(self) -> HBaseGroupKV:
        return HBaseGroupKV(self.options, self.table)

    def close(self) -> None:
        """Nothing shared: each handle and admin closes its own connection."""

    def describe(self) -> str:
        return hbase.describe(self.options)
