"""Timing and logging every store call a workload makes: the Timer and the unit context.

Bindings never time themselves. Each call records (action, status, runner, intended
start, actual start, end, session); the intended start is when the schedule
(inter-arrival or think time) wanted the action to begin, so response time
(end - intended) and service time (end - start) are both available. Reads log the value
of each tracked item they saw; writes log what they did to it: a change by a delta
(WRITE) or a new value (WRITE_ABS). One item takes one kind of write, never both.

A write that raised has an unknown outcome: it is logged with end = NEVER, so the
validator treats it as possibly applied at any time after its start, or never.

The engine gives each unit a `UnitContext`: its session id, intended start, random
stream, timer and think. The timed-call helpers are methods of the context:

    await ctx.read(GET, ctx.conn.get(key), lambda v: ((VALUE, key, v),))
    await ctx.write(PUT, ctx.conn.incr(key), ((VALUE, key, 1),))
    await ctx.write_absolute(SET, ctx.conn.set(key, 7), ((VALUE, key, 7),))
    await ctx.write_from_answer(MOVE, ctx.conn.transfer(a, b, n), changes, unknown)
    await ctx.transaction(BID, lambda: ctx.conn.bid(item, amount), policy, seen, changes)

Everything here is on the per-action path: no allocation that can be avoided. A
workload may write its hottest paths out in full over `Timer.rec` as BG's timed
connection does (workloads/bg/timed.py).
"""

import random
from collections.abc import Awaitable, Callable, Iterable
from time import monotonic_ns
from typing import Any, Generic, TypeVar

from bgbench.sdk import transactions as tx
from bgbench.sdk.recording import ERROR, OK, Recorder
from bgbench.validation.logformat import NEVER, READ, WRITE, WRITE_ABS

R = TypeVar("R")
C = TypeVar("C")
T = TypeVar("T", bound="Timer[Any]")

# (item kind, item id, value): what a read saw, or what a write changed (a delta, or
# the new value for an absolute write)
Item = tuple[int, int, int]
Think = Callable[[float], Awaitable[bool]]  # sleeps; False when the experiment is stopping


class Timer(Generic[C]):
    """Times and logs every action of one socialite runner (a thread or a task).

    `conn` is the runner's store connection, as the workload's units see it
    (asynchronous, or a blocking one through `sdk.blocking`). `in_call` is when the store
    call in progress began (monotonic ns), 0 between calls; `count` the actions performed;
    `consecutive_errors` the failures since the last success and `failing_since` when the
    first of them began (monotonic ns; stale while there are none): the engine reads them all.
    A workload may subclass it to add its own timed methods.
    """

    __slots__ = ("conn", "consecutive_errors", "count", "failing_since", "in_call", "rec", "thread")

    def __init__(self, conn: C, recorder: Recorder, thread: int) -> None:
        self.conn = conn
        self.rec = recorder
        self.thread = thread
        self.in_call = 0
        self.count = 0
        self.consecutive_errors = 0
        self.failing_since = 0

    def failed(self, code: int, intended: int, start: int, sid: int, exc: Exception) -> None:
        """Record a call that began at `start` and raised."""
        end = monotonic_ns()
        self.in_call = 0
        rec = self.rec
        rec.acts.extend((code, ERROR, self.thread, intended, start, end, sid))
        rec.error(code, exc)
        self.count += 1
        if not self.consecutive_errors:
            self.failing_since = start
        self.consecutive_errors += 1

    def done(self, code: int, intended: int, start: int, sid: int) -> int:
        """Record a successful call that began at `start`; its end."""
        end = monotonic_ns()
        self.in_call = self.consecutive_errors = 0
        self.count += 1
        rec = self.rec
        rec.acts.extend((code, OK, self.thread, intended, start, end, sid))
        return end

    def log(
        self, kind: int, code: int, start: int, end: int, sid: int, items: Iterable[Item]
    ) -> None:
        """Log records of `kind` (READ, WRITE or WRITE_ABS) for each item, then flush if due."""
        recs, th = self.rec.recs, self.thread
        for item, item_id, value in items:
            recs.extend((kind, item, code, th, item_id, start, end, value, sid))
        self.rec.maybe_flush()


class UnitContext(Generic[T]):
    """What one unit of a mix plays with, passed to it explicitly: `sid` (the session id
    its actions are logged under), `intended` (when its next action should start, ns),
    `rng` (the runner's random stream: the engine draws units from it too), `timer` (the
    runner's Timer: `conn` is its connection), `think` and `runner` (its number).

    The engine makes one per socialite runner and reuses it, setting `sid` and `intended`
    before each unit: keep nothing from it beyond the unit.
    """

    __slots__ = ("intended", "rng", "runner", "sid", "think", "timer")

    def __init__(self, timer: T, rng: random.Random, think: Think, runner: int = 0) -> None:
        self.timer = timer
        self.rng = rng
        self.think = think
        self.runner = runner
        self.sid = 0
        self.intended = 0

    @property
    def conn(self) -> Any:
        """The runner's store connection (the timer's)."""
        return self.timer.conn

    async def pause(self, seconds: float) -> bool:
        """Think `seconds` between two actions of a session; False when the experiment is
        stopping. The next action's intended start becomes the end of the think time, so a
        client that wakes late counts its lateness in the response time."""
        pause_ns = int(seconds * 1e9)
        due = monotonic_ns() + pause_ns
        if not await self.think(seconds):
            return False
        self.intended = due if pause_ns else monotonic_ns()
        return True

    async def read(
        self,
        code: int,
        call: Awaitable[R],
        observed: Callable[[R], Iterable[Item]] | None = None,
    ) -> R | None:
        """Time one read (action `code`); log (item kind, item id, value) for each item
        `observed` finds in its answer. The answer, or None when the store failed."""
        t = self.timer
        sid, intended = self.sid, self.intended
        t.in_call = start = monotonic_ns()
        try:
            answer = await call
        except Exception as exc:
            t.failed(code, intended, start, sid, exc)
            return None
        end = t.done(code, intended, start, sid)
        if observed is not None:
            t.log(READ, code, start, end, sid, observed(answer))
        return answer

    async def write(self, code: int, call: Awaitable[Any], deltas: Iterable[Item] = ()) -> bool:
        """Time one write that changes each (item kind, item id) by its delta whatever the
        store answers; True when it succeeded. A failed write is logged as never ending:
        its outcome is unknown."""
        return await self._write(WRITE, code, call, deltas)

    async def write_absolute(
        self, code: int, call: Awaitable[Any], values: Iterable[Item] = ()
    ) -> bool:
        """Time one write that sets each (item kind, item id) to a value; True when it
        succeeded. An item written this way takes no delta writes."""
        return await self._write(WRITE_ABS, code, call, values)

    async def _write(
        self, kind: int, code: int, call: Awaitable[Any], items: Iterable[Item]
    ) -> bool:
        t = self.timer
        sid, intended = self.sid, self.intended
        t.in_call = start = monotonic_ns()
        try:
            await call
        except Exception as exc:
            t.failed(code, intended, start, sid, exc)
            t.log(kind, code, start, NEVER, sid, items)
            return False
        t.log(kind, code, start, t.done(code, intended, start, sid), sid, items)
        return True

    async def write_from_answer(
        self,
        code: int,
        call: Awaitable[R],
        changes: Callable[[R], Iterable[Item]],
        if_unknown: Iterable[Item] = (),
        absolute: bool = False,
    ) -> R | None:
        """Time one write whose change depends on the store's answer (a transfer the store
        may refuse: `changes(answer)` gives the deltas it made, none when refused). When
        the call raised, its outcome is unknown: `if_unknown` (what it would have changed
        had it applied) is logged as never ending. `absolute`: the items take new values
        (WRITE_ABS) instead of deltas. The answer, or None when the store failed."""
        kind = WRITE_ABS if absolute else WRITE
        t = self.timer
        sid, intended = self.sid, self.intended
        t.in_call = start = monotonic_ns()
        try:
            answer = await call
        except Exception as exc:
            t.failed(code, intended, start, sid, exc)
            t.log(kind, code, start, NEVER, sid, if_unknown)
            return None
        t.log(kind, code, start, t.done(code, intended, start, sid), sid, changes(answer))
        return answer

    async def transaction(
        self,
        code: int,
        attempt: Callable[[], Awaitable[R]],
        policy: tx.RetryPolicy,
        observed: Callable[[R], Iterable[Item]] | None = None,
        changes: Callable[[R], Iterable[Item]] | None = None,
        if_unknown: Iterable[Item] = (),
    ) -> tx.TxOutcome[R]:
        """Play a transaction (sdk/transactions.py): `attempt()` makes one attempt's call;
        an attempt that raised `Abort` is retried after the policy's back-off until one
        commits or the attempts run out. Logged as one action from the intended start; the
        committed attempt's `observed(answer)` reads and `changes(answer)` deltas are logged
        over that attempt. An attempt that raised anything else ends it with an unknown
        outcome: `if_unknown` (deltas) is logged as never ending. A transaction the
        experiment's end cut short during a back-off (STOPPED) is no action: the store did
        not fail it, and nothing of it applied. Never raises."""
        t, rec = self.timer, self.timer.rec
        sid, intended = self.sid, self.intended
        t.in_call = first = monotonic_ns()
        tries = 0
        while True:
            tries += 1
            start = monotonic_ns()
            try:
                answer = await attempt()
            except tx.Abort as abort:
                rec.tally(code, tx.ABORTS[abort.cause], 1)
                if tries >= policy.attempts:
                    rec.tally(code, tx.GAVE_UP, 1)
                    t.failed(code, intended, first, sid, abort)
                    return tx.TxOutcome(tx.ABORTED, None, tries)
                wait = policy.delay_s(tries, self.rng)
                paused = monotonic_ns()
                going_on = await self.think(wait)
                rec.tally(code, tx.BACKOFF_US, (monotonic_ns() - paused) // 1000)
                if not going_on:  # the experiment ended it, not the store: no action
                    t.in_call = 0
                    return tx.TxOutcome(tx.STOPPED, None, tries)
                continue
            except Exception as exc:
                rec.tally(code, tx.UNKNOWN, 1)
                t.failed(code, intended, first, sid, exc)
                t.log(WRITE, code, start, NEVER, sid, if_unknown)
                return tx.TxOutcome(tx.FAILED, None, tries)
            break
        end = t.done(code, intended, first, sid)
        rec.tally(code, tx.COMMITS, 1)
        if tries > 1:
            rec.tally(code, tx.RETRIES, tries - 1)
        if observed is not None:
            t.log(READ, code, start, end, sid, observed(answer))
        if changes is not None:
            t.log(WRITE, code, start, end, sid, changes(answer))
        return tx.TxOutcome(tx.COMMITTED, answer, tries)
