"""A load process: owns one fragment's engine and answers its agent over a pipe.

The agent talks to its load processes with small dicts over a multiprocessing
pipe (same host, same version); only the agent speaks gRPC. Progress goes
through shared counters the agent reads every second.
"""

import contextlib
import os
import threading
import time
import traceback
from multiprocessing.connection import Connection
from multiprocessing.sharedctypes import SynchronizedArray
from multiprocessing.synchronize import Event as ProcessEvent
from pathlib import Path

from bgbench.errors import UserError
from bgbench.worker.engine import FragmentEngine, RunSpec
from bgbench.workloads.bg.config import BGConfig
from bgbench.workloads.bg.generator import FragmentPlan
from bgbench.workloads.bg.store import make_binding

# Indexes into the shared progress counters; LAG_US is the worst client lag since the
# agent last reset it.
ACTIONS, ERRORS, SESSIONS, LAG_US = 0, 1, 2, 3
COUNTERS = 4


def _exit_with_parent(parent: int) -> None:
    """A load process must not outlive its agent (killed with SIGKILL, say)."""
    while True:
        time.sleep(1.0)
        if os.getppid() != parent:
            os._exit(3)


def serve(conn: Connection, stop: ProcessEvent, counters: SynchronizedArray) -> None:
    threading.Thread(target=_exit_with_parent, args=(os.getppid(),), daemon=True).start()
    engine: FragmentEngine | None = None
    while True:
        try:
            msg = conn.recv()
        except EOFError:
            return  # the agent is gone
        op, seq = msg["op"], msg.get("seq")
        if op == "exit":
            conn.send({"ok": True, "result": None, "seq": seq})
            return
        try:
            if op == "prepare":
                _close(engine)
                engine = None
                result, engine = _prepare(msg)
            elif op == "ready":
                if engine is None:
                    raise UserError("prepare must come before ready")
                result = engine.ready(msg["start_state"])
            elif op == "run":
                if engine is None:
                    raise UserError("prepare must come before run")
                result = _run(engine, msg, stop, counters, conn)
            elif op == "validate":
                if engine is None:
                    raise UserError("prepare must come before validate")
                result = engine.validate(Path(msg["log_dir"]))
            else:
                raise UserError(f"unknown operation {op!r}")
            conn.send({"ok": True, "result": result, "seq": seq})
        except UserError as exc:
            conn.send({"ok": False, "kind": "user", "message": str(exc), "seq": seq})
        except Exception as exc:
            conn.send(
                {
                    "ok": False,
                    "kind": "system",
                    "message": f"{type(exc).__name__}: {exc}",
                    "trace": traceback.format_exc(limit=8),
                    "seq": seq,
                }
            )


def _prepare(msg: dict) -> tuple[dict, FragmentEngine | None]:
    """Phase "schema": create the schema, load nothing (one process of the cluster does
    this before any load); "load": load the fragment into the existing schema, no DDL;
    "all": both, for a process alone."""
    config = BGConfig.model_validate_json(msg["config"])
    phase = msg.get("phase", "all")
    if phase == "schema":
        binding = make_binding(msg["store"], msg["options"])
        try:
            binding.create_schema(config.database)
            return {"store": binding.describe()}, None
        finally:
            binding.close()
    if phase not in ("load", "all"):
        raise UserError(f"unknown prepare phase {phase!r}")
    plan = FragmentPlan(tuple(msg["capacities"]), config.workload.zipfianmean)
    engine = FragmentEngine(config, msg["store"], msg["options"], plan, msg["fragment"])
    return engine.prepare(create_schema=phase == "all"), engine


def _close(engine: FragmentEngine | None) -> None:
    """The binding of a previous prepare (its connection pool, its driver's threads)."""
    if engine is not None:
        with contextlib.suppress(Exception):
            engine.close()


def _run(
    engine: FragmentEngine,
    msg: dict,
    stop: ProcessEvent,
    counters: SynchronizedArray,
    conn: Connection,
):
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
        actions: int, errors: int, sessions: int, delta: bytes | None, lag_ms: float
    ) -> None:
        counters[ACTIONS], counters[ERRORS], counters[SESSIONS] = actions, errors, sessions
        counters[LAG_US] = max(counters[LAG_US], int(lag_ms * 1000))
        if delta is not None:  # the latency histogram of the last interval, for the live view
            conn.send({"seq": msg.get("seq"), "delta": delta})

    spec = RunSpec(
        experiment_id=msg["experiment_id"],
        threads=msg["threads"],
        duration_s=msg["duration"],
        operation_count=msg["operations"],
        seed=msg["seed"],
        log_dir=Path(msg["log_dir"]),
        start_state=msg.get("start_state") or "carry",
    )
    try:
        return engine.run(spec, local_stop, publish)
    finally:
        finished.set()
        watcher.join()
