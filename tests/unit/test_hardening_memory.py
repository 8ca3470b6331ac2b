"""Issue 24 item 17: a load process's measurement state stays the same size however many
actions it records, and folding the timings batch by batch gives exactly the figures the
whole array gave (the reference functions below are the engine's former ones)."""

import dataclasses
import random
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hdrh.histogram import HdrHistogram

from bgbench.protos import HIST_HIGHEST_US, HIST_LOWEST_US, new_histogram
from bgbench.sdk import Timer, UnitContext, run_blocking
from bgbench.validation.logformat import LogWriter
from bgbench.worker.measurement import (
    ACTION_FIELDS,
    FLUSH_EVERY,
    PENDING_AT_MOST,
    RECORD_FIELDS,
    LiveLatencies,
    Recorder,
    batch_for,
    histogram_of,
)
from bgbench.worker.tally import ACTION_DTYPE, ActionFile, ActionTally, Buckets

# -- the former whole-array computations, as the reference ----------------------------------


def reference_summaries(actions: np.ndarray) -> dict[int, tuple[int, int, bytes, bytes]]:
    out = {}
    for code in np.unique(actions["action"]).tolist():
        a = actions[actions["action"] == code]
        out[code] = (
            len(a),
            int((a["status"] != 0).sum()),
            histogram_of(a["end"] - a["intended"]).encode(),
            histogram_of(a["end"] - a["start"]).encode(),
        )
    return out


def reference_sessions(actions: np.ndarray) -> HdrHistogram:
    order = np.argsort(actions["session"], kind="stable")
    sessions = actions["session"][order]
    latency = (actions["end"] - actions["intended"])[order]
    starts = np.flatnonzero(np.concatenate([[True], sessions[1:] != sessions[:-1]]))
    return histogram_of(np.maximum.reduceat(latency, starts))


def reference_open_loop_delay(actions: np.ndarray) -> np.ndarray:
    a = actions[np.lexsort((actions["start"], actions["thread"]))]
    free = np.empty(len(a), dtype=np.int64)
    free[1:] = a["end"][:-1]
    first = np.ones(len(a), dtype=bool)
    first[1:] = a["thread"][1:] != a["thread"][:-1]
    free[first] = a["intended"][first]
    return a["start"] - np.maximum(a["intended"], free)  # type: ignore[no-any-return]


def counts(h: HdrHistogram) -> list[int]:
    return [h.get_count_at_index(i) for i in range(h.counts_len)]


# -- what a run records ------------------------------------------------------------------------


def simulated_run(runners: int, sessions_each: int, seed: int) -> np.ndarray:
    """Actions as the engine appends them: each runner plays sessions one after another
    (ids runner << 40 | k, one to four actions each), the runners interleaved, each action
    recorded when it ends; latencies from microseconds to seconds, some failures."""
    rng = random.Random(seed)
    clock = [rng.randrange(10**6) for _ in range(runners)]
    rows = []
    for k in range(sessions_each):
        for t in range(runners):
            for _ in range(rng.randint(1, 4)):
                intended = clock[t] + rng.randrange(-1000, 10**5)
                start = max(intended, clock[t]) + int(rng.lognormvariate(8, 2))
                end = start + int(rng.lognormvariate(9, 3))
                failed = rng.random() < 0.02
                sid = t << 40 | k
                rows.append((end, (rng.randrange(11), failed, t, intended, start, end, sid)))
                clock[t] = end
    rows.sort(key=lambda r: r[0])
    return np.array([r[1] for r in rows], dtype=ACTION_DTYPE)


def batches(actions: np.ndarray, seed: int) -> list[np.ndarray]:
    """Cut anywhere, sessions included; some batches tiny."""
    rng = random.Random(seed)
    cuts = sorted(rng.sample(range(1, len(actions)), 40))
    return np.split(actions, cuts)


@pytest.mark.parametrize("open_loop", [False, True])
def test_folding_batches_gives_the_figures_of_the_whole_array(open_loop, tmp_path):
    actions = simulated_run(runners=37, sessions_each=60, seed=1)
    spill = ActionFile(tmp_path / "actions.npy")
    tally = ActionTally(open_loop=open_loop, spill=spill)
    for batch in batches(actions, seed=2):
        tally.add(batch)
    tally.finish()
    spill.close()

    assert tally.count == len(actions)
    assert tally.errors == int((actions["status"] != 0).sum())
    folded = {
        code: (s.count, s.errors, s.response.encode(), s.service.encode())
        for code, s in tally.summaries().items()
    }
    assert folded == reference_summaries(actions)
    sessions = tally.sessions.histogram()
    assert sessions.get_total_count() == len(np.unique(actions["session"]))
    assert counts(sessions) == counts(reference_sessions(actions))
    delay = (
        reference_open_loop_delay(actions) if open_loop else actions["start"] - actions["intended"]
    )
    assert counts(tally.delay.histogram()) == counts(histogram_of(delay))
    # every action reached the disk, in order
    assert np.array_equal(np.load(tmp_path / "actions.npy"), actions)


def test_buckets_are_the_hdr_histograms_buckets():
    h = new_histogram()
    values = list(range(1, 70_000))
    values += [2**k + d for k in range(1, 32) for d in (-1, 0, 1)]
    values += [*random.Random(3).sample(range(1, HIST_HIGHEST_US), 5000), HIST_HIGHEST_US]
    values = [v for v in values if HIST_LOWEST_US <= v <= HIST_HIGHEST_US]
    got = Buckets.index_of(np.array(values, dtype=np.int64)).tolist()
    assert got == [h._counts_index_for(v) for v in values]


def test_an_empty_run_has_empty_figures(tmp_path):
    spill = ActionFile(tmp_path / "actions.npy")
    tally = ActionTally(spill=spill)
    tally.finish()
    spill.close()
    assert tally.count == 0 and tally.summaries() == {}
    assert tally.sessions.histogram().get_total_count() == 0
    assert len(np.load(tmp_path / "actions.npy")) == 0


# -- the state kept is the same after few actions or many ----------------------------------


def retained(obj: Any, seen: set[int] | None = None) -> int:
    """Elements held by `obj`: array elements, list, tuple and dict entries, recursively
    through bgbench's own objects (the log file and histograms' fixed arrays included)."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return 0
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        return int(obj.size)
    if isinstance(obj, list | tuple | set | frozenset):
        return len(obj) + sum(retained(x, seen) for x in obj)
    if isinstance(obj, dict):
        return len(obj) + sum(retained(k, seen) + retained(v, seen) for k, v in obj.items())
    if dataclasses.is_dataclass(obj) or type(obj).__module__.startswith("bgbench."):
        return sum(retained(v, seen) for v in vars(obj).values())
    return 0


async def _no_think(_seconds: float) -> bool:
    return True


def _context(timer: Timer[Any]) -> UnitContext[Timer[Any]]:
    return UnitContext(timer, random.Random(0), _no_think)


async def _answer(member: int) -> int:
    return member


def _seen(member: int) -> tuple[tuple[int, int, int], ...]:
    return ((0, member, 1),)


def record(actions: int, path: Path) -> Recorder:
    """`actions` timed reads through the engine's timer, 16 runners taking turns, one
    session each per round, each logging one item; the live view cut as the runner does
    (here every 1,000 actions), every batch flushed."""
    log = LogWriter(path)
    recorder = Recorder(log)
    live = LiveLatencies([recorder])
    timers = [_context(Timer(None, recorder, t)) for t in range(16)]
    for i in range(actions):
        t = i % len(timers)
        timers[t].sid = t << 40 | i // len(timers)
        run_blocking(timers[t].read(i % 11, _answer(i % 1000), _seen))
        if i % 1000 == 999:
            live.cut()
    live.cut(final=True)
    recorder.finish()
    log.close()
    return recorder


def test_a_recorders_state_does_not_grow_with_the_actions_it_records(tmp_path):
    few = record(2 * FLUSH_EVERY, tmp_path / "few.bglog")
    many = record(12 * FLUSH_EVERY, tmp_path / "many.bglog")
    assert many.action_count == 6 * few.action_count
    assert many.log.count == 6 * few.log.count  # every record went to the log on disk
    assert retained(many) == retained(few)


def test_a_tallys_state_does_not_grow_with_the_actions_it_folds():
    actions = simulated_run(runners=50, sessions_each=400, seed=4)
    tally = ActionTally(open_loop=True)
    parts = np.array_split(actions, 40)
    for part in parts[:4]:
        tally.add(part)
    early = retained(tally)
    for part in parts[4:]:
        tally.add(part)
    assert tally.count == len(actions)
    assert retained(tally) == early


@pytest.mark.slow
def test_threads_hold_a_bounded_number_of_actions_between_them(tmp_path):
    """1,024 threads, each with its own recorder as run_threads makes them, 200 actions
    each: together they hold at most PENDING_AT_MOST actions; the rest is in the tally."""
    threads, each = 1024, 200
    log = LogWriter(tmp_path / "threads.bglog")
    tally = ActionTally()
    recorders = [Recorder(log, threading.Lock(), tally, batch_for(threads)) for _ in range(threads)]
    timers = [_context(Timer(None, r, t)) for t, r in enumerate(recorders)]
    for k in range(each):
        for t, timer in enumerate(timers):
            timer.sid = t << 40 | k
            run_blocking(timer.read(1, _answer(t), _seen))
    log.close()
    pending = sum(len(r.acts) // ACTION_FIELDS for r in recorders)
    assert pending + tally.count == threads * each
    assert pending <= PENDING_AT_MOST
    assert sum(len(r.recs) // RECORD_FIELDS for r in recorders) <= PENDING_AT_MOST
