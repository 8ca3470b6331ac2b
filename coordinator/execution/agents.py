"""Reaching worker agents: spawning local ones, and a client with a deadline on every call."""

import contextlib
import math
import os
import re
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import psutil

from bgbench.coordinator.execution import agent_checks as checks
from bgbench.coordinator.execution.host_checks import check_host_sample
from bgbench.coordinator.records.faults import Liveness, LivenessFault
from bgbench.errors import SystemFault, UserError
from bgbench.protos import AGENT_READY_LINE as READY_LINE
from bgbench.protos import PROTOCOL_VERSION, bearer
from bgbench.protos import worker_pb2 as pb
from bgbench.protos import worker_pb2_grpc as pb_grpc

HANDSHAKE_TIMEOUT_S = 10.0
PREPARE_TIMEOUT_S = 3600.0
VALIDATE_TIMEOUT_S = 3600.0
RUN_SLACK_S = 120.0  # beyond the duration, for stopping and flushing logs
TLS_PROBE_TIMEOUT_S = 2.0
MAX_WATCH_S = 86_400.0  # a Watch's longest duration (an experiment's)
# agents.heartbeat_timeout's default: 5 s named single slow steps (a schema's DDL, a load
# chunk) as hung loads on a busy two-core host with Cassandra beside it; 15 s does not.
HEARTBEAT_TIMEOUT_S = 15.0
ZOMBIE, STOPPED = psutil.STATUS_ZOMBIE, (psutil.STATUS_STOPPED, psutil.STATUS_TRACING_STOP)
CHILD_GRACE_S = 2.0  # a closed local agent's load processes get this long to end with it
PREPARE_DOING = {
    pb.PREPARE_SCHEMA_AND_LOAD: "loading",
    pb.PREPARE_SCHEMA: "creating the schema",
    pb.PREPARE_LOAD: "loading",
    pb.PREPARE_READY: "readying the fragments",
}
# gRPC codes of a Status call an agent did not answer (any other is an answer: a refusal)
UNANSWERED = (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.UNAVAILABLE)
# How gRPC names a certificate that does not hold the name the coordinator dialled.
HOSTNAME_CHECK_FAILED = "Hostname Verification Check failed"


def _raise(error: pb.Error, address: str) -> None:
    if error.message:
        cls = UserError if error.kind == "user" else SystemFault
        raise cls(f"agent {address}: {error.message}")


@dataclass(frozen=True)
class Credentials:
    """What the coordinator shows agents: the shared token, and TLS material (PEM bytes)."""

    token: str | None = None
    ca: bytes | None = None
    cert: bytes | None = None
    key: bytes | None = None
    server_name: str | None = None
    server_names: Mapping[str, str] = field(default_factory=dict)  # agent_names.py's


class AgentClient:
    """Every unary call is watched: while it runs the agent is asked for its Status about
    every second, so one that froze, died or whose load stopped progressing fails the call
    within `heartbeat_timeout` (faults.Liveness), whatever the call's own deadline."""

    def __init__(
        self,
        address: str,
        credentials: Credentials | None = None,
        heartbeat_timeout: float = HEARTBEAT_TIMEOUT_S,
    ) -> None:
        self.address = address
        self.heartbeat_timeout = heartbeat_timeout
        creds = credentials or Credentials()
        if creds.ca is not None:
            name = creds.server_name or creds.server_names.get(address)  # else the host
            options = [("grpc.ssl_target_name_override", name)] if name else []
            self.channel = grpc.secure_channel(
                address,
                grpc.ssl_channel_credentials(creds.ca, creds.key, creds.cert),
                options=options,
            )
        else:
            self.channel = grpc.insecure_channel(address)
        self.tls = creds.ca is not None
        self.metadata = bearer(creds.token) if creds.token else ()
        self.stub = pb_grpc.WorkerStub(self.channel)
        self.facts: pb.HandshakeReply | None = None
        self._calls: set[Any] = set()  # in flight: grpc futures and run streams
        self._calls_lock = threading.Lock()

    def cancel(self) -> None:
        """End every call in flight (the step failed elsewhere: it is over everywhere)."""
        with self._calls_lock:
            calls = list(self._calls)
        for call in calls:
            call.cancel()

    cancel_run = cancel

    def _track(self, call: Any, on: bool) -> None:
        with self._calls_lock:
            if on:
                self._calls.add(call)
            else:
                self._calls.discard(call)

    def _watched(self, method: Any, request: Any, timeout: float, doing: str) -> Any:
        """`method(request)` with its deadline, failed early by the agent's liveness."""
        call = method.future(request, timeout=timeout, metadata=self.metadata)
        self._track(call, True)
        watch = Liveness(self.address, doing, self.heartbeat_timeout, time.monotonic())
        try:
            while True:
                try:
                    return call.result(timeout=watch.wait(time.monotonic()))
                except grpc.FutureTimeoutError:
                    pass
                problem = self.judge(watch)
                if problem is not None and not call.done():
                    raise LivenessFault(problem)
        except grpc.FutureCancelledError:
            raise SystemFault(f"agent {self.address}: cancelled while {doing}") from None
        except grpc.RpcError as exc:
            raise _fault(self.address, exc, self.tls) from None
        finally:
            call.cancel()  # nothing if it ended; else the agent drops what it was doing
            self._track(call, False)

    def judge(self, watch: Liveness) -> str | None:
        try:
            reply = self.stub.Status(
                pb.StatusRequest(),
                timeout=watch.status_deadline(time.monotonic()),
                metadata=self.metadata,
            )
        except grpc.RpcError as exc:
            if exc.code() in UNANSWERED:
                return watch.unanswered(time.monotonic())
            reply = pb.StatusReply()  # it answered, if only to refuse
        checks.check_status(self.address, reply, self._processes())
        return watch.answered(reply, time.monotonic())

    def _processes(self) -> int:
        """The agent's load processes, as its handshake said (0 before it)."""
        return self.facts.load_processes if self.facts is not None else 0

    def status(self) -> pb.StatusReply:
        try:
            reply = self.stub.Status(
                pb.StatusRequest(), timeout=self.heartbeat_timeout, metadata=self.metadata
            )
        except grpc.RpcError as exc:
            raise _fault(self.address, exc, self.tls) from None
        return reply  # type: ignore[no-any-return]

    def handshake(self, measure_capacity: bool = False, monitor: bool = False) -> pb.HandshakeReply:
        """The agent's facts; a monitor-only agent is refused unless `monitor` (it would
        refuse the load's calls)."""
        request = pb.HandshakeRequest(
            protocol_version=PROTOCOL_VERSION, measure_capacity=measure_capacity
        )
        reply = self._watched(self.stub.Handshake, request, HANDSHAKE_TIMEOUT_S, "handshaking")
        if reply.monitor_only and not monitor and reply.protocol_version == PROTOCOL_VERSION:
            raise UserError(
                f"agent {self.address} is monitor-only (started with --monitor-only): list "
                "it under resources.monitors, not agents"
            )
        checks.check_handshake(self.address, reply, measure_capacity and not monitor)
        _raise(reply.error, self.address)
        self.facts = reply
        return reply  # type: ignore[no-any-return]

    def prepare(self, request: pb.PrepareRequest) -> pb.PrepareReply:
        doing = PREPARE_DOING.get(request.phase, "preparing")
        reply = self._watched(self.stub.Prepare, request, PREPARE_TIMEOUT_S, doing)
        checks.check_prepare(self.address, request, reply)
        _raise(reply.error, self.address)
        return reply  # type: ignore[no-any-return]

    def run(self, request: pb.RunRequest) -> Iterator[pb.RunEvent]:
        """The run's events; its liveness is the caller's (progress comes twice a second)."""
        timeout = request.duration_seconds + RUN_SLACK_S
        stream = self.stub.Run(request, timeout=timeout, metadata=self.metadata)
        self._track(stream, True)
        most = max_events(request.duration_seconds)
        try:
            for seen, event in enumerate(stream):
                if event.HasField("error"):
                    _raise(event.error, self.address)
                elif event.HasField("progress"):
                    checks.check_progress(self.address, event.progress)
                    if event.progress.HasField("host"):
                        check_host_sample(self.address, event.progress.host)
                elif event.HasField("result"):
                    checks.check_result(self.address, event.result, self._processes())
                if seen >= most:
                    raise checks.AgentFault(
                        self.address, "run stream", f"more than {most} events for this run"
                    )
                yield event
        except grpc.RpcError as exc:
            raise _fault(self.address, exc, self.tls) from None
        finally:
            self._track(stream, False)

    def watch(self, request: pb.WatchRequest) -> Iterator[pb.HostSample]:
        """The agent's samples of its host, one per progress interval, until the duration
        ends; `cancel()` (or closing the iterator) ends it early. A refused request is the
        user's (UserError); anything else, a fault."""
        seconds = request.duration_seconds  # the agent refuses one out of bounds
        seconds = min(seconds, MAX_WATCH_S) if math.isfinite(seconds) and seconds > 0 else 0.0
        stream = self.stub.Watch(request, timeout=seconds + RUN_SLACK_S, metadata=self.metadata)
        self._track(stream, True)
        most = max_events(seconds)
        try:
            for seen, sample in enumerate(stream):
                check_host_sample(self.address, sample)
                if seen >= most:
                    raise checks.AgentFault(self.address, "watch", f"more than {most} samples")
                yield sample
        except grpc.RpcError as exc:
            if exc.code() == grpc.StatusCode.INVALID_ARGUMENT:
                raise UserError(f"agent {self.address}: {exc.details()}") from None
            raise _fault(self.address, exc, self.tls) from None
        finally:
            stream.cancel()
            self._track(stream, False)

    def validate(
        self,
        experiment_id: str,
        phase_starts_s: Sequence[float] = (),
        series_bin_s: float = 0.0,
    ) -> pb.ValidateReply:
        """The agent's validation of the experiment's logs; with `phase_starts_s` (offsets
        from this agent's run start, the origin of its progress's elapsed_seconds) or
        `series_bin_s`, its reads per phase and per bin too."""
        request = pb.ValidateRequest(
            experiment_id=experiment_id, phase_starts_s=phase_starts_s, series_bin_s=series_bin_s
        )
        reply = self._watched(self.stub.Validate, request, VALIDATE_TIMEOUT_S, "validating")
        asked = len(phase_starts_s) + 1 if phase_starts_s or series_bin_s else 0
        checks.check_validation(self.address, reply, asked)
        _raise(reply.error, self.address)
        return reply  # type: ignore[no-any-return]

    def close(self) -> None:
        self.channel.close()


def max_events(duration_s: float) -> int:
    """The most events a run's stream may carry: progress twice a second over the run and
    its slack, ten times over (an agent may catch up after a stall), and its result."""
    return int(20 * (duration_s + RUN_SLACK_S)) + 100


def _fault(address: str, exc: grpc.RpcError, tls: bool = False) -> Exception:
    code = exc.code() if hasattr(exc, "code") else None
    if code == grpc.StatusCode.UNAUTHENTICATED:
        return UserError(
            f"agent {address} refused the call ({exc.details()}): set agents.token "
            "(or $BGBENCH_TOKEN) to the agent's token"
        )
    if code == grpc.StatusCode.UNAVAILABLE:
        if tls and HOSTNAME_CHECK_FAILED in f"{exc.details()} {_debug_string(exc)}":
            host = address.rpartition(":")[0]
            return UserError(
                f"TLS: agent {host}'s certificate is not for that name (set "
                "agents.tls.server_name to a name it holds, or issue it one for this address)"
            )
        mismatch = _tls_mismatch(address, exc, tls)
        if mismatch:
            return UserError(
                f"agent {address}: TLS handshake failed: {mismatch} "
                "(check agents.tls.ca_file / the agent's certificate)"
            )
    return SystemFault(f"agent {address}: {_rpc_message(exc)}")


def _tls_mismatch(address: str, exc: grpc.RpcError, tls: bool) -> str | None:
    """What is wrong when a connection failed over TLS settings, else None. gRPC names a
    failed handshake on the coordinator's side; when the agent is the one that gives up (it
    speaks TLS to a plain-text client, or wants a client certificate) the coordinator only
    sees "Socket closed", so the agent is probed once to tell that from a crash."""
    text = f"{exc.details()} {_debug_string(exc)}"
    if "handshake failed" in text.lower():
        if "WRONG_VERSION_NUMBER" in text:
            return "the agent does not speak TLS (it was started without --tls-cert)"
        if "CERTIFICATE_VERIFY_FAILED" in text:
            return "the agent's certificate is not signed by agents.tls.ca_file"
        reason = re.search(r"SSL_ERROR_SSL: (?:error:\w+:SSL routines:\w+:)?([^:]+)", text)
        return reason.group(1).strip() if reason else "see the agent's log"
    if "Socket closed" not in text or "failed to connect" not in text:
        return None
    seen = _probe_tls(address)
    if seen is not None and not tls:
        return "the agent speaks TLS and the coordinator plain text: set agents.tls.ca_file"
    if seen == "closed" and tls:
        return (
            "the agent wants a client certificate signed by its --tls-client-ca: set "
            "agents.tls.cert_file and key_file to one"
        )
    return None


def _debug_string(exc: grpc.RpcError) -> str:
    debug = getattr(exc, "debug_error_string", None)
    return str(debug()) if callable(debug) else ""


def _probe_tls(address: str) -> str | None:
    """The agent's side of TLS: "tls" if it completes a handshake with no client certificate
    and answers, "closed" if it then hangs up, None if it does not speak TLS or is gone."""
    host, _, port = address.rpartition(":")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # a probe: only whether TLS is spoken
    context.set_alpn_protocols(["h2"])
    try:
        with (
            socket.create_connection((host.strip("[]"), int(port)), TLS_PROBE_TIMEOUT_S) as raw,
            context.wrap_socket(raw) as conn,
        ):
            conn.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
            try:
                return "tls" if conn.recv(9) else "closed"
            except (ssl.SSLError, ConnectionError):
                return "closed"
    except (OSError, ValueError):  # ssl.SSLError is an OSError: not TLS
        return None


def _rpc_message(exc: grpc.RpcError) -> str:
    code = exc.code() if hasattr(exc, "code") else None
    details = exc.details() if hasattr(exc, "details") else str(exc)
    if code == grpc.StatusCode.UNAVAILABLE:
        return f"unreachable ({details})"
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return "no answer before the deadline"
    name = code.name if code is not None else "error"
    return f"{name}: {details}"


@dataclass
class LocalAgents:
    """Agent processes spawned on loopback; stopped by PID on close, respawned on request."""

    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    addresses: list[str] = field(default_factory=list)
    load_processes: int = 1
    work_dir: Path = Path(".")
    timeout: float = 60.0
    env: dict[str, str] = field(default_factory=dict)

    def _start(self, i: int) -> subprocess.Popen[bytes]:
        agent_dir = self.work_dir / f"agent-{i}"
        agent_dir.mkdir(parents=True, exist_ok=True)
        log = open(agent_dir / "agent.log", "ab")  # noqa: SIM115 - owned by the child
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "bgbench.worker.agent",
                "--listen",
                "127.0.0.1:0",
                "--work-dir",
                str(agent_dir),
                "--processes",
                str(self.load_processes),
                "--parent-pid",
                str(os.getpid()),
                # The user's own processes: store files go where the user says (relative
                # paths against this directory, so local agents share one SQLite file).
                "--allow-store-paths",
            ],
            stdout=subprocess.PIPE,
            stderr=log,
            env=self.env,
        )

    def respawn_dead(self, silent: frozenset[int] = frozenset()) -> list[int]:
        """Start a fresh agent in place of every one that exited, and of those in `silent`
        (alive, perhaps still exiting, but not answering: they are killed first)."""
        for i in silent:
            p = self.processes[i]
            if p.poll() is None:
                p.kill()
            p.wait(10)
        dead = [i for i, p in enumerate(self.processes) if p.poll() is not None]
        for i in dead:
            self.processes[i] = self._start(i)
        for i in dead:
            self.addresses[i] = _await_ready(
                self.processes[i], self.timeout, self.work_dir / f"agent-{i}"
            )
        return dead

    def close(self) -> None:
        """Stop every agent, then whatever it left behind: a load process stuck in a store
        call that its agent could not end is killed here."""
        children = [c for p in self.processes for c in _descendants(p.pid)]
        for p in self.processes:
            if p.poll() is None:
                if _status(p.pid) in STOPPED:  # SIGTERM would wait for a SIGCONT: kill it now
                    p.kill()
                else:
                    p.terminate()
        for p in self.processes:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(5)
        self.processes.clear()
        for child in _outlasting(children, CHILD_GRACE_S):
            _kill(child)


def _outlasting(processes: list[psutil.Process], timeout: float) -> list[psutil.Process]:
    """Those still running after `timeout` s; one that exited is gone at once, though as a
    zombie it waits for init to reap it (psutil.wait_procs waits for that: lazy inits)."""
    deadline, left = time.monotonic() + timeout, processes
    while (left := [p for p in left if _status(p.pid) != ZOMBIE]) and time.monotonic() < deadline:
        time.sleep(0.02)
    return left


def _descendants(pid: int) -> list[psutil.Process]:
    try:
        return list(psutil.Process(pid).children(recursive=True))
    except psutil.Error:
        return []


def _kill(process: psutil.Process) -> None:
    with contextlib.suppress(psutil.Error):
        process.kill()


def _status(pid: int) -> str:
    try:
        return str(psutil.Process(pid).status())
    except psutil.Error:  # gone: as good as a zombie
        return ZOMBIE


def spawn_local_agents(
    count: int, processes: int, work_dir: Path, timeout: float, token: str | None = None
) -> LocalAgents:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    if token:
        env["BGBENCH_TOKEN"] = token
    else:
        env.pop("BGBENCH_TOKEN", None)
    agents = LocalAgents(load_processes=processes, work_dir=work_dir, timeout=timeout, env=env)
    try:
        agents.processes = [agents._start(i) for i in range(count)]
        for i, proc in enumerate(agents.processes):
            agents.addresses.append(_await_ready(proc, timeout, work_dir / f"agent-{i}"))
    except BaseException:
        agents.close()
        raise
    return agents


def _await_ready(proc: subprocess.Popen[bytes], timeout: float, agent_dir: Path) -> str:
    found: list[str] = []

    def read() -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            line = raw.decode(errors="replace").strip()
            if line.startswith(READY_LINE):
                found.append(line[len(READY_LINE) :])
                return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout)
    if found:
        return found[0]
    code = proc.poll()
    log = (agent_dir / "agent.log").read_text(errors="replace").strip().splitlines()
    last = log[-1] if log else "no output"
    if code is not None:
        raise SystemFault(f"local agent exited with code {code} before serving: {last}")
    raise SystemFault(f"local agent did not start within {timeout:.0f} s (see {agent_dir})")
