"""The socialite loops of one run: tasks on an event loop, or threads for blocking stores.

Both play the workload's asynchronous units through its player (bgbench.sdk), each with
the runner's one unit context, timed by sdk.Timer. On the event loop one Recorder serves
every task (one runs at a time); each thread has its own. Between units a task whose
store never suspends yields to the loop once per time slice, so thousands of them share
it fairly without a switch per action.

Pacing. Closed loop (the default): a socialite starts its next unit when the last one
ends, after BG's inter-arrival time if there is one (slept from the unit's end, as BG's
ClientThread does). Open loop (a target rate): the load process's socialites share one
seeded arrival schedule (Poisson or evenly spaced); a free socialite takes the next
arrival, waits for it if it is ahead, or starts at once if the store fell behind. Either
way an action's intended start is when the schedule wanted it, so the response time
(end - intended) counts a queue the store made while the service time does not: the
coordinated omission of a closed loop does not hide a stall. T bounds the concurrency.

The client watches itself: the loop's lag (how late a timer fires) per interval goes
into the progress stream, and every action's delay between its intended start and its
store call is in its timings.
"""

import asyncio
import bisect
import threading
import time
from collections.abc import Callable
from time import monotonic_ns
from typing import Any

from bgbench.sdk import Player, Think, Timer, UnitContext, run_blocking
from bgbench.validation.logformat import LogWriter
from bgbench.worker.closing import CLOSE_BOUND_S, close_all
from bgbench.worker.measurement import LiveLatencies, Recorder, batch_for
from bgbench.worker.plan import (
    ARRIVALS as ARRIVALS,
)
from bgbench.worker.plan import (
    ERROR_BACKOFF_S,
    NEVER_NS,
    Arrivals,
    Flags,
    Plan,
    Publish,
    RunOutcome,
    action_counts,
    cpu_seconds,
    error_counts,
    failing,
    finish,
    gave_up,
    not_stopping,
    sleep_until,
    slice_for,
)
from bgbench.worker.plan import new_event_loop as new_event_loop

STOP_GRACE_S = 30.0
PUBLISH_EVERY_S = 0.2
LIVE_EVERY_S = 0.5  # live latency deltas: the coordinator takes intervals from them
CONNECT_AT_ONCE = 64  # connections opened concurrently when tasks start


# -- tasks on an event loop ----------------------------------------------------------------


class _Yield:
    """Awaiting this suspends the task once (as asyncio.sleep(0), without the call)."""

    def __await__(self):  # type: ignore[no-untyped-def]
        yield


YIELD = _Yield()


def run_tasks(
    plan: Plan,
    loop: asyncio.AbstractEventLoop,
    log: LogWriter,
    stop: threading.Event,
    publish: Publish,
) -> RunOutcome:
    return loop.run_until_complete(_run_tasks(plan, log, stop, publish))


async def _connect_tasks(plan: Plan, flags: Flags) -> list[Any] | None:
    """A connection per task, CONNECT_AT_ONCE at a time; None (all closed) if one failed."""
    gate = asyncio.Semaphore(CONNECT_AT_ONCE)
    binding = plan.binding

    async def connect(t: int) -> Any:
        async with gate:
            try:
                return await binding.connect_async()
            except Exception as exc:
                flags.aborted.append(f"task {t} could not connect to the store: {exc}")
                flags.stop = True
                return None

    raw = await asyncio.gather(*(connect(t) for t in range(plan.spec.threads)))
    if not flags.stop:
        return raw
    for conn in raw:
        if conn is not None:
            await conn.close()
    return None


def _task_think(flags: Flags) -> Think:
    async def think(seconds: float) -> bool:
        if seconds > 0:
            due = monotonic_ns() + int(seconds * 1e9)
            try:
                await asyncio.sleep(seconds)
                # libuv's timers (the loop's cached clock, ms) may fire early: wait it out
                while (left := due - monotonic_ns()) > 0:
                    await asyncio.sleep(left / 1e9)
            except asyncio.CancelledError:
                return False  # stopping: the loop ends at its next check
        return not flags.stop

    return think


async def _run_tasks(
    plan: Plan, log: LogWriter, stop: threading.Event, publish: Publish
) -> RunOutcome:
    threads = plan.spec.threads
    rec = Recorder(log, sink=plan.tally)
    flags = Flags()
    # per unit of the mix, those played: one list for every task (one runs at a time), and
    # a unit counts as a session when it performed an action, so their sum is the sessions
    unit_counts = [0] * len(plan.units)
    raw = await _connect_tasks(plan, flags)
    if raw is None:
        return RunOutcome(0.0, 0, [], flags.aborted[0], "tasks")
    slice_ns = slice_for(threads, getattr(plan.binding, "suspends", True))
    think = _task_think(flags)
    played = [plan.player(raw[t], rec, t, think) for t in range(threads)]
    conns = [player.timer for player, _ in played]
    arrivals = plan.arrivals()
    tasks = [
        asyncio.ensure_future(
            _socialite(plan, t, player, ctx, flags, unit_counts, slice_ns, arrivals)
        )
        for t, (player, ctx) in enumerate(played)
    ]
    live = LiveLatencies([rec])
    cpu0 = cpu_seconds()
    t0 = time.monotonic()

    def counts() -> tuple[int, int, int]:
        return rec.action_count, sum(rec.errors.values()), sum(unit_counts)

    lag_max_ms = await _watch_tasks(plan, tasks, conns, flags, stop, live, counts, publish, rec)
    elapsed = time.monotonic() - t0
    cpu = cpu_seconds() - cpu0
    publish(*counts(), live.cut(final=True), 0.0, rec.timeouts)
    stuck = flags.aborted or flags.notes  # calls left inside a store that stopped answering
    await close_all(conns, plan.fragment, CLOSE_BOUND_S if stuck else None)
    finish([rec])
    return RunOutcome(
        elapsed,
        sum(unit_counts),
        error_counts([rec], plan.action_names),
        flags.aborted[0] if flags.aborted else "",
        "tasks",
        lag_max_ms,
        cpu,
        unit_counts,
        "; ".join(flags.notes),
        action_counts([rec]),
    )


async def _watch_tasks(
    plan: Plan,
    tasks: list["asyncio.Task[None]"],
    conns: list[Timer[Any]],
    flags: Flags,
    stop: threading.Event,
    live: LiveLatencies,
    counts: Callable[[], tuple[int, int, int]],
    publish: Publish,
    rec: Recorder,
) -> float:
    """Watch the tasks until they end: stop them at the deadline (or when told), give up on
    those still inside store calls after the grace (an abort, or a note when the run
    tolerates errors), publish progress and live cuts on time. The loop's largest lag (ms)."""
    lag_max_ms = 0.0
    t0 = time.monotonic()
    plan.tally.origin_ns = round(t0 * 1e9)  # the run's start: interval 0 of its ended series
    deadline = t0 + plan.spec.duration_s
    next_cut = t0 + LIVE_EVERY_S
    stopped_at = 0
    while pending := [t for t in tasks if not t.done()]:
        now = time.monotonic()
        if now >= deadline or stop.is_set():
            flags.stop = True
        if flags.stop and not stopped_at:
            stopped_at = monotonic_ns()
            for t, task in enumerate(tasks):  # wake the thinkers; callers in the store finish
                if not task.done() and conns[t].in_call == 0:
                    task.cancel()
        if stopped_at and now >= deadline + STOP_GRACE_S:
            busy = sum(1 for t, task in enumerate(tasks) if not task.done() and conns[t].in_call)
            stuck = (
                f"{busy} tasks still inside store calls {STOP_GRACE_S:.0f} s after the end: "
                "the store stopped answering"
            )
            (flags.notes if plan.spec.tolerate_errors else flags.aborted).append(stuck)
            plan.fragment.uncertain = True  # their writes' outcomes are unknown
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
            break
        # the live cuts on time: the coordinator reads each delta as one interval
        wait = min(PUBLISH_EVERY_S, max(0.001, deadline - now), max(0.001, next_cut - now))
        asked = monotonic_ns()
        await asyncio.sleep(wait)
        late = max(0.0, (monotonic_ns() - asked) / 1e6 - wait * 1000)
        lag_max_ms = max(lag_max_ms, late)
        delta = None
        if time.monotonic() >= next_cut:
            delta, next_cut = live.cut(), next_cut + LIVE_EVERY_S
        publish(*counts(), delta, late, rec.timeouts)
    return lag_max_ms


async def _socialite(
    plan: Plan,
    t: int,
    player: Player,
    ctx: UnitContext[Any],
    flags: Flags,
    unit_counts: list[int],
    slice_ns: int,
    arrivals: Arrivals | None,
) -> None:
    """One socialite task. `slice_ns`: how long it runs before yielding to the loop
    (NEVER_NS when its store suspends on its own)."""
    timed, cumulative, units = player.timer, plan.cumulative, player.units
    acquire, release, rand = player.acquire, player.release, player.rng.random
    bisect_left = bisect.bisect_left
    take = arrivals.take if arrivals is not None else None
    gap_ns = 0 if take is not None else int(plan.interarrival_ms * 1_000_000)
    max_ops = plan.per_runner_ops or NEVER_NS
    slice_end = monotonic_ns() + slice_ns
    sid = t << 40
    think = ctx.think
    tolerant = plan.spec.tolerate_errors
    due = 0  # the next unit's intended start when a schedule set it; 0: as soon as free
    try:
        while not flags.stop:
            if take is not None and not due:
                due = take()
                wait = due - monotonic_ns()
                if wait > 0:
                    if not await think(wait / 1e9):
                        break
                    slice_end = monotonic_ns() + slice_ns
            if due:
                intended = due
                if monotonic_ns() >= slice_end:  # behind schedule: let others run
                    await YIELD
                    slice_end = monotonic_ns() + slice_ns
            else:
                intended = monotonic_ns()
                if intended >= slice_end:
                    await YIELD
                    intended = monotonic_ns()
                    slice_end = intended + slice_ns
            socialite = acquire()
            if socialite is None:  # every drawn socialite is busy: let their tasks run
                await YIELD
                continue  # an arrival taken waits for a free socialite
            before = timed.count
            ctx.sid = sid
            ctx.intended = intended
            u = bisect_left(cumulative, rand())
            try:
                await units[u](ctx, socialite)
            finally:
                release(socialite)
            due = 0
            sid += 1
            if timed.count > before:
                unit_counts[u] += 1
            if timed.consecutive_errors:
                if tolerant:  # a dead store is not spun on
                    if not await think(ERROR_BACKOFF_S):
                        break
                    slice_end = monotonic_ns() + slice_ns
                elif gave_up(timed):
                    flags.aborted.append(failing(timed, f"task {t}"))
                    flags.stop = True
            if timed.count >= max_ops:
                break
            if gap_ns:  # BG's inter-arrival time, from this unit's end to the next's start
                due = monotonic_ns() + gap_ns  # a late wake-up counts as the client's delay
                if not await think(gap_ns / 1e9):
                    break
                slice_end = monotonic_ns() + slice_ns
    except asyncio.CancelledError:
        return  # woken from a think time at the stop


# -- threads, for blocking stores -------------------------------------------------------------


def run_threads(plan: Plan, log: LogWriter, stop: threading.Event, publish: Publish) -> RunOutcome:
    spec = plan.spec
    threads = spec.threads
    log_lock = threading.Lock()
    recorders = [Recorder(log, log_lock, plan.tally, batch_for(threads)) for _ in range(threads)]
    timed: list[Timer[Any] | None] = [None] * threads
    sessions = [0] * threads
    unit_counts = [[0] * len(plan.units) for _ in range(threads)]
    flags = Flags()
    # Threads connect, then wait for all to be started: a thread started while thousands
    # of others already run waits its turn for the interpreter behind all of them.
    go = threading.Event()
    arrivals = plan.arrivals()
    workers = [
        threading.Thread(
            target=_thread_main,
            args=(
                plan,
                t,
                recorders[t],
                timed,
                stop,
                go,
                flags,
                sessions,
                unit_counts[t],
                arrivals,
            ),
            name=f"socialite-f{plan.fragment.index}-t{t}",
            daemon=True,
        )
        for t in range(threads)
    ]
    live = LiveLatencies(recorders)
    try:
        for th in workers:
            th.start()
    except BaseException:
        stop.set()
        raise
    finally:
        go.set()
    cpu0 = cpu_seconds()
    t0 = time.monotonic()
    plan.tally.origin_ns = round(t0 * 1e9)  # the run's start: interval 0 of its ended series
    next_cut = t0 + LIVE_EVERY_S
    deadline = t0 + spec.duration_s
    stuck_deadline = deadline + STOP_GRACE_S
    stopped_at = 0  # monotonic ns when the stop was first seen
    lag_max_ms = 0.0

    def counts() -> tuple[int, int, int]:
        return (
            sum(r.action_count for r in recorders),
            sum(sum(r.errors.values()) for r in recorders),
            sum(sessions),
        )

    def timeouts() -> int:
        return sum(r.timeouts for r in recorders)

    while True:
        alive = [t for t, th in enumerate(workers) if th.is_alive()]
        now = time.monotonic()
        if not alive:
            break
        if now >= deadline or flags.stop:
            stop.set()
        if not stopped_at and stop.is_set():
            stopped_at = monotonic_ns()
        if now >= stuck_deadline:
            in_store, why = not_stopping(
                [timed[t] for t in alive], stopped_at, threads, STOP_GRACE_S
            )
            if in_store and spec.tolerate_errors:
                flags.notes.append(why)
                plan.fragment.uncertain = True  # their writes' outcomes are unknown
            else:
                flags.aborted.append(why)
            break
        wait = min(PUBLISH_EVERY_S, max(0.0, deadline - now) + 0.005, max(0.0, next_cut - now))
        asked = monotonic_ns()
        workers[alive[0]].join(timeout=wait)
        # How late this thread got the interpreter back (0 if the joined thread ended).
        late = max(0.0, (monotonic_ns() - asked) / 1e6 - wait * 1000)
        lag_max_ms = max(lag_max_ms, late)
        delta = None
        if time.monotonic() >= next_cut:
            delta, next_cut = live.cut(), next_cut + LIVE_EVERY_S
        publish(*counts(), delta, late, timeouts())
    publish(*counts(), live.cut(final=True), 0.0, timeouts())
    elapsed = time.monotonic() - t0
    cpu = cpu_seconds() - cpu0
    finish(recorders)
    return RunOutcome(
        elapsed,
        sum(sessions),
        error_counts(recorders, plan.action_names),
        flags.aborted[0] if flags.aborted else "",
        "threads",
        lag_max_ms,
        cpu,
        [sum(c) for c in zip(*unit_counts, strict=True)],
        "; ".join(flags.notes),
        action_counts(recorders),
    )


def _thread_main(
    plan: Plan,
    t: int,
    rec: Recorder,
    timed_slots: list[Timer[Any] | None],
    stop: threading.Event,
    go: threading.Event,
    flags: Flags,
    sessions: list[int],
    unit_counts: list[int],
    arrivals: Arrivals | None,
) -> None:
    binding = plan.binding
    placeholder: Timer[Any] = Timer(None, rec, t)
    placeholder.in_call = monotonic_ns()  # connecting waits on the store too
    timed_slots[t] = placeholder
    try:
        conn = binding.connect()
    except Exception as exc:
        flags.aborted.append(f"thread {t} could not connect to the store: {exc}")
        flags.stop = True
        stop.set()
        placeholder.in_call = 0
        return

    async def think(seconds: float) -> bool:
        return not (seconds > 0 and stop.wait(seconds)) and not stop.is_set()

    player, ctx = plan.player(conn, rec, t, think)
    timed = player.timer
    timed_slots[t] = timed
    units, cumulative, rand = player.units, plan.cumulative, player.rng.random
    take = arrivals.take_locked if arrivals is not None else None  # no lock in a closed loop
    gap_ns = 0 if take is not None else int(plan.interarrival_ms * 1_000_000)
    max_ops = plan.per_runner_ops or NEVER_NS
    tolerant = plan.spec.tolerate_errors
    go.wait()
    ends_ns = monotonic_ns() + int(plan.spec.duration_s * 1e9)  # `stop` may come late: crowded
    due = 0  # the next unit's intended start when a schedule set it; 0: as soon as free
    sid = t << 40
    try:
        while not stop.is_set():
            if take is not None and not due:
                due = take()
                if not sleep_until(stop, due):
                    break
            intended = due or monotonic_ns()
            if intended >= ends_ns:
                break
            socialite = player.acquire()
            if socialite is None:
                continue  # every drawn socialite is busy: draw again (an arrival waits)
            u = bisect.bisect_left(cumulative, rand())
            before = timed.count
            ctx.sid = sid
            ctx.intended = intended
            try:
                run_blocking(units[u](ctx, socialite))  # type: ignore[arg-type]
            finally:
                player.release(socialite)
            due = 0
            sid += 1
            if timed.count > before:
                sessions[t] += 1
                unit_counts[u] += 1
            if timed.consecutive_errors:
                if tolerant:  # a dead store is not spun on
                    if stop.wait(ERROR_BACKOFF_S):
                        break
                elif gave_up(timed):
                    flags.aborted.append(failing(timed, f"thread {t}"))
                    flags.stop = True
                    stop.set()
            if timed.count >= max_ops:
                break
            if gap_ns:  # BG's inter-arrival time, from this unit's end to the next's start
                due = monotonic_ns() + gap_ns  # a late wake-up counts as the client's delay
                if not sleep_until(stop, due):
                    break
    finally:
        conn.close()
