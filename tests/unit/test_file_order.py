"""The suite's files go to the xdist workers longest first (tests/conftest.py), each file's
tests kept together and in their own order; a file not measured yet goes first."""

from types import SimpleNamespace
from typing import Any

from tests.conftest import longest_files_first


def items(*nodeids: str) -> list[Any]:
    return [SimpleNamespace(nodeid=nodeid) for nodeid in nodeids]


def test_files_longest_first_with_their_tests_together_in_order():
    collected = items("a.py::t1", "b.py::t1", "a.py::t2", "c.py::t1", "b.py::t2", "a.py::t3")
    longest_files_first(collected, {"a.py": 1.0, "b.py": 30.0, "c.py": 5.0})
    assert [i.nodeid for i in collected] == [
        "b.py::t1", "b.py::t2", "c.py::t1", "a.py::t1", "a.py::t2", "a.py::t3",
    ]  # fmt: skip


def test_an_unmeasured_file_goes_first_and_ties_keep_collection_order():
    collected = items("a.py::t", "b.py::t", "new.py::t", "c.py::t")
    longest_files_first(collected, {"a.py": 2.0, "b.py": 2.0, "c.py": 9.0})
    assert [i.nodeid for i in collected] == ["new.py::t", "c.py::t", "a.py::t", "b.py::t"]
