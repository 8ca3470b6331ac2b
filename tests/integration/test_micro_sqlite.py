"""The Micro workload's SQLite binding against its contract (workloads/micro/store.py):
each operation's answer, read-back, message keys unique within a group, concurrent updates
that lose nothing under both concurrency controls, and aborts with their causes."""

import sqlite3
import threading
from pathlib import Path

import pytest

from bgbench import sdk
from bgbench.workloads.micro.config import MicroDatabaseConfig
from bgbench.workloads.micro.generator import FragmentData, item_values
from bgbench.workloads.micro.stores.options import SQLiteMicroOptions
from bgbench.workloads.micro.stores.sqlite import SQLiteMicroBinding

DB = MicroDatabaseConfig(users=12, shared_groups=3, personal_items=6, shared_items=8,
                         public_items=4, seed=5)  # fmt: skip
CONTROLS = ("optimistic", "pessimistic")


def loaded(tmp: Path, control: str, **options: object) -> tuple[SQLiteMicroBinding, FragmentData]:
    path = str(tmp / "micro.sqlite")
    binding = SQLiteMicroBinding(
        SQLiteMicroOptions(path=path, concurrency_control=control, **options)  # type: ignore[arg-type]
    )
    data = FragmentData(DB, 1.0, [1.0], 0)
    binding.create_schema(DB)
    binding.load_fragment(data, lambda: None)
    return binding, data


@pytest.mark.parametrize("control", CONTROLS)
def test_each_operation_answers_as_the_contract_says(tmp_path, control):
    binding, data = loaded(tmp_path, control)
    conn = binding.connect()
    try:
        shared = data.keys.shared(1)
        start = item_values(DB.seed, shared, DB.shared_items).tolist()
        view = conn.read_group(shared)
        assert view.values == dict(enumerate(start))
        assert view.total == sum(start) and view.messages == 0
        assert conn.update_items(shared, [5, 2, 7], 3) == [start[5], start[2], start[7]]
        after = conn.read_group(shared)
        assert after.values[5] == start[5] + 3 and after.values[0] == start[0]
        assert after.total == sum(start) + 9 == sum(after.values.values())
        inbox = data.keys.inbox(4)
        keys = [conn.send_message(inbox, 7, body) for body in (11, 12, 13)]
        assert len(set(keys)) == 3  # unique within the group
        assert conn.read_group(inbox) == (({}, 0, 3))
        with pytest.raises(LookupError):
            conn.read_group(10**9)  # no such group: an error, not an abort
    finally:
        conn.close()
    back = binding.read_back(data, lambda: None)
    assert set(back) == set(data.group_keys())
    assert back[shared] == after and back[inbox].messages == 3


@pytest.mark.parametrize("control", CONTROLS)
def test_concurrent_updates_of_one_group_lose_nothing(tmp_path, control):
    binding, data = loaded(tmp_path, control)
    group = data.keys.shared(0)
    start = item_values(DB.seed, group, DB.shared_items).tolist()
    committed = [0] * DB.shared_items
    aborts: list[str] = []
    lock = threading.Lock()

    def updater(offset: int) -> None:
        conn = binding.connect()
        try:
            for n in range(60):
                items = [(offset + n) % 8, (offset + n + 3) % 8]
                while True:  # a binding never retries: the workload's policy does
                    try:
                        conn.update_items(group, items, 1)
                        break
                    except sdk.Abort as abort:
                        with lock:
                            aborts.append(abort.cause)
                with lock:
                    for i in items:
                        committed[i] += 1
        finally:
            conn.close()

    threads = [threading.Thread(target=updater, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    view = binding.read_back(data, lambda: None)[group]
    assert view.values == {i: start[i] + committed[i] for i in range(DB.shared_items)}
    assert view.total == sum(start) + 4 * 60 * 2
    assert set(aborts) <= {"conflict", "lock_timeout"}


def test_an_optimistic_write_after_the_group_moved_aborts_as_a_conflict(tmp_path):
    binding, data = loaded(tmp_path, "optimistic")
    group = data.keys.personal(3)
    first, second = binding.connect(), binding.connect()
    try:
        seen = first.snapshot(group, [0, 1])
        second.update_items(group, [1, 2], 1)  # the version moves on
        with pytest.raises(sdk.Abort) as refused:
            first.run(
                "BEGIN IMMEDIATE",
                lambda c: first.compare_and_set(c, group, seen, total=seen.total + 2),
            )
        assert refused.value.cause == "conflict"
        view = first.read_group(group)
        start = item_values(DB.seed, group, DB.personal_items).tolist()
        assert view.total == sum(start) + 2  # only the second update applied
    finally:
        first.close()
        second.close()


@pytest.mark.parametrize("control", CONTROLS)
def test_a_write_lock_held_too_long_aborts_as_a_lock_timeout_and_applies_nothing(tmp_path, control):
    binding, data = loaded(tmp_path, control, busy_timeout_ms=50)
    group = data.keys.public(2)
    holder = sqlite3.connect(tmp_path / "micro.sqlite", isolation_level=None)
    conn = binding.connect()
    try:
        before = conn.read_group(group)
        holder.execute("BEGIN IMMEDIATE")  # another writer holds SQLite's write lock
        with pytest.raises(sdk.Abort) as refused:
            conn.update_items(group, [0, 1], 1)
        assert refused.value.cause == "lock_timeout"
        holder.execute("ROLLBACK")
        assert conn.read_group(group) == before
        assert conn.update_items(group, [0, 1], 1) == [before.values[0], before.values[1]]
    finally:
        conn.close()
        holder.close()
