"""The worker agent: a gRPC server that drives load processes, one per fragment.

`python -m bgbench.worker.agent --listen 127.0.0.1:0` prints one line
"BGBENCH-AGENT LISTENING host:port" once it serves, so a parent can find the port.
"""

import contextlib
import json
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
from bgbench.protos import AGENT_READY_LINE as READY_LINE
from bgbench.protos import PROTOCOL_VERSION
from bgbench.protos import worker_pb2 as pb
from bgbench.protos import worker_pb2_grpc as pb_grpc
from bgbench.worker import loadproc
from bgbench.worker.calibration import measure_capacity
from bgbench.worker.security import TokenInterceptor, is_loopback, server_credentials

PROGRESS_EVERY_S = 1.0
PREPARE_TIMEOUT_S = 3600.0
VALIDATE_TIMEOUT_S = 3600.0
RUN_GRACE_S = 60.0
# A request waits this long for the previous one to wind down (a cancelled run stopping).
BUSY_WAIT_S = 30.0


class LoadProcess:
    """One child process serving one fragment."""

    def __init__(self, ctx: mp.context.SpawnContext) -> None:
        self.conn, child_conn = ctx.Pipe()
        self.stop = ctx.Event()
        self.counters = ctx.Array("q", 3, lock=False)
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
            return answer  # type: ignore[no-any-return]
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
                return answer  # type: ignore[no-any-return]

    def _died(self) -> dict:
        self.process.join(1)
        return {
            "ok": False,
            "kind": "system",
            "message": f"load process {self.process.pid} died (exit code {self.process.exitcode})",
        }

    def close(self) -> None:
        if self.process.is_alive():
            with contextlib.suppress(BrokenPipeError, OSError):
                self.request({"op": "exit"}, timeout=5)
            self.process.join(5)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(5)


def _error(kind: str, message: str, field: str = "") -> pb.Error:
    return pb.Error(kind=kind, message=message, field=field)


class AgentService(pb_grpc.WorkerServicer):
    def __init__(self, work_dir: Path, stopper: threading.Event, processes: int) -> None:
        self.work_dir = work_dir
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
        for proc, msg in zip(self.processes, msgs, strict=True):
            proc.send(msg)
        return [proc.reply(timeout) for proc in self.processes]

    def _log_dir(self, experiment_id: str) -> Path:
        return self.work_dir / "experiments" / experiment_id

    def close(self) -> None:
        for proc in self.processes:
            proc.close()
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
            if request.workload != "bg":
                return pb.PrepareReply(
                    error=_error("user", f"unknown workload {request.workload!r}", "workload")
                )
            fragments = list(request.fragments)
            if len(fragments) != self.load_processes:
                return pb.PrepareReply(
                    error=_error(
                        "user",
                        f"got {len(fragments)} fragments for {self.load_processes} load processes",
                    )
                )
            self._ensure_processes(len(fragments))
            self.fragments = fragments
            msgs = [
                {
                    "op": "prepare",
                    "config": request.workload_config_json,
                    "store": request.store,
                    "options": json.loads(request.store_options_json or "{}"),
                    "capacities": list(request.capacities),
                    "fragment": k,
                }
                for k in fragments
            ]
            replies = self._all(msgs, PREPARE_TIMEOUT_S)
            failed = [r for r in replies if not r["ok"]]
            if failed:
                self.close()
                return pb.PrepareReply(error=_error(failed[0]["kind"], failed[0]["message"]))
            return pb.PrepareReply(
                fragments=[
                    pb.FragmentInfo(
                        fragment=r["result"]["fragment"],
                        members=r["result"]["members"],
                        load_seconds=r["result"]["load_seconds"],
                    )
                    for r in replies
                ],
                store_description=replies[0]["result"]["store"],
            )
        finally:
            self._busy.release()

    def Run(self, request, context):
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
            for i in range(3):
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
                    )
                )
                deltas.clear()
                cpu_last, last_tick = cpu_now, now
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
        if not self.processes:
            return pb.ValidateReply(error=_error("user", "nothing to validate: no experiment ran"))
        with self._busy:
            log_dir = self._log_dir(request.experiment_id)
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
        start_state="; ".join(start_states),
    )


def _watch_parent(parent: int, stopper: threading.Event) -> None:
    """A local agent ends when the coordinator that spawned it is gone (even killed -9)."""
    while not stopper.wait(1.0):
        if os.getppid() != parent:
            stopper.set()


def serve(
    listen: str,
    work_dir: Path,
    processes: int,
    parent_pid: int = 0,
    token: str | None = None,
    tls: tuple[Path, Path, Path | None] | None = None,
) -> None:
    stopper = threading.Event()
    if parent_pid:
        threading.Thread(target=_watch_parent, args=(parent_pid, stopper), daemon=True).start()
    service = AgentService(work_dir, stopper, processes)
    interceptors = [TokenInterceptor(token)] if token else []
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8), interceptors=interceptors)
    pb_grpc.add_WorkerServicer_to_server(service, server)
    try:
        if tls:
            port = server.add_secure_port(listen, server_credentials(*tls))
        else:
            port = server.add_insecure_port(listen)
    except RuntimeError:
        port = 0
    if port == 0:
        raise SystemExit(f"bgbench agent: cannot listen on {listen}")
    server.start()
    host = listen.rsplit(":", 1)[0]
    print(f"{READY_LINE}{host}:{port}", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: stopper.set())
    try:
        stopper.wait()
    except KeyboardInterrupt:
        pass
    finally:
        service.close()
        server.stop(grace=1).wait(5)


def main(
    listen: Annotated[
        str, typer.Option(envvar="BGBENCH_AGENT_LISTEN", help="host:port (port 0: any)")
    ] = "127.0.0.1:0",
    work_dir: Annotated[
        Path, typer.Option(envvar="BGBENCH_AGENT_WORK_DIR", help="where logs are written")
    ] = Path("bgbench-agent"),
    processes: Annotated[
        int,
        typer.Option(
            min=1,
            max=256,
            envvar="BGBENCH_AGENT_PROCESSES",
            help="load processes, one fragment each",
        ),
    ] = 1,
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
    parent_pid: Annotated[int, typer.Option(help="exit when this parent process is gone")] = 0,
) -> None:
    """Run a bgbench worker agent."""
    if not token and not is_loopback(listen):
        raise SystemExit(
            f"bgbench agent: refusing to listen on {listen} without --token: anyone who reaches "
            "it could drive load; pass --token (or $BGBENCH_TOKEN), or listen on 127.0.0.1"
        )
    if (tls_cert is None) != (tls_key is None) or (tls_client_ca and not tls_cert):
        raise SystemExit(
            "bgbench agent: --tls-cert and --tls-key go together (and --tls-client-ca needs them)"
        )
    for path in (tls_cert, tls_key, tls_client_ca):
        if path is not None and not path.is_file():
            raise SystemExit(f"bgbench agent: {path} does not exist")
    work_dir.mkdir(parents=True, exist_ok=True)
    tls = (tls_cert, tls_key, tls_client_ca) if tls_cert and tls_key else None
    serve(listen, work_dir, processes, parent_pid, token, tls)


agent_app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
agent_app.command()(main)


def cli(args: list[str]) -> None:
    agent_app(args=args, prog_name="bgbench agent")


if __name__ == "__main__":
    cli(sys.argv[1:])
