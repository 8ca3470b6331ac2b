"""The group stores' answers are untrusted: a cell, document or partition not in
bgbench's form is a StoreError, never a crash or an unbounded allocation."""

import pytest

from bgbench.drivers.cassandra_groups import group_data as partition
from bgbench.drivers.groups import GroupData
from bgbench.drivers.hbase_groups import decode, encode
from bgbench.drivers.mongodb_groups import group_data as document
from bgbench.errors import StoreError
from bgbench.workloads.micro.stores.groupkv import update, view


def test_an_hbase_cell_round_trips_and_a_damaged_one_is_refused():
    cell = encode(7, {"a": b"\x00\xff", "total": b"12", "": b""})
    assert decode(cell) == GroupData(7, {"a": b"\x00\xff", "total": b"12", "": b""})
    for damaged in (cell[:-1], cell + b"x", b"", cell[:12] + b"\xff\xff\xff\xff"):
        with pytest.raises(StoreError):
            decode(damaged)


def test_a_document_or_partition_not_in_form_is_refused():
    assert document({"_id": "g", "v": 3, "e": {"k": b"v"}}) == GroupData(3, {"k": b"v"})
    for bad in ({"_id": "g", "v": "3", "e": {}}, {"_id": "g", "v": 1, "e": {"k": "text"}}):
        with pytest.raises(StoreError):
            document(bad)
    assert partition([(2, "k", b"v"), (2, "j", None)]) == GroupData(2, {"k": b"v", "j": b""})
    assert partition([(1, None, None)]) == GroupData(1, {})
    with pytest.raises(StoreError):
        partition([(None, "k", b"v")])


def test_a_micro_group_with_a_value_that_is_no_number_is_refused():
    good = GroupData(2, {"i0": b"5", "i1": b"-3", "total": b"2", "m1": b"0:1"})
    assert view(good) == (({0: 5, 1: -3}), 2, 1)
    assert update(good, [1], 4) == ({"i1": b"1", "total": b"6"}, [-3])
    for bad in (b"5" * 40, b"five"):
        with pytest.raises(StoreError):
            view(GroupData(2, {"i0": bad, "total": b"0"}))
