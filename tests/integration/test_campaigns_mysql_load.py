"""Two agents load Micro's fragments into one MySQL database at once (every campaign job
with two agents does): neither load may deadlock the other. The loads are stepped so
that both have deleted their groups' old rows before either inserts: at InnoDB's
REPEATABLE READ those deletes of absent keys hold gap locks, and the inserts then wait on
each other (1213), as a campaign's Figure 10 job did."""

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from bgbench.workloads.micro.store import GroupRows
from bgbench.workloads.micro.stores import specs_sql
from tests.integration.stores import SERVERS

WAIT_S = 30.0


@pytest.fixture(scope="module")
def mysql_options(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Any]]:
    yield from SERVERS["mysql"](tmp_path_factory.mktemp("mysql"), request)


class Fragment:
    """One fragment's groups (interleaved keys, as Micro's fragments have)."""

    def __init__(self, values: dict[int, list[int]]) -> None:
        self.values = values

    def group_keys(self) -> list[int]:
        return list(self.values)

    def group_batches(self) -> Iterator[list[GroupRows]]:
        yield [GroupRows(g, v) for g, v in self.values.items()]


def stepped(deleted: threading.Event, other_deleted: threading.Event) -> Callable[[], None]:
    """A progress callback: the second call comes after the deletes (one chunk of keys)
    and before the inserts; there it says so and waits for the other load's deletes."""
    calls = [0]

    def progress() -> None:
        calls[0] += 1
        if calls[0] == 2:
            deleted.set()
            other_deleted.wait(WAIT_S)

    return progress


def test_two_fragments_load_at_once_without_a_deadlock(mysql_options: dict[str, Any]) -> None:
    spec = specs_sql.MYSQL
    options = spec.options(**mysql_options)
    binding = spec.load_binding()(options)
    binding.create_schema(None)
    fragments = [Fragment({g: [g, 1] for g in range(k, 40, 2)}) for k in (0, 1)]
    events = [threading.Event(), threading.Event()]
    errors: list[BaseException] = []

    def load(k: int) -> None:
        try:
            spec.load_binding()(options).load_fragment(
                fragments[k], stepped(events[k], events[1 - k])
            )
        except BaseException as exc:
            errors.append(exc)
            events[k].set()

    threads = [threading.Thread(target=load, args=(k,)) for k in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT_S * 2)
    assert not any(thread.is_alive() for thread in threads)
    assert errors == []
    got = binding.read_back(fragments[0], lambda: None)
    assert {g: view.total for g, view in got.items()} == {g: g + 1 for g in range(0, 40, 2)}
