"""Process and port helpers shared by the local server starters (standard library only)."""

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

JARS = Path(os.environ.get("BGBENCH_JAR_CACHE", Path.home() / ".cache/bgbench/jars"))


def free_port(*hosts: str) -> int:
    """A port free on 127.0.0.1 and on every other loopback address given."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if all(bindable(h, port) for h in hosts):
            return port
    raise RuntimeError(f"no port free on 127.0.0.1 and {', '.join(hosts)}")


def bindable(host: str, port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind((host, port))
            return True
        except OSError:
            return False


def apt(*packages: str) -> None:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    cmd = ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *packages]
    if subprocess.run(cmd, env=env, capture_output=True).returncode != 0:
        subprocess.run(["apt-get", "update", "-qq"], env=env, check=True, capture_output=True)
        subprocess.run(cmd, env=env, check=True, capture_output=True)


def wait_for(
    check: Callable[[], bool], what: str, timeout: float, alive: Callable[[], bool] | None = None
) -> None:
    """Poll `check` until it holds; fail early when `alive` says the server has exited."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        if alive is not None and not alive():
            raise RuntimeError(f"{what} exited while starting")
        time.sleep(0.1)
    raise RuntimeError(f"{what} not ready after {timeout:.0f} s")


def tcp_answers(port: int, send: bytes, expect: bytes, host: str = "127.0.0.1") -> bool:
    try:
        with socket.create_connection((host, port), timeout=1) as s:
            s.sendall(send)
            return s.recv(256).startswith(expect)
    except OSError:
        return False


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


def fetch_jars(name: str, version: str) -> Path:
    """The jars of bgbench/launchers/jars/NAME/pom.xml (which pins VERSION), fetched from Maven
    Central once and cached under ~/.cache/bgbench/jars (BGBENCH_JAR_CACHE) between runs."""
    pom = Path(__file__).parent / "jars" / name / "pom.xml"
    lib = JARS / f"{name}-{version}"
    if (lib / ".complete").exists():
        return lib
    if shutil.which("java") is None:
        apt("openjdk-17-jre-headless")
    if shutil.which("mvn") is None:
        apt("maven")
    lib.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mvn", "-B", "-q", "-f", str(pom), "dependency:copy-dependencies",
         f"-DoutputDirectory={lib}"],
        capture_output=True, text=True,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"fetching {name} jars failed: {done.stdout[-2000:]}{done.stderr}")
    (lib / ".complete").touch()
    return lib


def java() -> str:
    """JDK 17, which Cassandra 5.0 and HBase 2.6 support (a newer JDK may sit beside it)."""
    for home in sorted(Path("/usr/lib/jvm").glob("*17*")):
        if (home / "bin/java").exists():
            return str(home / "bin/java")
    if shutil.which("java") is None:
        apt("openjdk-17-jre-headless")
    return shutil.which("java") or "java"


def spawn(
    cmd: list[str],
    directory: Path,
    log_name: str,
    env: dict[str, str] | None = None,
    append: bool = False,
) -> int:
    log = open(directory / log_name, "ab" if append else "wb")  # noqa: SIM115 - the child owns it
    proc = subprocess.Popen(
        cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd=directory,
        env={**os.environ, **(env or {})},
    )  # fmt: skip
    return proc.pid


def running(pid: int) -> bool:
    if reaped(pid):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return process_state(pid) != "Z"  # a zombie no one reaps (an orphan's) has exited


def reaped(pid: int) -> bool:
    """Reap it if it is our child (a fixture's); False while it runs."""
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
        return done == pid
    except ChildProcessError:
        return False


def stop_pid(pid: int, grace_s: float = 5.0) -> None:
    """SIGTERM, then SIGKILL after the grace period."""
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait_s
        while running(pid):
            if time.monotonic() >= deadline:
                break
            time.sleep(0.05)
        else:
            return


def process_state(pid: int) -> str:
    """The state letter of /proc/PID/stat (R, S, D, T for stopped ...); "" when gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat[stat.rindex(")") + 2 :][:1]


def children(pid: int) -> list[int]:
    """The processes whose parent is `pid` (a postmaster's backends)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat[stat.rindex(")") + 2 :].split()[1]) == pid:
            found.append(int(entry.name))
    return found


def signal_tree(pid: int, sig: signal.Signals) -> None:
    """`sig` to a process, then to its children (a stopped parent forks no more)."""
    for each in [pid, *children(pid)]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(each, sig)


def command_line(pid: int) -> list[str]:
    """A process's arguments from /proc ([] when it is gone or a zombie)."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()[: 1 << 20]
    except OSError:
        return []
    return [arg.decode(errors="replace") for arg in raw.split(b"\0") if arg]


def clear_stale_postgres_lock(data: Path) -> None:
    """A killed postmaster no one reaps stays a zombie, which PostgreSQL takes for a live
    one ("lock file already exists"): its lock files (postmaster.pid: pid, data directory,
    start time, port, socket directory ...) go once it is dead."""
    lock = data / "postmaster.pid"
    try:
        lines = lock.read_text()[:4096].split("\n")
        pid, port, sockets = int(lines[0]), int(lines[3]), Path(lines[4])
    except (OSError, ValueError, IndexError):
        return
    if not running(pid):
        (sockets / f".s.PGSQL.{port}.lock").unlink(missing_ok=True)
        lock.unlink(missing_ok=True)
