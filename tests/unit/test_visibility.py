"""The visibility of every acknowledged write (validation/visibility.py) against a brute
force of its definition: every possible prefix of the writes, every read, small histories
with concurrency, delta (+1/-1 and larger) and absolute writes and unknown outcomes."""

import itertools
import json
import random
from dataclasses import asdict

import numpy as np
import pytest

from bgbench.coordinator.execution.agent_checks import AgentFault, check_validation
from bgbench.protos import worker_pb2 as pb
from bgbench.run_result import WriteVisibility, merge_visibility
from bgbench.validation import runner, visibility
from bgbench.validation.checker import validate
from bgbench.validation.initial import InitialValues
from bgbench.validation.logformat import NEVER, READ, RECORD_DTYPE, WRITE, WRITE_ABS
from bgbench.validation.runner import validate_in_memory
from bgbench.worker.measurement import visibility_histogram

KIND = 3  # the item kind of every record here
MS = 1_000_000


def log(rows: list[tuple[int, int, int, int, int]]) -> np.ndarray:
    """(kind, item_id, start, end, value) rows; the action of a write is its item_id % 4."""
    rec = np.zeros(len(rows), dtype=RECORD_DTYPE)
    for i, (kind, item_id, start, end, value) in enumerate(rows):
        rec[i] = (kind, KIND, item_id % 4, i % 7, item_id, start, end, value, i)
    return rec


def initial(ids: list[int], value: int = 10) -> InitialValues:
    return InitialValues({KIND: (np.array(ids, np.int64), np.full(len(ids), value, np.int64))})


def prefix_values(writes: list[tuple], init: int, absolute: bool, must: int) -> set[int]:
    """Values of every possible prefix holding write `must` (writes: (index, start, end,
    value)); absolute: the value of a write that can be applied last."""
    values = set()
    for n in range(1, len(writes) + 1):
        for subset in itertools.combinations(writes, n):
            chosen = {w[0] for w in subset}
            if must not in chosen:
                continue
            if any(a[2] < b[1] for a in writes if a[0] not in chosen for b in subset):
                continue  # a write outside ended before one inside started
            if absolute:
                values |= {w[3] for w in subset if not any(o[1] > w[2] for o in subset)}
            else:
                values.add(init + sum(w[3] for w in subset))
    return values


def brute_force(records: np.ndarray, init: int) -> dict[int, object]:
    """Per acknowledged write (record index): its visibility in ns, "never" or "unread"."""
    out: dict[int, object] = {}
    for i, w in enumerate(records):
        if w["kind"] == READ or w["end"] == NEVER:
            continue
        x = w["item_id"]
        same = [r for r in records if r["item_id"] == x]
        reads = [r for r in same if r["kind"] == READ and r["start"] > w["end"]]
        if not reads:
            out[i] = "unread"
            continue
        latest_miss = None
        for r in reads:
            cands = [
                (j, int(o["start"]), int(o["end"]), int(o["value"]))
                for j, o in enumerate(records)
                if o["item_id"] == x and o["kind"] != READ and o["start"] <= r["end"]
            ]
            absolute = records[cands[0][0]]["kind"] == WRITE_ABS
            if int(r["value"]) not in prefix_values(cands, init, absolute, i):
                latest_miss = max(latest_miss or r["start"], r["start"])
        last = max(int(r["start"]) for r in same if r["kind"] == READ)
        if latest_miss is None:
            out[i] = 0
        elif latest_miss >= last:
            out[i] = "never"
        else:
            out[i] = int(latest_miss - w["end"])
    return out


def measured(records: np.ndarray, ids: list[int]) -> dict[str, list]:
    result = validate(records, initial(ids))
    vis = result.visibility
    return {
        "times": sorted(vis.all_times_ns().tolist()),
        "never": vis.never_total,
        "unread": sum(vis.unread.values()),
        "writes": sum(vis.writes.values()),
    }


def expected(records: np.ndarray) -> dict[str, list]:
    ref = brute_force(records, 10)
    return {
        "times": sorted(v for v in ref.values() if isinstance(v, int)),
        "never": sum(v == "never" for v in ref.values()),
        "unread": sum(v == "unread" for v in ref.values()),
        "writes": len(ref),
    }


def random_history(rng: random.Random, kind: int, deltas: tuple[int, ...]) -> np.ndarray:
    """A few writes and reads of two items, overlapping at random; reads return a value
    near what the item could hold, so some are stale and some impossible."""
    rows = []
    for x in (1, 2):
        for _ in range(rng.randint(1, 5)):
            s = rng.randint(0, 40) * MS
            end = NEVER if rng.random() < 0.1 else s + rng.randint(0, 12) * MS
            value = rng.choice(deltas) if kind == WRITE else rng.randint(10, 13)
            rows.append((kind, x, s, end, value))
        for _ in range(rng.randint(1, 6)):
            s = rng.randint(0, 60) * MS
            rows.append((READ, x, s, s + rng.randint(0, 6) * MS, rng.randint(8, 14)))
    rng.shuffle(rows)
    return log(rows)


@pytest.mark.parametrize(
    ("kind", "deltas", "chunk"),
    [(WRITE, (1, -1), 1 << 21), (WRITE, (1, -1), 3), (WRITE, (1, -1, 2), 1 << 21),
     (WRITE_ABS, (), 1 << 21), (WRITE_ABS, (), 3)],
)  # fmt: skip
def test_every_write_matches_the_brute_force_of_the_definition(kind, deltas, chunk, monkeypatch):
    monkeypatch.setattr(visibility, "PAIRS_PER_CHUNK", chunk)  # 3: a chunk per read or two
    rng = random.Random(29)
    for _ in range(100):
        records = random_history(rng, kind, deltas)
        assert measured(records, [1, 2]) == expected(records), records


def test_a_correct_history_has_every_write_visible_at_its_end():
    rows = [(WRITE, 1, 0, 2 * MS, 1), (READ, 1, 3 * MS, 4 * MS, 11),
            (WRITE, 1, 5 * MS, 6 * MS, 1), (READ, 1, 7 * MS, 8 * MS, 12)]  # fmt: skip
    m = measured(log(rows), [1])
    assert m == {"times": [0, 0], "never": 0, "unread": 0, "writes": 2}


def test_a_delayed_write_is_visible_when_the_first_read_sees_it():
    # W ends at 2 ms; reads at 3 and 50 ms still see 10, the read at 120 ms sees 11
    rows = [(WRITE, 1, 0, 2 * MS, 1), (READ, 1, 3 * MS, 4 * MS, 10),
            (READ, 1, 50 * MS, 51 * MS, 10), (READ, 1, 120 * MS, 121 * MS, 11)]  # fmt: skip
    m = measured(log(rows), [1])
    assert m == {"times": [48 * MS], "never": 0, "unread": 0, "writes": 1}


def test_a_stale_read_still_includes_the_older_writes_it_saw():
    # two writes; a read after both sees only the first: it misses the second alone
    rows = [(WRITE, 1, 0, 1 * MS, 1), (WRITE, 1, 2 * MS, 3 * MS, 1),
            (READ, 1, 9 * MS, 10 * MS, 11), (READ, 1, 20 * MS, 21 * MS, 12)]  # fmt: skip
    m = measured(log(rows), [1])
    assert m["times"] == [0, 6 * MS]


def test_a_write_the_last_read_missed_is_never_visible_and_one_never_read_is_unread():
    rows = [(WRITE, 1, 0, 1 * MS, 1), (READ, 1, 5 * MS, 6 * MS, 10),
            (WRITE, 2, 0, 1 * MS, 1), (READ, 2, 0, 1 * MS, 10)]  # fmt: skip
    m = measured(log(rows), [1, 2])
    assert m == {"times": [], "never": 1, "unread": 1, "writes": 2}


def test_a_write_of_unknown_outcome_has_no_visibility_but_may_explain_a_read():
    rows = [(WRITE_ABS, 1, 0, NEVER, 7), (WRITE_ABS, 1, 1 * MS, 2 * MS, 8),
            (READ, 1, 5 * MS, 6 * MS, 7)]  # fmt: skip
    # 7 can be applied after 8 (its write never ended): the read includes the write of 8
    assert measured(log(rows), [1]) == {"times": [0], "never": 0, "unread": 0, "writes": 1}


def test_visibility_is_kept_per_action_and_item_kind_and_merges_over_parts(monkeypatch):
    monkeypatch.setattr(runner, "PART_RECORDS", 5)  # several parts of a few items each
    rows = [(WRITE, x, 0, 1 * MS, 1) for x in range(8)]
    rows += [(READ, x, 4 * MS, 5 * MS, 10) for x in range(8)]
    rows += [(READ, x, 9 * MS, 10 * MS, 11) for x in range(8)]
    records = log(rows)
    whole = validate(records, initial(list(range(8)))).visibility
    parts = validate_in_memory(records, initial(list(range(8))), workers=1).visibility
    assert set(whole.times_ns) == {(a, KIND) for a in range(4)}
    assert all(t.tolist() == [3 * MS, 3 * MS] for t in whole.times_ns.values())
    assert whole.writes == {(a, KIND): 2 for a in range(4)}
    assert sorted(parts.all_times_ns().tolist()) == sorted(whole.all_times_ns().tolist())


def _reply(writes: int, never: int, unread: int, hist: bytes = b"") -> pb.ValidateReply:
    row = pb.WriteVisibility(action="PUT", item="v", writes=writes, never=never, unread=unread,
                             hist=hist)  # fmt: skip
    return pb.ValidateReply(writes=10, visibility=[row])


def test_the_coordinator_refuses_visibility_counts_that_cannot_be():
    check_validation("a:1", _reply(10, 3, 7))
    for bad in (_reply(11, 0, 0), _reply(10, 0, 11), _reply(10, 4, 7), _reply(5, 0, 0, b"xx")):
        with pytest.raises(AgentFault, match="visibility"):
            check_validation("a:1", bad)


def test_an_agent_reply_becomes_the_experiment_figures_merged_over_agents():
    hist = visibility_histogram(np.array([0, 0, 5 * MS, 9 * MS])).encode()
    rows = WriteVisibility.of_reply([_reply(10, 3, 2, hist).visibility[0]])
    [total] = merge_visibility([rows, rows])
    assert (total.writes, total.never, total.unread) == (20, 6, 4)
    assert total.visible.count == 8 and total.visible.p50_ms == 0
    assert 8.99 <= total.visible.max_ms <= 9.01
    again = WriteVisibility.from_record(json.loads(json.dumps(asdict(total))))
    assert again == total
