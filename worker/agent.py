"""The worker agent: a gRPC server that drives load processes, one per fragment.

`python -m bgbench.worker.agent --listen 127.0.0.1:0` prints one line
"BGBENCH-AGENT LISTENING host:port" once it serves, so a parent can find the port.
"""

import contextlib
import dataclasses
import json
import logging
import math
import multiprocessing as mp
import os
import platform
import signal
import socket
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent import futures
from multiprocessing.connection import wait as wait_any
from multiprocessing.context import SpawnContext
from pathlib import Path
from typing import Annotated, Any, TypeVar

import grpc
import psutil
import typer
from hdrh.histogram import HdrHistogram

from bgbench import __version__
from bgbench.errors import UserError
from bgbench.protos import AGENT_READY_LINE as READY_LINE
from bgbench.protos import PROTOCOL_VERSION, new_histogram
from bgbench.protos import worker_pb2 as pb
from bgbench.protos import worker_pb2_grpc as pb_grpc
from bgbench.worker import loadproc
from bgbench.worker.calibration import measure_capacity
from bgbench.worker.contracts import (
    ACTIONS,
    BEATS,
    COUNTERS,
    ERRORS,
    LAG_US,
    SESSIONS,
    Answer,
    Command,
    ErrorInfo,
    ExitCommand,
    LatencyDelta,
    PrepareCommand,
    PreparePhase,
    PrepareResult,
    ReadCounts,
    ReadyCommand,
    ReadyResult,
    Request,
    RunCommand,
    RunSummary,
    ValidateCommand,
    ValidateSummary,
    sum_counts,
)
from bgbench.worker.runner import ARRIVALS, LIVE_EVERY_S
from bgbench.worker.security import (
    ALLOW_STORE_PATHS_FLAG,
    MIN_TOKEN_CHARS,
    TokenInterceptor,
    confine_paths,
    experiment_dir,
    is_loopback,
    server_credentials,
)
from bgbench.worker.stopflag import StopFlag
from bgbench.workloads import registry

log = logging.getLogger("bgbench.agent")

PROGRESS_EVERY_S = LIVE_EVERY_S  # one progress per live latency delta of the load processes
PREPARE_TIMEOUT_S = VALIDATE_TIMEOUT_S = 3600.0
RUN_GRACE_S = 60.0
# A request waits this long for the previous one to wind down (a cancelled run stopping).
BUSY_WAIT_S = 30.0
# Stopping: load processes get this long to exit on their own before SIGKILL, ...
CLOSE_GRACE_S = 5.0
SHUTDOWN_GRACE_S = 1.0  # ... less when the agent itself is told to stop (SIGTERM),
SERVER_GRACE_S = 0.5  # in-flight calls this long to end,
EXIT_DEADLINE_S = 3.0  # and past this the process exits whatever is still running (the
# promise is an exit within 5 s of SIGTERM; a busy host delays each step).

Abandoned = Callable[[], bool]  # True once the caller gave up on the call (cancelled it)
T = TypeVar("T")


def _never() -> bool:
    return False


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
            target=loadproc.serve, args=(child_conn, self.stop, self.counters), daemon=True
        )
        self.process.start()
        child_conn.close()

    def send(self, command: Command) -> None:
        """Requests are numbered; an answer to an older one (a run that was cancelled before
        its answer was read) is skipped when it turns up."""
        with self._lock:
            self.seq += 1
            self.phase = _phase_of(command)
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
                return self._died()
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
                    return self._died()
                if abandoned():
                    return self._failed(f"{self.phase or 'request'} abandoned by the caller")
                if time.monotonic() > deadline:
                    return self._failed(f"no answer in {timeout:.0f} s")
            try:
                message = self.conn.recv()
            except EOFError:
                return self._died()
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

    def _died(self) -> Answer:
        self.process.join(1)
        message = f"load process {self.process.pid} died (exit code {self.process.exitcode})"
        log.error("%s", message)
        with self._lock:
            self.phase = ""
        return self._failed(message)

    def close(self) -> None:
        stop_all([self], CLOSE_GRACE_S)


def _phase_of(command: Command) -> str:
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


def _error(kind: str, message: str, field: str = "") -> pb.Error:
    return pb.Error(kind=kind, message=message, field=field)


class AgentService(pb_grpc.WorkerServicer):  # type: ignore[misc]
    def __init__(
        self,
        work_dir: Path,
        stopper: threading.Event,
        processes: int,
        allow_store_paths: bool = False,
    ) -> None:
        self.work_dir = work_dir
        self.allow_store_paths = allow_store_paths
        self.load_processes = processes
        self.agent_id = uuid.uuid4().hex[:12]
        self.processes: list[LoadProcess] = []
        self.fragments: list[int] = []
        self._ctx = mp.get_context("spawn")
        self._busy = threading.Lock()
        self._stopper = stopper

    # -- helpers -----------------------------------------------------------------
    def _ensure_processes(self, n: int) -> None:
        while len(self.processes) > n:
            self.processes.pop().close()
        while len(self.processes) < n:
            self.processes.append(LoadProcess(self._ctx))

    def _all(self, commands: list[Command], timeout: float, abandoned: Abandoned) -> list[Answer]:
        try:
            commands = [self._confined(c) for c in commands]
        except UserError as exc:  # answered as the load processes would have
            return [Answer(p.seq, error=ErrorInfo("user", str(exc))) for p in self.processes]
        for proc, command in zip(self.processes, commands, strict=True):
            proc.send(command)
        answers = [proc.reply(timeout, abandoned) for proc in self.processes]
        self._drop_stuck()
        return answers

    def _drop_stuck(self) -> None:
        """After the caller gave up (or time ran out) on a command a load process still
        works on: it may be stuck in a store call and never read another request, so all of
        them are stopped at once, the stuck ones killed; the next prepare starts afresh."""
        if any(p.phase for p in self.processes):
            stop_all(self.processes, SHUTDOWN_GRACE_S)
            self.processes.clear()

    def _confined(self, command: Command) -> Command:
        """A prepare's store options with the files they name kept inside the work dir,
        unless the agent was started with the allowance (local agents are)."""
        if not isinstance(command, PrepareCommand) or self.allow_store_paths:
            return command
        try:
            cls: Any = registry.binding_class(command.workload, command.store)
        except UserError:
            return command  # the load process names the unknown store
        fields = cls.Options.model_fields
        declared = getattr(cls, "file_options", ())
        names = {n: fields[n].default if n in fields else None for n in declared}
        if not names:
            return command
        confined = confine_paths(command.options, names, self.work_dir)
        return dataclasses.replace(command, options=confined)

    def _log_dir(self, experiment_id: str) -> Path:
        return experiment_dir(self.work_dir, experiment_id)

    def close(self) -> None:
        stop_all(self.processes, CLOSE_GRACE_S)
        self.processes.clear()

    # -- RPCs --------------------------------------------------------------------
    def Handshake(
        self, request: pb.HandshakeRequest, context: grpc.ServicerContext
    ) -> pb.HandshakeReply:
        reply = pb.HandshakeReply(
            protocol_version=PROTOCOL_VERSION,
            agent_id=self.agent_id,
            hostname=socket.gethostname(),
            cores=os.cpu_count() or 1,
            memory_bytes=psutil.virtual_memory().total,
            load_processes=self.load_processes,
            bgbench_version=__version__,
            python_version=platform.python_version(),
        )
        if request.measure_capacity:
            reply.capacity = measure_capacity(self.load_processes)
        if request.protocol_version != PROTOCOL_VERSION:
            reply.error.CopyFrom(
                _error(
                    "user",
                    f"protocol version mismatch: coordinator speaks {request.protocol_version}, "
                    f"agent speaks {PROTOCOL_VERSION}; install the same bgbench on both",
                )
            )
        return reply

    def Status(self, request: pb.StatusRequest, context: grpc.ServicerContext) -> pb.StatusReply:
        """Never waits for another call: it is how the coordinator sees a stuck one."""
        return pb.StatusReply(
            agent_id=self.agent_id, processes=[p.status() for p in list(self.processes)]
        )

    def Prepare(self, request: pb.PrepareRequest, context: grpc.ServicerContext) -> pb.PrepareReply:
        if not self._busy.acquire(timeout=BUSY_WAIT_S):
            return pb.PrepareReply(error=_error("user", "agent busy with another request"))
        try:
            if request.phase == pb.PREPARE_READY:
                return self._ready(request.start_state, _abandoned(context))
            return self._prepare(request, _abandoned(context))
        finally:
            self._busy.release()

    def _prepare(self, request: pb.PrepareRequest, abandoned: Abandoned) -> pb.PrepareReply:
        if not request.workload:
            return pb.PrepareReply(error=_error("user", "no workload named", "workload"))
        fragments = list(request.fragments)
        if request.phase != pb.PREPARE_SCHEMA and len(fragments) != self.load_processes:
            return pb.PrepareReply(
                error=_error(
                    "user",
                    f"got {len(fragments)} fragments for {self.load_processes} load processes",
                )
            )
        try:
            options = json.loads(request.store_options_json or "{}")
        except json.JSONDecodeError:
            options = None
        if not isinstance(options, dict):
            return pb.PrepareReply(
                error=_error("user", "store options are not a JSON object", "store.options")
            )
        self._ensure_processes(self.load_processes)

        def command(fragment: int, phase: PreparePhase) -> PrepareCommand:
            return PrepareCommand(
                workload=request.workload,
                config_json=request.workload_config_json,
                store=request.store,
                options=options,
                capacities=tuple(request.capacities),
                fragment=fragment,
                phase=phase,
            )

        if request.phase in (pb.PREPARE_SCHEMA, pb.PREPARE_SCHEMA_AND_LOAD):
            made = self._create_schema(
                command(fragments[0] if fragments else 0, "schema"), abandoned
            )
            if made.error is not None:
                self.close()
                return pb.PrepareReply(error=_error_of(made.error))
            if request.phase == pb.PREPARE_SCHEMA:
                return pb.PrepareReply(store_description=_result(made, PrepareResult).store)
        self.fragments = fragments
        for proc, k in zip(self.processes, fragments, strict=True):
            proc.fragment = k
        answers = self._all([command(k, "load") for k in fragments], PREPARE_TIMEOUT_S, abandoned)
        failed = _first_error(answers)
        if failed is not None:
            self.close()
            return pb.PrepareReply(error=failed)
        loaded = [_result(a, PrepareResult) for a in answers]
        return pb.PrepareReply(
            fragments=[
                pb.FragmentInfo(
                    fragment=k if r.fragment is None else r.fragment,
                    members=r.size,
                    load_seconds=r.load_seconds,
                    phase_seconds=r.phases,
                )
                for k, r in zip(fragments, loaded, strict=True)
            ],
            store_description=loaded[0].store,
        )

    def _ready(self, start_state: str, abandoned: Abandoned) -> pb.PrepareReply:
        """Every fragment's state made exact before the run (a reload, say), all at once."""
        if not self.processes:
            return pb.PrepareReply(error=_error("user", "prepare must come before ready"))
        command = ReadyCommand(start_state or "carry")
        answers = self._all([command] * len(self.processes), PREPARE_TIMEOUT_S, abandoned)
        failed = _first_error(answers)
        if failed is not None:
            return pb.PrepareReply(error=failed)
        readied = [_result(a, ReadyResult) for a in answers]
        return pb.PrepareReply(
            fragments=[
                pb.FragmentInfo(fragment=r.fragment, members=r.size, load_seconds=r.load_seconds)
                for r in readied
            ]
        )

    def _create_schema(self, command: Command, abandoned: Abandoned) -> Answer:
        """The first load process alone creates the schema; the others stay idle meanwhile:
        DDL must never run beside a load."""
        try:
            command = self._confined(command)
        except UserError as exc:  # answered as the load process would have
            return Answer(self.processes[0].seq, error=ErrorInfo("user", str(exc)))
        answer = self.processes[0].request(command, PREPARE_TIMEOUT_S, abandoned)
        self._drop_stuck()
        return answer

    def Run(self, request: pb.RunRequest, context: grpc.ServicerContext) -> Iterator[pb.RunEvent]:
        try:
            self._log_dir(request.experiment_id)
        except UserError as exc:
            yield pb.RunEvent(error=_error("user", str(exc), "experiment_id"))
            return
        bad_pacing = _check_pacing(request)
        if bad_pacing is not None:
            yield pb.RunEvent(error=bad_pacing)
            return
        if not self._busy.acquire(timeout=BUSY_WAIT_S):
            yield pb.RunEvent(error=_error("user", "agent busy with another request"))
            return
        try:
            yield from self._run(request, context)
        finally:
            # Cancelled mid-run (the coordinator left or gave up): stop the load processes
            # so the next request finds them idle. Harmless after a finished run.
            for p in self.processes:
                p.stop.set()
            self._busy.release()

    def _run(self, request: pb.RunRequest, context: grpc.ServicerContext) -> Iterator[pb.RunEvent]:
        if not self.processes:
            yield pb.RunEvent(error=_error("user", "prepare must come before run"))
            return
        n = len(self.processes)
        shares = [request.threads // n + (1 if i < request.threads % n else 0) for i in range(n)]
        log_dir = self._log_dir(request.experiment_id)
        for proc, threads in zip(self.processes, shares, strict=True):
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
                    target_rate=_rate_share(request.target_rate, threads, request.threads),
                    arrivals=request.arrivals or "poisson",
                )
            )
        children = [psutil.Process(p.process.pid) for p in self.processes]
        cpu_last = sum(_cpu(c) for c in children)
        t0 = last_tick = time.monotonic()
        hard_deadline = t0 + request.duration_seconds + RUN_GRACE_S
        replies: dict[int, Answer] = {}
        deltas: list[bytes] = []
        while len(replies) < n:
            pending = {p.conn: i for i, p in enumerate(self.processes) if i not in replies}
            wait_any(
                list(pending), timeout=max(0.0, last_tick + PROGRESS_EVERY_S - time.monotonic())
            )
            for i in pending.values():
                proc = self.processes[i]
                answer = proc.poll_reply(deltas)
                if answer is not None:
                    replies[i] = answer
                elif not proc.process.is_alive():
                    replies[i] = proc._died()
            now = time.monotonic()
            if not context.is_active() or now > hard_deadline:
                for p in self.processes:
                    p.stop.set()
            if now - last_tick >= PROGRESS_EVERY_S and len(replies) < n:
                cpu_now = sum(_cpu(c) for c in children)
                yield pb.RunEvent(
                    progress=pb.Progress(
                        elapsed_seconds=now - t0,
                        actions=sum(p.counters[ACTIONS] for p in self.processes),
                        errors=sum(p.counters[ERRORS] for p in self.processes),
                        sessions=sum(p.counters[SESSIONS] for p in self.processes),
                        cpu_percent=100.0 * (cpu_now - cpu_last) / (now - last_tick),
                        response_hist_delta=_merge_deltas(deltas),
                        client_lag_ms=_take_lag(self.processes),
                    )
                )
                deltas.clear()
                cpu_last, last_tick = cpu_now, now
        if self._stopper.is_set():  # the agent is shutting down: what ran is not the experiment
            yield pb.RunEvent(error=_error("system", "the agent is stopping: run cut short"))
            return
        failed = _first_error([replies[i] for i in range(n)])
        if failed is not None:
            yield pb.RunEvent(error=failed)
            return
        if deltas:  # what ended since the last progress, so the deltas add up to the run
            yield pb.RunEvent(
                progress=pb.Progress(
                    elapsed_seconds=time.monotonic() - t0,
                    actions=sum(p.counters[ACTIONS] for p in self.processes),
                    errors=sum(p.counters[ERRORS] for p in self.processes),
                    sessions=sum(p.counters[SESSIONS] for p in self.processes),
                    response_hist_delta=_merge_deltas(deltas),
                )
            )
        summaries = [_result(replies[i], RunSummary) for i in range(n)]
        yield pb.RunEvent(result=_merge_runs(summaries, log_dir))

    def Validate(
        self, request: pb.ValidateRequest, context: grpc.ServicerContext
    ) -> pb.ValidateReply:
        try:
            log_dir = self._log_dir(request.experiment_id)
        except UserError as exc:
            return pb.ValidateReply(error=_error("user", str(exc), "experiment_id"))
        with self._busy:
            if not self.processes:
                return pb.ValidateReply(
                    error=_error("user", "nothing to validate: no experiment ran")
                )
            answers = self._all(
                [ValidateCommand(str(log_dir))] * len(self.processes),
                VALIDATE_TIMEOUT_S,
                _abandoned(context),
            )
        failed = _first_error(answers)
        if failed is not None:
            return pb.ValidateReply(error=failed)
        return _merge_validations([_result(a, ValidateSummary) for a in answers])

    def Shutdown(
        self, request: pb.ShutdownRequest, context: grpc.ServicerContext
    ) -> pb.ShutdownReply:
        self._stopper.set()
        return pb.ShutdownReply()


def _check_pacing(request: pb.RunRequest) -> pb.Error | None:
    rate, arrivals = request.target_rate, request.arrivals
    if not (math.isfinite(rate) and rate >= 0):
        return _error(
            "user",
            f"target_rate {rate!r} is not a finite rate >= 0 (0: closed loop)",
            "target_rate",
        )
    if arrivals and arrivals not in ARRIVALS:
        return _error(
            "user", f"arrivals {arrivals!r} is not one of {', '.join(ARRIVALS)}", "arrivals"
        )
    return None


def _rate_share(rate: float, threads: int, total: int) -> float:
    """A load process's share of the agent's arrival rate: in proportion to its threads."""
    return rate * threads / total if total else 0.0


def _abandoned(context: grpc.ServicerContext) -> Abandoned:
    return lambda: not context.is_active()


def _error_of(info: ErrorInfo) -> pb.Error:
    return _error(info.kind, info.message)


def _first_error(answers: list[Answer]) -> pb.Error | None:
    for a in answers:
        if a.error is not None:
            return _error_of(a.error)
    return None


def _result(answer: Answer, kind: type[T]) -> T:
    if not isinstance(answer.result, kind):
        raise TypeError(
            f"a load process answered {type(answer.result).__name__}, not {kind.__name__}"
        )
    return answer.result


def _take_lag(processes: list[LoadProcess]) -> float:
    """The worst client lag of the load processes since the last progress; reset."""
    worst = 0
    for p in processes:
        worst = max(worst, p.counters[LAG_US])
        p.counters[LAG_US] = 0
    return worst / 1000


def _sum_reads(parts: list[dict[str, ReadCounts]]) -> list[pb.ReadCount]:
    total: dict[str, pb.ReadCount] = {}
    for part in parts:
        for name, counts in part.items():
            row = total.setdefault(name, pb.ReadCount(name=name))
            row.reads += counts.reads
            row.unpredictable += counts.unpredictable
    return list(total.values())


def _payloads(payloads: list[str]) -> str:
    """The fragments' workload payloads as one JSON array, in fragment order ("" if none):
    the agent carries them and knows nothing of what they say."""
    if not any(payloads):
        return ""
    return json.dumps([_json_or_text(p) for p in payloads])


def _json_or_text(payload: str) -> Any:
    if not payload:
        return None
    try:
        return json.loads(payload)
    except ValueError:
        return payload


def _merge_deltas(deltas: list[bytes]) -> bytes:
    if not deltas:
        return b""
    merged = HdrHistogram.decode(deltas[0])
    for d in deltas[1:]:
        merged.add(HdrHistogram.decode(d))
    return merged.encode()  # type: ignore[no-any-return]


def _merge_hists(parts: list[bytes]) -> bytes:
    """Like _merge_deltas, but an empty histogram rather than nothing."""
    present = [p for p in parts if p]
    if present:
        return _merge_deltas(present)
    empty: bytes = new_histogram().encode()
    return empty


def _cpu(process: psutil.Process) -> float:
    try:
        t = process.cpu_times()
        return float(t.user + t.system)
    except psutil.Error:
        return 0.0


def _merge_runs(results: list[RunSummary], log_dir: Path) -> pb.RunResult:
    per_action: dict[str, pb.ActionStats] = {}
    hists: dict[str, tuple[list[bytes], list[bytes]]] = {}
    for r in results:
        for name, s in r.per_action.items():
            stats = per_action.setdefault(name, pb.ActionStats(action=name))
            stats.count += s.count
            stats.errors += s.errors
            resp, serv = hists.setdefault(name, ([], []))
            resp.append(s.response_hist)
            serv.append(s.service_hist)
    for name, (resp, serv) in hists.items():
        per_action[name].response_hist = _merge_hists(resp)
        per_action[name].service_hist = _merge_hists(serv)
    start_states = sorted({r.start_state for r in results})
    return pb.RunResult(
        elapsed_seconds=max(r.elapsed for r in results),
        actions=sum(r.actions for r in results),
        sessions=sum(r.sessions for r in results),
        errors=sum(r.errors for r in results),
        per_action=list(per_action.values()),
        error_counts=[
            pb.ErrorCount(action=e.action, type=e.type, count=e.count, sample=e.sample)
            for r in results
            for e in r.error_counts
        ],
        cpu_seconds=sum(r.cpu_seconds for r in results),
        load_processes=len(results),
        engine_saturated=any(r.saturated for r in results if r.threads),
        embedded_store=all(r.embedded for r in results),
        log_records=sum(r.log_records for r in results),
        log_dir=str(log_dir),
        state_uncertain=any(r.state_uncertain for r in results),
        aborted="; ".join(r.aborted for r in results if r.aborted),
        threads=sum(r.threads for r in results),
        session_hist=_merge_hists([r.session_hist for r in results]),
        store_counters=sum_counts([r.store_counters for r in results]),
        per_unit=sum_counts([r.per_unit for r in results]),
        workload_payload=_payloads([r.workload_payload for r in results]),
        client_delay_hist=_merge_deltas(
            [r.client_delay_hist for r in results if r.client_delay_hist]
        ),
        loop_lag_max_ms=max(r.loop_lag_max_ms for r in results),
        concurrency=results[0].concurrency,
        start_state="; ".join(start_states),
    )


def _merge_validations(results: list[ValidateSummary]) -> pb.ValidateReply:
    examples = [e for r in results for e in r.examples]
    return pb.ValidateReply(
        lag_hist=_merge_hists([r.lag_hist for r in results]),
        never_valid=sum(r.never_valid for r in results),
        reads=sum(r.reads for r in results),
        unpredictable_reads=sum(r.unpredictable_reads for r in results),
        sessions=sum(r.sessions for r in results),
        unpredictable_sessions=sum(r.unpredictable_sessions for r in results),
        writes=sum(r.writes for r in results),
        log_records=sum(r.log_records for r in results),
        seconds=max(r.seconds for r in results),
        by_item=_sum_reads([r.by_item for r in results]),
        by_action=_sum_reads([r.by_action for r in results]),
        examples_json=json.dumps(examples) if examples else "",
        workload_payload=_payloads([r.workload_payload for r in results]),
    )


def _watch_parent(parent: int, stopper: threading.Event) -> None:
    """A local agent ends when the coordinator that spawned it is gone (even killed -9)."""
    while not stopper.wait(1.0):
        if os.getppid() != parent:
            stopper.set()


def _exit_now() -> None:
    log.error("shutdown took over %.0f s: exiting with calls still running", EXIT_DEADLINE_S)
    logging.shutdown()
    os._exit(1)


def _shutdown(service: AgentService, server: grpc.Server) -> None:
    """Bounded whatever the agent is doing: the server stops taking calls and cancels those in
    flight while the load processes are stopped together (killed if they linger); a watchdog
    ends the process if anything still holds it past EXIT_DEADLINE_S."""
    started = time.monotonic()
    watchdog = threading.Timer(EXIT_DEADLINE_S, _exit_now)
    watchdog.daemon = True
    watchdog.start()
    service._stopper.set()  # a run cut short ends with an error, never as a result
    stopped = server.stop(grace=SERVER_GRACE_S)
    stop_all(list(service.processes), SHUTDOWN_GRACE_S)
    stopped.wait(max(0.1, SERVER_GRACE_S + 1.0 - (time.monotonic() - started)))
    log.info("stopped in %.2f s", time.monotonic() - started)


def serve(
    listen: str,
    work_dir: Path,
    processes: int,
    parent_pid: int = 0,
    token: str | None = None,
    tls: tuple[Path, Path, Path | None] | None = None,
    allow_store_paths: bool = False,
) -> None:
    logging.basicConfig(
        level=logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s bgbench agent: %(message)s",
    )
    stopper = threading.Event()
    if parent_pid:
        threading.Thread(target=_watch_parent, args=(parent_pid, stopper), daemon=True).start()
    service = AgentService(work_dir, stopper, processes, allow_store_paths)
    interceptors: list[grpc.ServerInterceptor] = [TokenInterceptor(token)] if token else []
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8), interceptors=interceptors)
    pb_grpc.add_WorkerServicer_to_server(service, server)
    try:
        credentials = server_credentials(*tls) if tls else None
    except OSError as exc:
        raise UserError(f"cannot read {exc.filename}: {exc.strerror}") from None
    try:
        if credentials is not None:
            port = server.add_secure_port(listen, credentials)
        else:
            port = server.add_insecure_port(listen)
    except RuntimeError:
        port = 0
    if port == 0:
        raise UserError(f"cannot listen on {listen}: the address is taken or not this host's")
    # The handler only flips a flag: taking the event's lock inside a signal handler could
    # deadlock against the main thread holding it.
    signalled: list[int] = []
    signal.signal(signal.SIGTERM, lambda signum, _frame: signalled.append(signum))
    server.start()
    host = listen.rsplit(":", 1)[0]
    print(f"{READY_LINE}{host}:{port}", flush=True)
    try:
        while not signalled and not stopper.wait(0.2):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        log.info("stopping (%s)", "SIGTERM" if signalled else "asked to")
        _shutdown(service, server)


def main(
    listen: Annotated[
        str, typer.Option(envvar="BGBENCH_AGENT_LISTEN", help="host:port (port 0: any)")
    ] = "127.0.0.1:0",
    work_dir: Annotated[
        Path, typer.Option(envvar="BGBENCH_AGENT_WORK_DIR", help="where logs are written")
    ] = Path("bgbench-agent"),
    processes: Annotated[
        str,
        typer.Option(
            envvar="BGBENCH_AGENT_PROCESSES",
            help="load processes, one fragment each: 1 to 256, or auto (one per core)",
        ),
    ] = "1",
    token: Annotated[
        str | None, typer.Option(envvar="BGBENCH_TOKEN", help="shared token every call must carry")
    ] = None,
    tls_cert: Annotated[
        Path | None, typer.Option(envvar="BGBENCH_TLS_CERT", help="server certificate (PEM)")
    ] = None,
    tls_key: Annotated[
        Path | None, typer.Option(envvar="BGBENCH_TLS_KEY", help="server private key (PEM)")
    ] = None,
    tls_client_ca: Annotated[
        Path | None,
        typer.Option(
            envvar="BGBENCH_TLS_CLIENT_CA", help="require client certificates from this CA"
        ),
    ] = None,
    allow_store_paths: Annotated[
        bool,
        typer.Option(
            ALLOW_STORE_PATHS_FLAG,
            envvar="BGBENCH_AGENT_ALLOW_STORE_PATHS",
            help="let store options name files anywhere (relative ones against the current "
            "directory); without it they stay inside --work-dir",
        ),
    ] = False,
    parent_pid: Annotated[int, typer.Option(help="exit when this parent process is gone")] = 0,
) -> None:
    """Run a bgbench worker agent."""
    # Every refusal names the flag, never the token's value.
    if not is_loopback(listen):
        if not token:
            raise UserError(
                f"refusing to listen on {listen} without --token: anyone who reaches it could "
                "drive load; pass --token (or $BGBENCH_TOKEN), or listen on 127.0.0.1"
            )
        if len(token) < MIN_TOKEN_CHARS:
            raise UserError(
                f"refusing to listen on {listen} with a --token shorter than {MIN_TOKEN_CHARS} "
                "characters: use a long random one (openssl rand -hex 32)"
            )
    if (tls_cert is None) != (tls_key is None) or (tls_client_ca and not tls_cert):
        raise UserError("--tls-cert and --tls-key go together (and --tls-client-ca needs them)")
    for flag, path in (
        ("--tls-cert", tls_cert),
        ("--tls-key", tls_key),
        ("--tls-client-ca", tls_client_ca),
    ):
        if path is not None and not path.is_file():
            raise UserError(f"{flag}: {path} does not exist")
    try:
        work_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"--work-dir: cannot create {work_dir}: {exc.strerror}") from None
    _check_listen(listen)
    tls = (tls_cert, tls_key, tls_client_ca) if tls_cert and tls_key else None
    count = _processes(processes)
    serve(listen, work_dir, count, parent_pid, token, tls, allow_store_paths)


def _processes(value: str) -> int:
    if value == "auto":
        return os.cpu_count() or 1
    try:
        count = int(value)
    except ValueError:
        count = 0
    if not 1 <= count <= 256:
        raise UserError(f"--processes: {value!r} is not 1 to 256 or auto")
    return count


def _check_listen(listen: str) -> None:
    """Refuse an address this host cannot listen on before gRPC tries (it would log its own
    multi-line complaint first)."""
    host, _, port = listen.rpartition(":")
    try:
        infos = socket.getaddrinfo(
            host.strip("[]") or None, int(port), type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
        family, kind, proto, _, address = infos[0]
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gRPC binds
            probe.bind(address)
    except ValueError:
        raise UserError(f"--listen: {listen} is not HOST:PORT with a numeric port") from None
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise UserError(f"--listen: cannot listen on {listen}: {reason}") from None


agent_app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
agent_app.command()(main)


def cli(args: list[str]) -> None:
    """Runs the agent; a refusal is one line on stderr and exit code 2, like every bad input."""
    try:
        code = agent_app(args=args, prog_name="bgbench agent", standalone_mode=False)
    except typer.Abort:
        sys.exit(130)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.TyperException as exc:  # a bad flag or value
        message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
        _refuse(f"{message} (see bgbench agent --help)")
    except UserError as exc:
        _refuse(str(exc))
    if isinstance(code, int) and code:
        sys.exit(code)


def _refuse(message: str) -> None:
    print(f"bgbench agent: error: {' '.join(message.split())}", file=sys.stderr)
    sys.exit(2)


if __name__ == "__main__":
    cli(sys.argv[1:])
