"""The generic core of the one wrapper that times every store call and logs tracked items.

Bindings never time themselves. Each call records (action, status, runner, intended
start, actual start, end, session); the intended start is when the schedule
(inter-arrival or think time) wanted the action to begin, so response time
(end - intended) and service time (end - start) are both available. Reads log the value
of each tracked item they saw, writes the change they made to it.

A workload's timed connection subclasses Timer: `read` and `write` cover the usual
shapes (one store call, then log records), and a workload may write its hottest paths
out in full with `acts`/`recs` as these do. Everything here is on the per-action path.

A write that raised has an unknown outcome: it is logged with end = NEVER so the
validator treats it as possibly applied at any time after its start, or never.
"""

from collections.abc import Awaitable, Callable, Iterable
from time import monotonic_ns
from typing import Any, TypeVar

from bgbench.validation.logformat import NEVER, READ, WRITE
from bgbench.worker.measurement import ERROR, OK, Recorder

R = TypeVar("R")


class Timer:
    """Times and logs every action of one socialite runner (a thread or a task).

    `in_call` is when the store call in progress began (monotonic ns), 0 between calls;
    `count` the actions performed; `consecutive_errors` the failures since the last
    success. `conn` is the runner's store connection (asynchronous, or blocking wrapped).
    """

    __slots__ = ("conn", "consecutive_errors", "count", "in_call", "rec", "thread")

    def __init__(self, conn: Any, recorder: Recorder, thread: int) -> None:
        self.conn = conn
        self.rec = recorder
        self.thread = thread
        self.in_call = 0
        self.count = 0
        self.consecutive_errors = 0

    def failed(self, code: int, intended: int, start: int, sid: int, exc: Exception) -> None:
        end = monotonic_ns()
        self.in_call = 0
        rec = self.rec
        rec.acts.extend((code, ERROR, self.thread, intended, start, end, sid))
        rec.live.append(end - intended)
        rec.error(code, exc)
        self.count += 1
        self.consecutive_errors += 1

    def done(self, code: int, intended: int, start: int, sid: int) -> int:
        """Record a successful call that began at `start`; its end."""
        end = monotonic_ns()
        self.in_call = self.consecutive_errors = 0
        self.count += 1
        rec = self.rec
        rec.acts.extend((code, OK, self.thread, intended, start, end, sid))
        rec.live.append(end - intended)
        return end

    async def read(
        self,
        code: int,
        sid: int,
        intended: int,
        call: Awaitable[R],
        observed: Callable[[R], Iterable[tuple[int, int, int]]] | None = None,
    ) -> R | None:
        """Time one read; log (item kind, item id, value) for each item `observed` finds in
        its answer. None when the store failed."""
        self.in_call = start = monotonic_ns()
        try:
            answer = await call
        except Exception as exc:
            self.failed(code, intended, start, sid, exc)
            return None
        end = self.done(code, intended, start, sid)
        if observed is not None:
            recs, th = self.rec.recs, self.thread
            for item, item_id, value in observed(answer):
                recs.extend((READ, item, code, th, item_id, start, end, value, sid))
            self.rec.maybe_flush()
        return answer

    async def write(
        self,
        code: int,
        sid: int,
        intended: int,
        call: Awaitable[Any],
        deltas: Iterable[tuple[int, int, int]] = (),
    ) -> bool:
        """Time one write that changes each (item kind, item id) by its delta; True when it
        succeeded. A failed write is logged as never ending: its outcome is unknown."""
        self.in_call = start = monotonic_ns()
        try:
            await call
        except Exception as exc:
            self.failed(code, intended, start, sid, exc)
            end, ok = NEVER, False
        else:
            end, ok = self.done(code, intended, start, sid), True
        recs, th = self.rec.recs, self.thread
        for item, item_id, delta in deltas:
            recs.extend((WRITE, item, code, th, item_id, start, end, delta, sid))
        self.rec.maybe_flush()
        return ok
