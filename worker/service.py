"""The agent's gRPC service: the Worker RPCs, each answered by its load processes.

Handshake and Status answer at once; Prepare, Run and Validate take the agent for their
duration (one at a time) and hand the work to the load processes (worker/
load_processes.py); a run is coordinated by worker/run_coordination.py. Watch samples the
host beside whatever else runs (worker/host_watch.py); a monitor-only agent serves it, and
refuses the load's calls.
"""

import dataclasses
import importlib
import json
import multiprocessing as mp
import os
import platform
import socket
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import psutil

from bgbench import __version__, extras
from bgbench.errors import UserError
from bgbench.protos import PROTOCOL_VERSION
from bgbench.protos import worker_pb2 as pb
from bgbench.protos import worker_pb2_grpc as pb_grpc
from bgbench.worker.contracts import (
    Answer,
    Command,
    ErrorInfo,
    PrepareCommand,
    PreparePhase,
    PrepareResult,
    ReadyCommand,
    ReadyResult,
    ValidateCommand,
    ValidateSummary,
)
from bgbench.worker.load_processes import (
    CLOSE_GRACE_S,
    SHUTDOWN_GRACE_S,
    Abandoned,
    LoadProcess,
    stop_all,
)
from bgbench.worker.replies import error as _error
from bgbench.worker.replies import error_of as _error_of
from bgbench.worker.replies import first_error as _first_error
from bgbench.worker.replies import result_of as _result
from bgbench.worker.security import confine_paths, experiment_dir
from bgbench.worker.validation_reply import RunOrigins, merge_validations

# A run's, a watch's and the bindings' modules (the load engine, the SDK, numpy, pydantic)
# are imported by the calls that use them, or by warm_up once the agent serves: the agent
# answers its handshake within a second of being spawned.
WARM_UP = (
    "bgbench.worker.run_coordination",
    "bgbench.worker.host_watch",
    "bgbench.worker.calibration",
    "bgbench.workloads.registry",
)

PREPARE_TIMEOUT_S = VALIDATE_TIMEOUT_S = 3600.0
# A request waits this long for the previous one to wind down (a cancelled run stopping).
BUSY_WAIT_S = 30.0
# Watch calls at once: each holds one of the server's threads for its duration.
MAX_WATCHES = 4
MONITOR_ONLY = (
    "this agent is monitor-only (started with --monitor-only): it watches its host and runs "
    "no load; list it under resources.monitors, and start load agents without the flag"
)


class AgentService(pb_grpc.WorkerServicer):  # type: ignore[misc]
    def __init__(
        self,
        work_dir: Path,
        stopper: threading.Event,
        processes: int,
        allow_store_paths: bool = False,
        monitor_only: bool = False,
    ) -> None:
        self.work_dir = work_dir
        self.allow_store_paths = allow_store_paths
        self.monitor_only = monitor_only
        self.load_processes = 0 if monitor_only else processes
        self._watches = threading.BoundedSemaphore(MAX_WATCHES)
        self.agent_id = uuid.uuid4().hex[:12]
        self.processes: list[LoadProcess] = []
        self.fragments: list[int] = []
        self._ctx = mp.get_context("spawn")
        self._busy = threading.Lock()
        self._stopper = stopper
        self._origins = RunOrigins()  # each run's start, for Validate's phases

    def warm_up(self) -> None:
        """Once the agent serves (called on a thread of its own): start the load processes
        (each imports the load engine in its own interpreter) and import what the load's
        calls need, so the coordinator's handshake and sizing overlap that start-up
        rather than wait for it. A Prepare that comes first waits for the processes here
        (its lock), as it would have for those it starts itself."""
        # The processes first: their interpreters start and import the load engine on the
        # other cores while this one imports the modules below.
        if self.load_processes and self._busy.acquire(timeout=BUSY_WAIT_S):
            try:
                if not self.processes and not self._stopper.is_set():
                    self._ensure_processes(self.load_processes)
            finally:
                self._busy.release()
        for name in WARM_UP:
            importlib.import_module(name)

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
        from bgbench.workloads import registry

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
            monitor_only=self.monitor_only,
        )
        if request.measure_capacity and not self.monitor_only:
            from bgbench.worker.calibration import measure_capacity

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
        if self.monitor_only:
            return pb.PrepareReply(error=_error("user", MONITOR_ONLY))
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
        missing = extras.store_problem(request.store, "on this agent")
        if missing:  # the coordinator names this agent's address before it
            return pb.PrepareReply(error=_error("user", missing, "store.name"))
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
        if self.monitor_only:
            yield pb.RunEvent(error=_error("user", MONITOR_ONLY))
            return
        try:
            self._log_dir(request.experiment_id)
        except UserError as exc:
            yield pb.RunEvent(error=_error("user", str(exc), "experiment_id"))
            return
        from bgbench.worker import run_coordination

        bad_request = run_coordination.check_request(request)
        if bad_request is not None:
            yield pb.RunEvent(error=bad_request)
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
        from bgbench.worker import run_coordination

        log_dir = self._log_dir(request.experiment_id) if self.processes else Path()
        yield from run_coordination.run_events(
            self.processes,
            request,
            log_dir,
            context.is_active,
            self._stopper,
            lambda origin_ns: self._origins.note(request.experiment_id, origin_ns),
        )

    def Validate(
        self, request: pb.ValidateRequest, context: grpc.ServicerContext
    ) -> pb.ValidateReply:
        if self.monitor_only:
            return pb.ValidateReply(error=_error("user", MONITOR_ONLY))
        try:
            log_dir = self._log_dir(request.experiment_id)
        except UserError as exc:
            return pb.ValidateReply(error=_error("user", str(exc), "experiment_id"))
        with self._busy:
            if not self.processes:
                return pb.ValidateReply(
                    error=_error("user", "nothing to validate: no experiment ran")
                )
            clock = self._origins.clock(request)
            if isinstance(clock, pb.Error):
                return pb.ValidateReply(error=clock)
            answers = self._all(
                [ValidateCommand(str(log_dir), clock)] * len(self.processes),
                VALIDATE_TIMEOUT_S,
                _abandoned(context),
            )
        failed = _first_error(answers)
        if failed is not None:
            return pb.ValidateReply(error=failed)
        return merge_validations([_result(a, ValidateSummary) for a in answers])

    def Watch(
        self, request: pb.WatchRequest, context: grpc.ServicerContext
    ) -> Iterator[pb.HostSample]:
        """A sample of the host every progress interval until the duration (and a grace)
        ends or the caller leaves. A bad request ends the call as INVALID_ARGUMENT, one
        line; too many watches at once, as RESOURCE_EXHAUSTED."""
        from bgbench.worker import host_watch

        bad = host_watch.check_watch_request(request)
        if bad is not None:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, bad.message)
        if not self._watches.acquire(blocking=False):
            context.abort(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"{MAX_WATCHES} watches already in progress on this agent",
            )
        try:
            yield from host_watch.watch_samples(request, context.is_active, self._stopper)
        finally:
            self._watches.release()

    def Shutdown(
        self, request: pb.ShutdownRequest, context: grpc.ServicerContext
    ) -> pb.ShutdownReply:
        self._stopper.set()
        return pb.ShutdownReply()


def _abandoned(context: grpc.ServicerContext) -> Abandoned:
    return lambda: not context.is_active()
