"""Transactions with a retry policy (sdk/transactions.py, UnitContext.transaction): the
policy's back-off, and what a transaction logs and tallies when its attempts commit, are
refused, raise or are cut short by the experiment's end; the engine's Recorder keeps the
tallies per action and the run result carries them across the wire."""

import random
import threading
from time import monotonic_ns

import pytest
from pydantic import ValidationError

from bgbench import sdk
from bgbench.protos import worker_pb2 as pb
from bgbench.run_result import ActionStats, RunResult
from bgbench.sdk import transactions as tx
from bgbench.validation.logformat import NEVER, READ, WRITE, LogWriter
from bgbench.worker.measurement import Recorder
from bgbench.worker.plan import action_counts, sleep_until

BUMP = 7  # the action code the counter's transaction is logged under
COUNTER = 3  # the item kind of the counter
EMPTY = b""


class Counter:
    """An in-memory blocking connection to one counter: each `bump` is one attempt of a
    read-modify-write transaction, refused (Abort) or failing as scripted per attempt."""

    def __init__(self, refusals: dict[int, tx.AbortCause], fails_at: int = 0) -> None:
        self.value = 0
        self.attempts = 0
        self.refusals = refusals
        self.fails_at = fails_at

    async def bump(self) -> tuple[int, int]:
        self.attempts += 1
        if self.attempts == self.fails_at:
            raise ConnectionError("the store went away mid-commit")
        cause = self.refusals.get(self.attempts)
        if cause is not None:
            raise sdk.Abort(cause, f"attempt {self.attempts}")
        before = self.value
        self.value += 1
        return before, self.value


class Play:
    """One runner over a Counter: the engine's Recorder and a thread's think (it waits as
    the engine's threads do, never less than asked; False once `stop` is set)."""

    def __init__(self, tmp_path, conn: Counter, stop_after_thinks: int = -1) -> None:
        self.conn = conn
        self.recorder = Recorder(LogWriter(tmp_path / "t.bglog"))
        self.stop = threading.Event()
        self.waits: list[float] = []
        self.stop_after = stop_after_thinks

        async def think(seconds: float) -> bool:
            self.waits.append(seconds)
            if len(self.waits) == self.stop_after:
                self.stop.set()
            return sleep_until(self.stop, monotonic_ns() + int(seconds * 1e9))

        timer: sdk.Timer[Counter] = sdk.Timer(conn, self.recorder, 0)
        self.ctx = sdk.UnitContext(timer, random.Random(5), think)

    def bump(self, policy: tx.RetryPolicy) -> tx.TxOutcome[tuple[int, int]]:
        conn = self.conn
        return sdk.run_blocking(
            self.ctx.transaction(
                BUMP,
                conn.bump,
                policy,
                observed=lambda seen: [(COUNTER, 1, seen[0])],
                changes=lambda seen: [(COUNTER, 1, 1)],
                if_unknown=[(COUNTER, 1, 1)],
            )
        )

    def tallies(self) -> dict[str, int]:
        return self.recorder.counts.get(BUMP, {})

    def records(self) -> list[tuple[int, ...]]:
        recs = self.recorder.recs
        return [
            tuple(recs[i : i + sdk.RECORD_FIELDS]) for i in range(0, len(recs), sdk.RECORD_FIELDS)
        ]

    def statuses(self) -> list[int]:
        return self.recorder.acts[1 :: sdk.ACTION_FIELDS]


def test_back_off_grows_by_the_multiplier_up_to_the_cap():
    policy = tx.RetryPolicy(base_ms=2, cap_ms=10, multiplier=3, jitter="none")
    rng = random.Random(1)
    assert [policy.delay_s(r, rng) for r in (1, 2, 3, 4)] == [0.002, 0.006, 0.010, 0.010]


@pytest.mark.parametrize(("jitter", "lowest"), [("full", 0.0), ("equal", 0.004)])
def test_jitter_draws_within_its_range(jitter, lowest):
    policy = tx.RetryPolicy(base_ms=8, cap_ms=100, jitter=jitter)
    rng = random.Random(2)
    waits = [policy.delay_s(1, rng) for _ in range(500)]
    assert all(lowest <= w <= 0.008 for w in waits)
    assert len(set(waits)) > 400  # drawn, not fixed


@pytest.mark.parametrize(
    "bad", [{"attempts": 0}, {"base_ms": -1}, {"multiplier": 0.5}, {"jitter": "some"}, {"x": 1}]
)
def test_a_policy_out_of_bounds_is_refused(bad):
    with pytest.raises(ValidationError):
        tx.RetryPolicy.model_validate(bad)


def test_a_commit_after_refusals_tallies_its_retries_aborts_and_back_off(tmp_path):
    play = Play(tmp_path, Counter({1: "conflict", 2: "deadlock"}))
    outcome = play.bump(tx.RetryPolicy(attempts=5, base_ms=1, cap_ms=8, jitter="none"))
    assert outcome == (tx.COMMITTED, (0, 1), 3)
    assert play.waits == [0.001, 0.002]
    tallies = play.tallies()
    assert tallies.pop(tx.BACKOFF_US) >= 3000  # the waits are never shorter than asked
    assert tallies == {"aborts_conflict": 1, "aborts_deadlock": 1, "commits": 1, "retries": 2}
    # one action, OK; the committed attempt's read and write
    assert play.statuses() == [sdk.OK]
    kinds = [(r[0], r[7]) for r in play.records()]
    assert kinds == [(READ, 0), (WRITE, 1)]


def test_a_transaction_gives_up_after_its_attempts_and_applies_nothing(tmp_path):
    conn = Counter({1: "lock_timeout", 2: "conflict", 3: "conflict"})
    play = Play(tmp_path, conn)
    outcome = play.bump(tx.RetryPolicy(attempts=3, base_ms=0, jitter="none"))
    assert outcome == (tx.ABORTED, None, 3)
    assert conn.value == 0 and conn.attempts == 3
    tallies = play.tallies()
    tallies.pop(tx.BACKOFF_US)
    assert tallies == {"aborts_lock_timeout": 1, "aborts_conflict": 2, "gave_up": 1}
    assert play.statuses() == [sdk.ERROR]
    assert play.records() == []  # nothing applied: nothing to validate
    assert play.recorder.errors == {(BUMP, "Abort"): 1}


def test_an_unknown_outcome_logs_its_write_as_never_ending(tmp_path):
    play = Play(tmp_path, Counter({1: "conflict"}, fails_at=2))
    outcome = play.bump(tx.RetryPolicy(attempts=5, base_ms=0))
    assert outcome == (tx.FAILED, None, 2)
    tallies = play.tallies()
    assert (tallies["aborts_conflict"], tallies["unknown"]) == (1, 1)
    assert tx.COMMITS not in tallies and tx.GAVE_UP not in tallies
    [write] = play.records()
    assert (write[0], write[6], write[7]) == (WRITE, NEVER, 1)
    assert play.statuses() == [sdk.ERROR]


def test_a_stop_during_the_back_off_ends_the_transaction_as_stopped(tmp_path):
    conn = Counter({1: "conflict", 2: "conflict"})
    play = Play(tmp_path, conn, stop_after_thinks=1)
    outcome = play.bump(tx.RetryPolicy(attempts=5, base_ms=50, jitter="none"))
    assert outcome == (tx.STOPPED, None, 1)
    assert conn.attempts == 1  # no attempt after the stop
    assert play.tallies() == {"aborts_conflict": 1, "backoff_us": play.tallies()["backoff_us"]}
    # the experiment's end, not the store, cut it short: no action, no error
    assert play.statuses() == [] and not play.recorder.errors
    assert play.ctx.timer.in_call == 0


def test_tallies_add_up_per_action_across_runners(tmp_path):
    runners = [Recorder(LogWriter(tmp_path / f"{t}.bglog")) for t in range(2)]
    runners[0].tally(1, "commits", 2)
    runners[0].tally(2, "commits", 1)
    runners[1].tally(1, "commits", 3)
    runners[1].tally(1, "aborts_conflict", 4)
    assert action_counts(runners) == {1: {"commits": 5, "aborts_conflict": 4}, 2: {"commits": 1}}
    assert Recorder(LogWriter(tmp_path / "idle.bglog")).counts == {}


def test_action_counts_merge_and_cross_the_wire():
    one = ActionStats(2, 0, EMPTY, EMPTY, {"commits": 2, "retries": 1})
    two = ActionStats(1, 1, EMPTY, EMPTY, {"gave_up": 1, "retries": 0})
    merged = RunResult.merge(
        [RunResult(per_action={"TXN": one}), RunResult(per_action={"TXN": two})]
    )
    assert merged.per_action["TXN"].counts == {"commits": 2, "retries": 1, "gave_up": 1}
    back = RunResult.from_proto(pb.RunResult.FromString(merged.to_proto().SerializeToString()))
    assert back.per_action["TXN"].counts == {"commits": 2, "retries": 1, "gave_up": 1}
    plain = RunResult(per_action={"READ": ActionStats(1, 0, EMPTY, EMPTY)})
    assert RunResult.from_proto(plain.to_proto()).per_action["READ"].counts == {}
