"""The worker agent's entry point: `bgbench agent`, or `python -m bgbench.worker.agent`.

`python -m bgbench.worker.agent --listen 127.0.0.1:0` prints one line
"BGBENCH-AGENT LISTENING host:port" once it serves, so a parent can find the port.
With --monitor-only it runs no load: it watches its host (a store's) for the coordinator.
The gRPC service is worker/service.py; its load processes, worker/load_processes.py;
a run across them, worker/run_coordination.py; tokens and TLS, worker/security.py.
"""

import logging
import os
import signal
import socket
import sys
import threading
import time
from concurrent import futures
from pathlib import Path
from typing import Annotated

import grpc
import typer

from bgbench.errors import UserError
from bgbench.protos import AGENT_READY_LINE as READY_LINE
from bgbench.protos import worker_pb2_grpc as pb_grpc
from bgbench.worker.load_processes import SHUTDOWN_GRACE_S, stop_all
from bgbench.worker.security import (
    ALLOW_STORE_PATHS_FLAG,
    MIN_TOKEN_CHARS,
    TokenInterceptor,
    is_loopback,
    server_credentials,
)
from bgbench.worker.service import AgentService

log = logging.getLogger("bgbench.agent")

SERVER_GRACE_S = 0.5  # on SIGTERM, in-flight calls get this long to end,
EXIT_DEADLINE_S = 3.0  # and past this the process exits whatever is still running (the
# promise is an exit within 5 s of SIGTERM; a busy host delays each step).
# How soon the main thread sees SIGTERM's flag: a coordinator closing its local agents
# waits for this, at every run's end.
SIGNAL_POLL_S = 0.05


def _watch_parent(parent: int, stopper: threading.Event) -> None:
    """A local agent ends when the coordinator that spawned it is gone (even killed -9)."""
    while not stopper.wait(1.0):
        if os.getppid() != parent:
            stopper.set()


def _warm_up(service: AgentService) -> None:
    try:
        service.warm_up()
    except Exception:  # the call that needs it meets the same error and answers with it
        log.exception("warming up failed")


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
    monitor_only: bool = False,
) -> None:
    logging.basicConfig(
        level=logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s bgbench agent: %(message)s",
    )
    stopper = threading.Event()
    if parent_pid:
        threading.Thread(target=_watch_parent, args=(parent_pid, stopper), daemon=True).start()
    service = AgentService(work_dir, stopper, processes, allow_store_paths, monitor_only)
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
    threading.Thread(target=_warm_up, args=(service,), name="warm-up", daemon=True).start()
    try:
        while not signalled and not stopper.wait(SIGNAL_POLL_S):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        log.info("stopping (%s)", "SIGTERM" if signalled else "asked to")
        _shutdown(service, server)
    _exit_stopped()


def _exit_stopped() -> None:
    """Everything this agent started has stopped: end the process without the interpreter's
    teardown (gRPC's and its thread pool's, a second or more on a busy host), which a
    coordinator closing its local agents would wait for."""
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


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
    monitor_only: Annotated[
        bool,
        typer.Option(
            "--monitor-only",
            envvar="BGBENCH_AGENT_MONITOR_ONLY",
            help="run no load: only watch this host (CPU, memory, disk, network) and the "
            "store's processes on it, for a coordinator that lists this agent under "
            "resources.monitors; it refuses prepare and run, and starts no load processes "
            "(--processes is ignored)",
        ),
    ] = False,
    parent_pid: Annotated[int, typer.Option(help="exit when this parent process is gone")] = 0,
) -> None:
    """Run a bgbench worker agent: load processes driven by a coordinator, or with
    --monitor-only a watcher of a store's host."""
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
    serve(listen, work_dir, count, parent_pid, token, tls, allow_store_paths, monitor_only)


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
    # Run as bgbench.worker.agent rather than __main__, so that every reference to this
    # module (the warm-up thread's, a traceback's, a test's look into sys.modules) names
    # the one that serves.
    from bgbench.worker.agent import cli as agent_cli

    agent_cli(sys.argv[1:])
