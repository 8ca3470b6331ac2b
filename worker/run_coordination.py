"""One run across the agent's load processes: start every fragment, stream progress about
twice a second, stop them when the caller leaves or time runs out, and end with their
results merged into the agent's RunResult (bgbench/run_result).

The run's start (`RunningFragments.t0_ns`, monotonic ns) is the origin of every progress's
elapsed_seconds; the load processes' log records are on the same clock (CLOCK_MONOTONIC,
one per host), so a Validate's phase offsets map onto the logs from it."""

import dataclasses
import math
import threading
import time
from collections.abc import Callable, Iterator
from multiprocessing.connection import wait as wait_any
from pathlib import Path

import psutil

from bgbench.protos import worker_pb2 as pb
from bgbench.resources.processes import StoreWatch
from bgbench.run_result import RunResult
from bgbench.run_result.histograms import merged
from bgbench.worker.contracts import (
    ACTIONS,
    COUNTERS,
    ERRORS,
    SESSIONS,
    TIMEOUTS,
    Answer,
    RunCommand,
)
from bgbench.worker.host_watch import HostWatch, check_watch
from bgbench.worker.load_processes import LoadProcess, cpu_seconds, take_lag
from bgbench.worker.replies import error, first_error, result_of
from bgbench.worker.runner import ARRIVALS, LIVE_EVERY_S

PROGRESS_EVERY_S = LIVE_EVERY_S  # one progress per live latency delta of the load processes
RUN_GRACE_S = 60.0


def check_request(request: pb.RunRequest) -> pb.Error | None:
    """The run's pacing and its store watch within bounds."""
    rate, arrivals = request.target_rate, request.arrivals
    if not (math.isfinite(rate) and rate >= 0):
        return error(
            "user",
            f"target_rate {rate!r} is not a finite rate >= 0 (0: closed loop)",
            "target_rate",
        )
    if arrivals and arrivals not in ARRIVALS:
        return error(
            "user", f"arrivals {arrivals!r} is not one of {', '.join(ARRIVALS)}", "arrivals"
        )
    return check_watch(request.watch)


def rate_share(rate: float, threads: int, total: int) -> float:
    """A load process's share of the agent's arrival rate: in proportion to its threads."""
    return rate * threads / total if total else 0.0


def start(processes: list[LoadProcess], request: pb.RunRequest, log_dir: Path) -> None:
    """Every load process starts its share of the threads (and of the arrival rate)."""
    n = len(processes)
    shares = [request.threads // n + (1 if i < request.threads % n else 0) for i in range(n)]
    for proc, threads in zip(processes, shares, strict=True):
        proc.stop.clear()
        for i in range(COUNTERS):
            proc.counters[i] = 0
        proc.send(
            RunCommand(
                experiment_id=request.experiment_id,
                threads=threads,
                duration_s=request.duration_seconds,
                operation_count=request.operation_count,
                seed=request.seed,
                log_dir=str(log_dir),
                start_state=request.start_state,
                target_rate=rate_share(request.target_rate, threads, request.threads),
                arrivals=request.arrivals or "poisson",
                tolerate_errors=request.tolerate_errors,
            )
        )


class RunningFragments:
    """The load processes' answers as they come, and the progress between them, each with
    a sample of the host (the load processes and the store's processes on it)."""

    def __init__(
        self, processes: list[LoadProcess], duration_s: float, host: HostWatch | None = None
    ) -> None:
        self.processes = processes
        self.host = host
        self.children = [psutil.Process(p.process.pid) for p in processes]
        self.replies: dict[int, Answer] = {}
        self.deltas: list[bytes] = []
        self.cpu_last = self._cpu()
        self.t0_ns = time.monotonic_ns()  # the run's start, the origin of elapsed_seconds
        self.t0 = self.last_tick = self.t0_ns / 1e9
        self.hard_deadline = self.t0 + duration_s + RUN_GRACE_S

    def _cpu(self) -> float:
        return sum(cpu_seconds(c) for c in self.children)

    @property
    def done(self) -> bool:
        return len(self.replies) == len(self.processes)

    def collect(self) -> None:
        """Waits until the next progress is due for answers; notes those that came."""
        pending = {p.conn: i for i, p in enumerate(self.processes) if i not in self.replies}
        wait_any(
            list(pending), timeout=max(0.0, self.last_tick + PROGRESS_EVERY_S - time.monotonic())
        )
        for i in pending.values():
            proc = self.processes[i]
            answer = proc.poll_reply(self.deltas)
            if answer is not None:
                self.replies[i] = answer
            elif not proc.process.is_alive():
                self.replies[i] = proc.died()

    def stop(self) -> None:
        for p in self.processes:
            p.stop.set()

    def progress_due(self, now: float) -> bool:
        return now - self.last_tick >= PROGRESS_EVERY_S and not self.done

    def progress(self, now: float, final: bool = False) -> pb.Progress:
        """What ran since the last progress; the final one (what ended after it, so the
        deltas add up to the run) has no CPU share or lag."""
        processes = self.processes
        progress = pb.Progress(
            elapsed_seconds=now - self.t0,
            actions=sum(p.counters[ACTIONS] for p in processes),
            errors=sum(p.counters[ERRORS] for p in processes),
            sessions=sum(p.counters[SESSIONS] for p in processes),
            timeouts=sum(p.counters[TIMEOUTS] for p in processes),
            response_hist_delta=merged(self.deltas),
        )
        self.deltas.clear()
        if not final:
            cpu_now = self._cpu()
            progress.cpu_percent = 100.0 * (cpu_now - self.cpu_last) / (now - self.last_tick)
            progress.client_lag_ms = take_lag(processes)
            self.cpu_last, self.last_tick = cpu_now, now
            sample = self.host.sample(now - self.t0) if self.host is not None else None
            if sample is not None:
                progress.host.CopyFrom(sample)
        return progress

    def answers(self) -> list[Answer]:
        return [self.replies[i] for i in range(len(self.processes))]


def run_events(
    processes: list[LoadProcess],
    request: pb.RunRequest,
    log_dir: Path,
    caller_active: Callable[[], bool],
    stopping: threading.Event,
    started: Callable[[int], None] = lambda _origin_ns: None,
) -> Iterator[pb.RunEvent]:
    """The Run call's events: progress, then the merged result or an error. `started` is
    told the run's start (monotonic ns), the origin of its progress's elapsed_seconds."""
    if not processes:
        yield pb.RunEvent(error=error("user", "prepare must come before run"))
        return
    pids = [p.process.pid for p in processes if p.process.pid]
    host = HostWatch(StoreWatch.from_proto(request.watch), load=lambda: list(pids))
    try:
        host.prime()
        yield from _events(processes, request, log_dir, caller_active, stopping, host, started)
    finally:
        host.close()


def _events(
    processes: list[LoadProcess],
    request: pb.RunRequest,
    log_dir: Path,
    caller_active: Callable[[], bool],
    stopping: threading.Event,
    host: HostWatch,
    started: Callable[[int], None],
) -> Iterator[pb.RunEvent]:
    start(processes, request, log_dir)
    run = RunningFragments(processes, request.duration_seconds, host)
    started(run.t0_ns)
    while not run.done:
        run.collect()
        now = time.monotonic()
        if not caller_active() or now > run.hard_deadline:
            run.stop()
        if run.progress_due(now):
            yield pb.RunEvent(progress=run.progress(now))
    if stopping.is_set():  # the agent is shutting down: what ran is not the experiment
        yield pb.RunEvent(error=error("system", "the agent is stopping: run cut short"))
        return
    failed = first_error(run.answers())
    if failed is not None:
        yield pb.RunEvent(error=failed)
        return
    if run.deltas:
        yield pb.RunEvent(progress=run.progress(time.monotonic(), final=True))
    merged_run = RunResult.merge([result_of(a, RunResult) for a in run.answers()])
    yield pb.RunEvent(result=dataclasses.replace(merged_run, log_dir=str(log_dir)).to_proto())
