"""The worker agent: a gRPC server that drives load processes, one per fragment.

`python -m bgbench.worker.agent --listen 127.0.0.1:0` prints one line
"BGBENCH-AGENT LISTENING host:port" once it serves, so a parent can find the port.
"""

import contextlib
import json
import logging
import multiprocessing as mp
import os
import platform
import signal
import socket
import sys
import threading
import time
import uuid
from concurrent import futures
from multiprocessing.connection import wait as wait_any
from pathlib import Path
from typing import Annotated

import grpc
import psutil
import typer
from hdrh.histogram import HdrHistogram

from bgbench import __version__
from bgbench.errors import UserError
from bgbench.protos import AGENT_READY_LINE as READY_LINE
from bgbench.protos import PROTOCOL_VERSION
from bgbench.protos import worker_pb2 as pb
from bgbench.protos import worker_pb2_grpc as pb_grpc
from bgbench.worker import loadproc
from bgbench.worker.calibration import measure_capacity
from bgbench.worker.security import (
    ALLOW_STORE_PATHS_FLAG,
    MIN_TOKEN_CHARS,
    TokenInterceptor,
    confine_paths,
    experiment_dir,
    is_loopback,
    server_credentials,
)
from bgbench.workloads.bg.store import binding_class

log = logging.getLogger("bgbench.agent")

PROGRESS_EVERY_S = 1.0
PREPARE_TIMEOUT_S = 3600.0
VALIDATE_TIMEOUT_S = 3600.0
RUN_GRACE_S = 60.0
# A request waits this long for the previous one to wind down (a cancelled run stopping).
BUSY_WAIT_S = 30.0
# Stopping: load processes get this long to exit on their own before SIGKILL, ...
CLOSE_GRACE_S = 5.0
SHUTDOWN_GRACE_S = 1.0  # ... less when the agent itself is told to stop (SIGTERM),
SERVER_GRACE_S = 0.5  # in-flight calls this long to end,
EXIT_DEADLINE_S = 3.0  # and past this the process exits whatever is still running (the
# promise is an exit within 5 s of SIGTERM; a busy host delays each step).


class LoadProcess:
    """One child process serving one fragment."""

    def __init__(self, ctx: mp.context.SpawnContext) -> None:
        self.conn, child_conn = ctx.Pipe()
        self.stop = ctx.Event()
        self.counters = ctx.Array("q", loadproc.COUNTERS, lock=False)
        self.seq = 0
        self.process = ctx.Process(
            target=loadproc.serve, args=(child_conn, self.stop, self.counters), daemon=True
        )
        self.process.start()
        child_conn.close()

    def send(self, msg: dict) -> None:
        """Requests are numbered; a reply to an older one (a run that was cancelled before
        its answer was read) is skipped when it turns up."""
        self.seq += 1
        self.conn.send({**msg, "seq": self.seq})

    def poll_reply(self, deltas: list[bytes]) -> dict | None:
        """The answer to the latest request if it has arrived (older ones are dropped);
        latency deltas sent meanwhile go to `deltas`."""
        while self.conn.poll():
            try:
                answer = self.conn.recv()
            except EOFError:
                return self._died()
            if answer.get("seq") != self.seq:
                continue
            if "delta" in answer:
                deltas.append(answer["delta"])
                continue
            return self._noted(answer)
        return None

    def request(self, msg: dict, timeout: float) -> dict:
        self.send(msg)
        return self.reply(timeout)

    def reply(self, timeout: float) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            while not self.conn.poll(0.2):
                if not self.process.is_alive():
                    return self._died()
                if time.monotonic() > deadline:
                    return {
                        "ok": False,
                        "kind": "system",
                        "message": f"no answer in {timeout:.0f} s",
                    }
            try:
                answer = self.conn.recv()
            except EOFError:
                return self._died()
            if answer.get("seq") == self.seq and "delta" not in answer:
                return self._noted(answer)

    def _noted(self, answer: dict) -> dict:
        """A system failure's traceback goes to the agent's log (agent.log for local agents):
        the coordinator only gets the one-line message."""
        if answer.get("trace"):
            log.error(
                "load process %s failed: %s\n%s",
                self.process.pid,
                answer.get("message", ""),
                str(answer["trace"]).rstrip(),
            )
        return answer

    def _died(self) -> dict:
        self.process.join(1)
        message = f"load process {self.process.pid} died (exit code {self.process.exitcode})"
        log.error("%s", message)
        return {"ok": False, "kind": "system", "message": message}

    def close(self) -> None:
        stop_all([self], CLOSE_GRACE_S)


def stop_all(processes: list[LoadProcess], grace: float) -> None:
    """Stop load processes together, whatever they are doing, in about `grace` seconds:
    each is told to stop and exit; whatever is left then is killed."""
    for p in processes:
        p.stop.set()  # a run in progress winds down
        if p.process.is_alive():
            # Sequence -1: a request waiting for its own answer is not handed this one.
            with contextlib.suppress(OSError, ValueError):
                p.conn.send({"op": "exit", "seq": -1})
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


class AgentService(pb_grpc.WorkerServicer):
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

    def _all(self, msgs: list[dict], timeout: float) -> list[dict]:
        try:
            msgs = [self._confined(m) for m in msgs]
        except UserError as exc:  # answered as the load processes would have
            return [{"ok": False, "kind": "user", "message": str(exc)} for _ in self.processes]
        for proc, msg in zip(self.processes, msgs, strict=True):
            proc.send(msg)
        return [proc.reply(timeout) for proc in self.processes]

    def _confined(self, msg: dict) -> dict:
        """A prepare's store options with the files they name kept inside the work dir,
        unless the agent was started with the allowance (local agents are)."""
        if msg.get("op") != "prepare" or self.allow_store_paths:
            return msg
        try:
            cls = binding_class(msg["store"])
        except UserError:
            return msg  # the load process names the unknown store
        fields = cls.Options.model_fields
        declared = getattr(cls, "file_options", ())
        names = {n: fields[n].default if n in fields else None for n in declared}
        if not names:
            return msg
        return {**msg, "options": confine_paths(msg["options"], names, self.work_dir)}

    def _log_dir(self, experiment_id: str) -> Path:
        return experiment_dir(self.work_dir, experiment_id)

    def close(self) -> None:
        stop_all(self.processes, CLOSE_GRACE_S)
        self.processes.clear()

    # -- RPCs --------------------------------------------------------------------
    def Handshake(self, request, context):
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

    def Prepare(self, request, context):
        if not self._busy.acquire(timeout=BUSY_WAIT_S):
            return pb.PrepareReply(error=_error("user", "agent busy with another request"))
        try:
            if request.phase == pb.PREPARE_READY:
                return self._ready(request.start_state)
            if request.workload != "bg":
                return pb.PrepareReply(
                    error=_error("user", f"unknown workload {request.workload!r}", "workload")
                )
            fragments = list(request.fragments)
            if request.phase != pb.PREPARE_SCHEMA and len(fragments) != self.load_processes:
                return pb.PrepareReply(
                    error=_error(
                        "user",
                        f"got {len(fragments)} fragments for {self.load_processes} load processes",
                    )
                )
            self._ensure_processes(self.load_processes)
            base = {
                "op": "prepare",
                "config": request.workload_config_json,
                "store": request.store,
                "options": json.loads(request.store_options_json or "{}"),
                "capacities": list(request.capacities),
            }
            if request.phase in (pb.PREPARE_SCHEMA, pb.PREPARE_SCHEMA_AND_LOAD):
                made = self._create_schema({**base, "phase": "schema"})
                if not made["ok"]:
                    self.close()
                    return pb.PrepareReply(error=_error(made["kind"], made["message"]))
                if request.phase == pb.PREPARE_SCHEMA:
                    return pb.PrepareReply(store_description=made["result"]["store"])
            self.fragments = fragments
            msgs = [{**base, "phase": "load", "fragment": k} for k in fragments]
            replies = self._all(msgs, PREPARE_TIMEOUT_S)
            failed = [r for r in replies if not r["ok"]]
            if failed:
                self.close()
                return pb.PrepareReply(error=_error(failed[0]["kind"], failed[0]["message"]))
            return pb.PrepareReply(
                fragments=_fragment_infos(replies),
                store_description=replies[0]["result"]["store"],
            )
        finally:
            self._busy.release()

    def _ready(self, start_state: str) -> pb.PrepareReply:
        """Every fragment's state made exact before the run (a reload, say), all at once."""
        if not self.processes:
            return pb.PrepareReply(error=_error("user", "prepare must come before ready"))
        msg = {"op": "ready", "start_state": start_state or "carry"}
        replies = self._all([msg] * len(self.processes), PREPARE_TIMEOUT_S)
        failed = [r for r in replies if not r["ok"]]
        if failed:
            return pb.PrepareReply(error=_error(failed[0]["kind"], failed[0]["message"]))
        return pb.PrepareReply(fragments=_fragment_infos(replies))

    def _create_schema(self, msg: dict) -> dict:
        """The first load process alone creates the schema; the others stay idle meanwhile:
        DDL must never run beside a load."""
        try:
            msg = self._confined(msg)
        except UserError as exc:  # answered as the load process would have
            return {"ok": False, "kind": "user", "message": str(exc)}
        return self.processes[0].request(msg, PREPARE_TIMEOUT_S)

    def Run(self, request, context):
        try:
            self._log_dir(request.experiment_id)
        except UserError as exc:
            yield pb.RunEvent(error=_error("user", str(exc), "experiment_id"))
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

    def _run(self, request, context):
        if not self.processes:
            yield pb.RunEvent(error=_error("user", "prepare must come before run"))
            return
        n = len(self.processes)
        shares = [request.threads // n + (1 if i < request.threads % n else 0) for i in range(n)]
        log_dir = self._log_dir(request.experiment_id)
        for proc, threads in zip(self.processes, shares, strict=True):
            proc.stop.clear()
            for i in range(loadproc.COUNTERS):
                proc.counters[i] = 0
            proc.send(
                {
                    "op": "run",
                    "experiment_id": request.experiment_id,
                    "threads": threads,
                    "duration": request.duration_seconds,
                    "operations": request.operation_count,
                    "seed": request.seed,
                    "log_dir": str(log_dir),
                    "start_state": request.start_state,
                }
            )
        children = [psutil.Process(p.process.pid) for p in self.processes]
        cpu_last = sum(_cpu(c) for c in children)
        t0 = last_tick = time.monotonic()
        hard_deadline = t0 + request.duration_seconds + RUN_GRACE_S
        replies: dict[int, dict] = {}
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
                        actions=sum(p.counters[loadproc.ACTIONS] for p in self.processes),
                        errors=sum(p.counters[loadproc.ERRORS] for p in self.processes),
                        sessions=sum(p.counters[loadproc.SESSIONS] for p in self.processes),
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
        failed = [r for r in replies.values() if not r["ok"]]
        if failed:
            yield pb.RunEvent(error=_error(failed[0]["kind"], failed[0]["message"]))
            return
        if deltas:  # what ended since the last progress, so the deltas add up to the run
            yield pb.RunEvent(
                progress=pb.Progress(
                    elapsed_seconds=time.monotonic() - t0,
                    actions=sum(p.counters[loadproc.ACTIONS] for p in self.processes),
                    errors=sum(p.counters[loadproc.ERRORS] for p in self.processes),
                    sessions=sum(p.counters[loadproc.SESSIONS] for p in self.processes),
                    response_hist_delta=_merge_deltas(deltas),
                )
            )
        yield pb.RunEvent(result=_merge_runs([replies[i]["result"] for i in range(n)], log_dir))

    def Validate(self, request, context):
        try:
            log_dir = self._log_dir(request.experiment_id)
        except UserError as exc:
            return pb.ValidateReply(error=_error("user", str(exc), "experiment_id"))
        if not self.processes:
            return pb.ValidateReply(error=_error("user", "nothing to validate: no experiment ran"))
        with self._busy:
            replies = self._all(
                [{"op": "validate", "log_dir": str(log_dir)}] * len(self.processes),
                VALIDATE_TIMEOUT_S,
            )
        failed = [r for r in replies if not r["ok"]]
        if failed:
            return pb.ValidateReply(error=_error(failed[0]["kind"], failed[0]["message"]))
        results = [r["result"] for r in replies]
        lags = HdrHistogram.decode(results[0]["lag_hist"].encode())
        for r in results[1:]:
            lags.add(HdrHistogram.decode(r["lag_hist"].encode()))
        for r in results:
            del r["lag_hist"]
        return pb.ValidateReply(
            lag_hist=lags.encode(),
            never_valid=sum(r["never_valid"] for r in results),
            reads=sum(r["reads"] for r in results),
            unpredictable_reads=sum(r["unpredictable_reads"] for r in results),
            sessions=sum(r["sessions"] for r in results),
            unpredictable_sessions=sum(r["unpredictable_sessions"] for r in results),
            writes=sum(r["writes"] for r in results),
            log_records=sum(r["log_records"] for r in results),
            seconds=max(r["seconds"] for r in results),
            details_json=json.dumps(results),
        )

    def Shutdown(self, request, context):
        self._stopper.set()
        return pb.ShutdownReply()


def _fragment_infos(replies: list[dict]) -> list[pb.FragmentInfo]:
    return [
        pb.FragmentInfo(
            fragment=r["result"]["fragment"],
            members=r["result"]["members"],
            load_seconds=r["result"]["load_seconds"],
        )
        for r in replies
    ]


def _take_lag(processes: list[LoadProcess]) -> float:
    """The worst client lag of the load processes since the last progress; reset."""
    worst = 0
    for p in processes:
        worst = max(worst, p.counters[loadproc.LAG_US])
        p.counters[loadproc.LAG_US] = 0
    return worst / 1000


def _sum_counters(parts: list[dict[str, int]]) -> dict[str, int]:
    total: dict[str, int] = {}
    for part in parts:
        for k, v in part.items():
            total[k] = total.get(k, 0) + v
    return total


def _merge_deltas(deltas: list[bytes]) -> bytes:
    if not deltas:
        return b""
    merged = HdrHistogram.decode(deltas[0])
    for d in deltas[1:]:
        merged.add(HdrHistogram.decode(d))
    return merged.encode()  # type: ignore[no-any-return]


def _cpu(process: psutil.Process) -> float:
    try:
        t = process.cpu_times()
        return t.user + t.system
    except psutil.Error:
        return 0.0


def _merge_runs(results: list[dict], log_dir: Path) -> pb.RunResult:
    per_action: dict[str, pb.ActionStats] = {}
    hists: dict[str, tuple[HdrHistogram, HdrHistogram]] = {}
    for r in results:
        for name, s in r["per_action"].items():
            stats = per_action.setdefault(name, pb.ActionStats(action=name))
            stats.count += s["count"]
            stats.errors += s["errors"]
            resp = HdrHistogram.decode(s["response"].encode())
            serv = HdrHistogram.decode(s["service"].encode())
            if name in hists:
                hists[name][0].add(resp)
                hists[name][1].add(serv)
            else:
                hists[name] = (resp, serv)
    for name, (resp, serv) in hists.items():
        per_action[name].response_hist = resp.encode()
        per_action[name].service_hist = serv.encode()
    embedded = all(r["embedded"] for r in results)
    sessions_hist = HdrHistogram.decode(results[0]["session_hist"].encode())
    for r in results[1:]:
        sessions_hist.add(HdrHistogram.decode(r["session_hist"].encode()))
    start_states = sorted({r["start_state"] for r in results})
    return pb.RunResult(
        elapsed_seconds=max(r["elapsed"] for r in results),
        actions=sum(r["actions"] for r in results),
        sessions=sum(r["sessions"] for r in results),
        errors=sum(r["errors"] for r in results),
        per_action=list(per_action.values()),
        error_counts=[pb.ErrorCount(**e) for r in results for e in r["error_counts"]],
        cpu_seconds=sum(r["cpu_seconds"] for r in results),
        load_processes=len(results),
        engine_saturated=any(r["saturated"] for r in results if r["threads"]),
        embedded_store=embedded,
        log_records=sum(r["log_records"] for r in results),
        log_dir=str(log_dir),
        state_uncertain=any(r["state_uncertain"] for r in results),
        aborted="; ".join(r["aborted"] for r in results if r["aborted"]),
        threads=sum(r["threads"] for r in results),
        session_hist=sessions_hist.encode(),
        store_counters_json=json.dumps(_sum_counters([r["store_counters"] for r in results])),
        client_delay_hist=_merge_deltas(
            [r["client_delay_hist"].encode() for r in results if r["client_delay_hist"]]
        ),
        loop_lag_max_ms=max(r["loop_lag_max_ms"] for r in results),
        concurrency=results[0]["concurrency"],
        start_state="; ".join(start_states),
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
    interceptors = [TokenInterceptor(token)] if token else []
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
