"""A load process: owns one fragment's engine and answers its agent over a pipe.

The agent sends Request objects (worker/contracts.py) over a multiprocessing pipe (same
host, same version) and gets one Answer per request; only the agent speaks gRPC.
Progress goes through shared counters the agent reads every second: during a run the
action counts, outside one BEATS, which grows while loading, readying or validating
makes progress (a load stuck in a store call stops it).
"""

import contextlib
import os
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection
from multiprocessing.sharedctypes import SynchronizedArray
from pathlib import Path
from typing import Any

from bgbench.errors import UserError
from bgbench.worker.contracts import (
    ACTIONS,
    BEATS,
    ERRORS,
    LAG_US,
    SESSIONS,
    TIMEOUTS,
    Answer,
    ErrorInfo,
    ExitCommand,
    LatencyDelta,
    PrepareCommand,
    PrepareResult,
    ReadyCommand,
    Request,
    Result,
    RunCommand,
    ValidateCommand,
)
from bgbench.worker.engine import FragmentEngine, RunSpec
from bgbench.worker.stopflag import StopFlag
from bgbench.workloads import registry

BEAT_EVERY_S = 0.5


def _exit_with_parent(parent: int) -> None:
    """A load process must not outlive its agent (killed with SIGKILL, say)."""
    while True:
        time.sleep(1.0)
        if os.getppid() != parent:
            os._exit(3)


def serve(conn: Connection, stop: StopFlag, counters: "SynchronizedArray[Any]") -> None:
    threading.Thread(target=_exit_with_parent, args=(os.getppid(),), daemon=True).start()
    engine: FragmentEngine | None = None

    def beat() -> None:
        counters[BEATS] += 1

    while True:
        try:
            request: Request = conn.recv()
        except EOFError:
            return  # the agent is gone
        command, seq = request.command, request.seq
        if isinstance(command, ExitCommand):
            conn.send(Answer(seq))
            return
        beat()
        result: Result
        try:
            if isinstance(command, PrepareCommand):
                _close(engine)
                engine = None
                result, engine = _prepare(command, beat)
            elif engine is None:
                raise UserError("prepare must come before ready, run or validate")
            elif isinstance(command, ReadyCommand):
                result = engine.ready(command.start_state)
            elif isinstance(command, RunCommand):
                with _beating(beat):  # alive, whatever the store does (it has its own bound)
                    result = _run(engine, command, seq, stop, counters, conn)
            elif isinstance(command, ValidateCommand):
                with _beating(beat):  # our own computation: it cannot wait on a store
                    result = engine.validate(Path(command.log_dir), command.clock)
            else:
                raise UserError(f"unknown command {type(command).__name__}")
            beat()
            conn.send(Answer(seq, result))
        except UserError as exc:
            conn.send(Answer(seq, error=ErrorInfo("user", str(exc))))
        except Exception as exc:
            message = f"{type(exc).__name__}: {exc}"
            trace = traceback.format_exc(limit=8)
            conn.send(Answer(seq, error=ErrorInfo("system", message, trace)))


@contextlib.contextmanager
def _beating(beat: Callable[[], None]) -> Iterator[None]:
    done = threading.Event()

    def keep_beating() -> None:
        while not done.wait(BEAT_EVERY_S):
            beat()

    thread = threading.Thread(target=keep_beating, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


def _prepare(
    command: PrepareCommand, beat: Callable[[], None]
) -> tuple[PrepareResult, FragmentEngine | None]:
    """Phase "schema": create the schema, load nothing (one process of the cluster does
    this before any load); "load": load the fragment into the existing schema, no DDL;
    "all": both, for a process alone."""
    with _beating(beat):  # imports and parsing only: a busy host's slow imports are no hang
        workload = registry.get(command.workload)
        config = workload.config_model.model_validate_json(command.config_json)
        registry.binding_class(command.workload, command.store)  # its module and driver
    if command.phase == "schema":
        binding = registry.make_binding(command.workload, command.store, command.options)
        try:
            t0 = time.perf_counter()
            workload.create_schema(config, binding)
            seconds = time.perf_counter() - t0
            return PrepareResult(None, 0, seconds, {"schema": seconds}, binding.describe()), None
        finally:
            binding.close()
    if command.phase not in ("load", "all"):
        raise UserError(f"unknown prepare phase {command.phase!r}")
    engine = FragmentEngine(
        workload, config, command.store, command.options, command.capacities, command.fragment
    )
    engine.progress = beat
    return engine.prepare(create_schema=command.phase == "all"), engine


def _close(engine: FragmentEngine | None) -> None:
    """The binding of a previous prepare (its connection pool, its driver's threads)."""
    if engine is not None:
        with contextlib.suppress(Exception):
            engine.close()


def _run(
    engine: FragmentEngine,
    command: RunCommand,
    seq: int,
    stop: StopFlag,
    counters: "SynchronizedArray[Any]",
    conn: Connection,
) -> Result:
    # Threads poll a local event (cheap); a watcher relays the agent's cross-process one.
    local_stop = threading.Event()
    finished = threading.Event()

    def relay() -> None:
        while not finished.is_set():
            if stop.wait(0.1):
                local_stop.set()
                return

    watcher = threading.Thread(target=relay, daemon=True)
    watcher.start()

    def publish(
        actions: int,
        errors: int,
        sessions: int,
        delta: bytes | None,
        lag_ms: float,
        timeouts: int,
    ) -> None:
        counters[ACTIONS], counters[ERRORS], counters[SESSIONS] = actions, errors, sessions
        counters[TIMEOUTS] = timeouts
        counters[LAG_US] = max(counters[LAG_US], int(lag_ms * 1000))
        if delta is not None:  # the latency histogram of the last interval, for the live view
            conn.send(LatencyDelta(seq, delta))

    spec = RunSpec(
        experiment_id=command.experiment_id,
        threads=command.threads,
        duration_s=command.duration_s,
        operation_count=command.operation_count,
        seed=command.seed,
        log_dir=Path(command.log_dir),
        start_state=command.start_state or "carry",
        target_rate=command.target_rate,
        arrivals=command.arrivals or "poisson",
        tolerate_errors=command.tolerate_errors,
    )
    try:
        return engine.run(spec, local_stop, publish)
    finally:
        finished.set()
        watcher.join()
