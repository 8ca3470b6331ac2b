"""The agent's load processes: one child process per fragment, and how they are stopped.

Each is driven over a pipe (worker/contracts.py); its shared counters say how far it got
(actions, errors, beats), which the Status call and the run's progress read.
"""

import contextlib
import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from multiprocessing.connection import wait as wait_any
from multiprocessing.context import SpawnContext
from multiprocessing.sharedctypes import SynchronizedArray
from typing import Any

import psutil

from bgbench.protos import worker_pb2 as pb
from bgbench.worker.contracts import (
    BEATS,
    COUNTERS,
    LAG_US,
    Answer,
    Command,
    ErrorInfo,
    ExitCommand,
    LatencyDelta,
    PrepareCommand,
    ReadyCommand,
    Request,
    RunCommand,
    ValidateCommand,
)
from bgbench.worker.stopflag import StopFlag

log = logging.getLogger("bgbench.agent")

# Stopping: load processes get this long to exit on their own before SIGKILL, ...
CLOSE_GRACE_S = 5.0
SHUTDOWN_GRACE_S = 1.0  # ... less when the agent itself is told to stop (SIGTERM).
IMPORT_BEAT_S = 0.5  # a load process importing the load engine beats this often

Abandoned = Callable[[], bool]  # True once the caller gave up on the call (cancelled it)


def _never() -> bool:
    return False


def serve_load(conn: Connection, stop: StopFlag, counters: "SynchronizedArray[Any]") -> None:
    """A load process's entry point. Named here, not in worker/loadproc.py, so that the agent
    that starts it never imports the load engine (only the child does). Once the agent tells
    it to exit, or is gone, the process ends without the interpreter's teardown (its numpy
    arrays, its threads, the engine's modules: a second or more on a busy host, which the
    agent and then the coordinator would wait for); its answers and logs are written by then,
    and the kernel closes its files and connections."""
    imported = threading.Event()

    def beat_while_importing() -> None:  # a command sent meanwhile sees progress, not a hang
        while not imported.wait(IMPORT_BEAT_S):
            counters[BEATS] += 1

    beating = threading.Thread(target=beat_while_importing, daemon=True)
    beating.start()
    try:
        from bgbench.worker import loadproc
    finally:
        imported.set()
        beating.join()
    loadproc.serve(conn, stop, counters)
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


class LoadProcess:
    """One child process serving one fragment. What it works on, and when its beats last
    grew, are kept here for the Status call."""

    def __init__(self, ctx: SpawnContext) -> None:
        self.conn, child_conn = ctx.Pipe()
        self.counters = ctx.Array("q", COUNTERS, lock=False)
        self.stop = StopFlag(self.counters)
        self.seq = 0
        self.fragment: int | None = None
        self.phase = ""  # the command it works on; "" when idle
        self._lock = threading.Lock()
        self._since = self._beat_at = time.monotonic()
        self._beats = 0
        self.process = ctx.Process(
            target=serve_load, args=(child_conn, self.stop, self.counters), daemon=True
        )
        self.process.start()
        child_conn.close()

    def send(self, command: Command) -> None:
        """Requests are numbered; an answer to an older one (a run that was cancelled before
        its answer was read) is skipped when it turns up."""
        with self._lock:
            self.seq += 1
            self.phase = phase_of(command)
            self._since = self._beat_at = time.monotonic()
            self._beats = self.counters[BEATS]
        self.conn.send(Request(self.seq, command))

    def _quiet(self, now: float) -> float:
        """Seconds since the beats last grew (or the command began); call with the lock."""
        beats = self.counters[BEATS]
        if beats != self._beats:
            self._beats, self._beat_at = beats, now
        return now - self._beat_at

    def status(self) -> pb.LoadProcessStatus:
        with self._lock:
            now = time.monotonic()
            quiet = self._quiet(now)
            return pb.LoadProcessStatus(
                pid=self.process.pid or 0,
                alive=self.process.is_alive(),
                fragment=-1 if self.fragment is None else self.fragment,
                phase=self.phase,
                beats=max(0, self._beats),
                busy_seconds=now - self._since if self.phase else 0.0,
                quiet_seconds=quiet if self.phase else 0.0,
            )

    def poll_reply(self, deltas: list[bytes]) -> Answer | None:
        """The answer to the latest request if it has arrived (older ones are dropped);
        latency deltas sent meanwhile go to `deltas`."""
        while self.conn.poll():
            try:
                message = self.conn.recv()
            except EOFError:
                return self.died()
            if message.seq != self.seq:
                continue
            if isinstance(message, LatencyDelta):
                deltas.append(message.hist)
                continue
            return self._noted(message)
        return None

    def request(self, command: Command, timeout: float, abandoned: Abandoned = _never) -> Answer:
        self.send(command)
        return self.reply(timeout, abandoned)

    def reply(self, timeout: float, abandoned: Abandoned = _never) -> Answer:
        """The answer to the latest request; an error answer if the process dies, the
        caller gives up (`abandoned`: the coordinator cancelled the call) or time runs out.
        In the last two cases the process is still busy: the caller closes it."""
        deadline = time.monotonic() + timeout
        while True:
            while not self.conn.poll(0.2):
                with self._lock:
                    self._quiet(time.monotonic())  # a beat between two Status calls counts
                if not self.process.is_alive():
                    return self.died()
                if abandoned():
                    return self._failed(f"{self.phase or 'request'} abandoned by the caller")
                if time.monotonic() > deadline:
                    return self._failed(f"no answer in {timeout:.0f} s")
            try:
                message = self.conn.recv()
            except EOFError:
                return self.died()
            if isinstance(message, Answer) and message.seq == self.seq:
                return self._noted(message)

    def _noted(self, answer: Answer) -> Answer:
        """A system failure's traceback goes to the agent's log (agent.log for local agents):
        the coordinator only gets the one-line message."""
        with self._lock:
            self.phase = ""
        if answer.error is not None and answer.error.trace:
            log.error(
                "load process %s failed: %s\n%s",
                self.process.pid,
                answer.error.message,
                answer.error.trace.rstrip(),
            )
        return answer

    def _failed(self, message: str) -> Answer:
        return Answer(self.seq, error=ErrorInfo("system", message))

    def died(self) -> Answer:
        self.process.join(1)
        message = f"load process {self.process.pid} died (exit code {self.process.exitcode})"
        log.error("%s", message)
        with self._lock:
            self.phase = ""
        return self._failed(message)

    def close(self) -> None:
        stop_all([self], CLOSE_GRACE_S)


def phase_of(command: Command) -> str:
    if isinstance(command, PrepareCommand):
        return "schema" if command.phase == "schema" else "load"
    if isinstance(command, ReadyCommand):
        return "ready"
    if isinstance(command, RunCommand):
        return "run"
    if isinstance(command, ValidateCommand):
        return "validate"
    return "exit"


def stop_all(processes: list[LoadProcess], grace: float) -> None:
    """Stop load processes together, whatever they are doing, in about `grace` seconds:
    each is told to stop and exit; whatever is left then is killed."""
    for p in processes:
        p.stop.set()  # a run in progress winds down
        if p.process.is_alive():
            # Sequence -1: a request waiting for its own answer is not handed this one.
            with contextlib.suppress(OSError, ValueError):
                p.conn.send(Request(-1, ExitCommand()))
    deadline = time.monotonic() + grace
    left = [p for p in processes if p.process.is_alive()]
    while left and time.monotonic() < deadline:
        wait_any([p.process.sentinel for p in left], timeout=deadline - time.monotonic())
        left = [p for p in left if p.process.is_alive()]
    for p in left:
        log.warning("load process %s did not exit within %.1f s: killed", p.process.pid, grace)
        p.process.kill()
    for p in processes:
        p.process.join(1)


def take_lag(processes: list[LoadProcess]) -> float:
    """The worst client lag of the load processes since the last progress; reset."""
    worst = 0
    for p in processes:
        worst = max(worst, p.counters[LAG_US])
        p.counters[LAG_US] = 0
    return worst / 1000


def cpu_seconds(process: psutil.Process) -> float:
    try:
        t = process.cpu_times()
        return float(t.user + t.system)
    except psutil.Error:
        return 0.0
