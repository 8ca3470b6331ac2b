"""The Micro workload's interactions over a blocking in-memory binding: what each logs for
the validator, how the picture of the fragment follows committed, refused and unknown
transactions, and that a fragment's units touch only its own groups."""

import random
from collections.abc import Callable, Sequence

import pytest

from bgbench import sdk
from bgbench.validation.logformat import NEVER, READ, WRITE
from bgbench.workloads.micro.config import MAX_ITEMS, UNITS, MicroConfig
from bgbench.workloads.micro.store import FragmentGroups, GroupView
from bgbench.workloads.micro.workload import (
    GROUP_SUM,
    GROUP_TOTAL,
    INBOX,
    ITEM,
    MicroFragment,
    MicroPlayer,
)

FIELDS = 9  # a log record: kind, item, code, thread, item id, start, end, value, sid


class Memory:
    """A store in memory: every call one transaction attempt. `script` lists what the next
    attempts do instead of applying: an abort cause, or "raise" (an unknown outcome)."""

    def __init__(self) -> None:
        self.groups: dict[int, tuple[list[int], int, list[int]]] = {}
        self.script: list[str] = []
        self.touched: set[int] = set()

    def _scripted(self, group: int) -> None:
        self.touched.add(group)
        if self.script:
            step = self.script.pop(0)
            if step == "raise":
                raise ConnectionError("the store went away mid-commit")
            raise sdk.Abort(step)  # type: ignore[arg-type]

    def read_group(self, group: int) -> GroupView:
        self._scripted(group)
        values, total, inbox = self.groups[group]
        return GroupView(dict(enumerate(values)), total, len(inbox))

    def update_items(self, group: int, items: Sequence[int], delta: int) -> list[int]:
        self._scripted(group)
        values, total, inbox = self.groups[group]
        before = [values[i] for i in items]
        for i in items:
            values[i] += delta
        self.groups[group] = (values, total + delta * len(items), inbox)
        return before

    def send_message(self, group: int, sender: int, body: int) -> int:
        self._scripted(group)
        self.groups[group][2].append(sender)
        return len(self.groups[group][2]) - 1

    def close(self) -> None:
        pass


class MemoryBinding:
    name = "memory"
    concurrency = "threads"
    can_read_back = True

    def __init__(self) -> None:
        self.store = Memory()

    def create_schema(self, db: object) -> None:
        pass

    def use_schema(self, db: object) -> None:
        pass

    def load_fragment(self, fragment: FragmentGroups, progress: Callable[[], None]) -> None:
        for batch in fragment.group_batches():
            for g in batch:
                self.store.groups[g.group] = (list(g.values), sum(g.values), [])

    def read_back(self, fragment: FragmentGroups, progress: Callable[[], None]) -> dict:
        groups = self.store.groups.items()
        return {g: GroupView(dict(enumerate(v)), t, len(m)) for g, (v, t, m) in groups}


class Sink:
    """The SDK's Recorder protocol, keeping everything."""

    def __init__(self) -> None:
        self.acts: list[int] = []
        self.recs: list[int] = []
        self.live: list[int] = []
        self.tallies: dict[tuple[int, str], int] = {}
        self.errors: list[BaseException] = []

    def error(self, action: int, exc: BaseException) -> None:
        self.errors.append(exc)

    def tally(self, action: int, name: str, n: int) -> None:
        self.tallies[action, name] = self.tallies.get((action, name), 0) + n

    def maybe_flush(self) -> None:
        pass

    def records(self) -> list[tuple[int, ...]]:
        r = self.recs
        return [tuple(r[i : i + FIELDS]) for i in range(0, len(r), FIELDS)]


async def no_think(seconds: float) -> bool:
    return True


class Rig:
    def __init__(self, fragments: int = 1, index: int = 0, **settings: object) -> None:
        db = {"users": 20, "shared_groups": 4, "personal_items": 6, "shared_items": 5,
              "public_items": 4}  # fmt: skip
        wl = {"items_per_txn": 3, "retry": {"attempts": 3, "base_ms": 0, "cap_ms": 0}}
        config = MicroConfig.model_validate({"database": db, "workload": {**wl, **settings}})
        self.binding = MemoryBinding()
        self.fragment = MicroFragment(config, [1.0] * fragments, index, self.binding)  # type: ignore[arg-type]
        self.fragment.load(True, lambda: None)
        self.sink = Sink()
        self.player = self.fragment.player(self.binding.store, self.sink, 0, [7], UNITS)  # type: ignore[arg-type]
        self.ctx = sdk.UnitContext(self.player.timer, random.Random(3), no_think)

    def play(self, unit: str, user: int) -> object:
        return sdk.run_blocking(self.player.units[UNITS.index(unit)](self.ctx, user))

    def values(self) -> dict[tuple[int, int], int]:
        out = {}
        for kind, (ids, values) in self.fragment.initial_values().by_kind.items():
            out.update({(kind, int(i)): int(v) for i, v in zip(ids, values, strict=True)})
        return out


def test_an_update_logs_the_values_it_read_and_its_deltas_and_the_picture_follows():
    rig = Rig()
    user = int(rig.fragment.data.users[0])
    before = rig.values()
    assert rig.play("UPDATE_PERSONAL", user) is True
    recs = rig.sink.records()
    reads = [(r[1], r[4], r[7]) for r in recs if r[0] == READ]
    writes = [(r[1], r[4], r[7]) for r in recs if r[0] == WRITE]
    assert len(reads) == 3 and all(kind == ITEM for kind, _, _ in reads)
    assert all(item_id // MAX_ITEMS == user for _, item_id, _ in reads)  # the personal group
    assert all(before[ITEM, item_id] == value for _, item_id, value in reads)
    assert sorted(writes) == sorted(
        [(ITEM, i, 1) for _, i, _ in reads] + [(GROUP_TOTAL, user, 3), (GROUP_SUM, user, 3)]
    )
    after = rig.values()
    assert after[GROUP_TOTAL, user] == before[GROUP_TOTAL, user] + 3
    assert all(after[ITEM, i] == before[ITEM, i] + 1 for _, i, _ in reads)
    assert rig.sink.tallies[0, "commits"] == 1


def test_refused_attempts_are_retried_and_tallied_by_cause():
    rig = Rig()
    rig.binding.store.script = ["conflict", "deadlock"]
    user = int(rig.fragment.data.users[0])
    assert rig.play("UPDATE_SHARED", user) is True
    t = rig.sink.tallies
    assert t[2, "aborts_conflict"] == 1 and t[2, "aborts_deadlock"] == 1
    assert t[2, "retries"] == 2 and t[2, "commits"] == 1
    assert len([r for r in rig.sink.records() if r[0] == WRITE]) == 5  # 3 items, total, sum


def test_a_transaction_that_gave_up_changes_nothing_and_leaves_the_picture_exact():
    rig = Rig()
    rig.binding.store.script = ["lock_timeout"] * 3  # every attempt of the policy's 3
    before = rig.values()
    user = int(rig.fragment.data.users[0])
    assert rig.play("UPDATE_PUBLIC", user) is False
    assert rig.sink.tallies[4, "gave_up"] == 1
    assert not [r for r in rig.sink.records() if r[0] == WRITE]
    assert rig.values() == before and not rig.fragment.uncertain


def test_an_unknown_outcome_makes_the_picture_uncertain_and_carry_reloads():
    rig = Rig()
    rig.binding.store.script = ["raise"]
    user = int(rig.fragment.data.users[0])
    assert rig.play("UPDATE_PERSONAL", user) is False
    writes = [r for r in rig.sink.records() if r[0] == WRITE]
    assert len(writes) == 5 and all(r[6] == NEVER for r in writes)  # may apply, or never
    assert rig.fragment.uncertain
    assert rig.fragment.ready("carry", lambda: None).startswith("reload")
    assert not rig.fragment.uncertain


def test_reads_log_the_total_the_sum_and_some_items_of_one_snapshot():
    rig = Rig()
    users = rig.fragment.data.users.tolist()
    assert rig.play("READ_PUBLIC", users[0]) is True
    reads = [(r[1], r[4], r[7]) for r in rig.sink.records() if r[0] == READ]
    [(_, group, total)] = [x for x in reads if x[0] == GROUP_TOTAL]
    assert group != rig.fragment.data.keys.public(users[0])  # another user's public items
    assert (GROUP_SUM, group, total) in reads
    items = [x for x in reads if x[0] == ITEM]
    assert len(items) == 3 and all(i // MAX_ITEMS == group for _, i, _ in items)


def test_a_message_goes_to_another_users_inbox_and_its_reader_counts_it():
    rig = Rig(exclusive=False)
    users = rig.fragment.data.users.tolist()
    keys = rig.fragment.data.keys
    assert rig.play("SEND_MESSAGE", users[0]) is True
    [(kind, inbox, delta)] = [(r[1], r[4], r[7]) for r in rig.sink.records() if r[0] == WRITE]
    assert kind == INBOX and delta == 1 and inbox != keys.inbox(users[0])
    receiver = inbox - keys.inbox(0)
    assert receiver in users
    assert rig.values()[INBOX, inbox] == 1
    rig.sink.recs.clear()
    assert rig.play("READ_MESSAGES", receiver) is True
    assert [(r[1], r[4], r[7]) for r in rig.sink.records()] == [(INBOX, inbox, 1)]


def test_exclusive_users_are_never_held_by_two_loops():
    rig = Rig()
    other = rig.fragment.player(rig.binding.store, Sink(), 1, [8], UNITS)  # type: ignore[arg-type]
    players: list[MicroPlayer] = [rig.player, other]
    held = [p.acquire() for p in players for _ in range(10)]
    taken = [u for u in held if u is not None]
    assert len(taken) == len(set(taken)) > 0


@pytest.mark.parametrize("index", [0, 1])
def test_a_fragments_units_touch_only_its_own_groups(index):
    rig = Rig(fragments=2, index=index, exclusive=False)
    own = set(rig.fragment.data.group_keys())
    other = set(Rig(fragments=2, index=1 - index).fragment.data.group_keys())
    assert own and not own & other
    users = rig.fragment.data.users.tolist()
    for n in range(200):
        assert rig.play(UNITS[n % len(UNITS)], users[n % len(users)]) is True
    assert rig.binding.store.touched and rig.binding.store.touched <= own
