"""MariaDB (Debian's `mariadb-server`) on 127.0.0.1 with its data in a directory of its own
(standard library only: servers.py starts it, tests and campaigns through it).

The data directory is made once by mariadb-install-db (root may log in over TCP without a
password: `--auth-root-authentication-method=normal`); the server then runs in the
foreground of a process recorded here, without Debian's configuration files
(--no-defaults), without a binary log, flushing InnoDB's log once a second rather than
at each commit (as the PostgreSQL started here runs with fsync off: a benchmark's
server, not a store of record). Its socket lives in the directory, or in /tmp when the
directory's path is too long for one. SIGTERM stops it.
"""

import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path
from typing import Any

from bgbench.launchers.procs import apt, free_port, running, stop_pid, wait_for

START_S = 60.0
STOP_GRACE_S = 30.0
SOCKET_PATH_MAX = 100  # a Unix socket's path must fit in 107 bytes


def start(directory: Path, port: int | None = None) -> dict[str, Any]:
    """MariaDB on 127.0.0.1; `port` asks for the one it had before (its data is kept)."""
    if shutil.which("mariadbd") is None or shutil.which("mariadb-install-db") is None:
        apt("mariadb-server")
    port = port or free_port()
    directory.mkdir(parents=True, exist_ok=True)
    data = directory / "data"
    if not (data / "mysql").exists():
        subprocess.run(
            ["mariadb-install-db", "--no-defaults", f"--datadir={data}", "--user=root",
             "--auth-root-authentication-method=normal", "--skip-test-db"],
            check=True, capture_output=True, timeout=START_S,
        )  # fmt: skip
    sock = directory / "mysqld.sock"
    if len(str(sock)) > SOCKET_PATH_MAX:
        sock = Path(tempfile.mkdtemp(prefix="bgbench-my-")) / "mysqld.sock"
    log = open(directory / "mariadbd.out", "wb")  # noqa: SIM115 - the child owns it
    proc = subprocess.Popen(
        ["mariadbd", "--no-defaults", f"--datadir={data}", f"--port={port}",
         "--bind-address=127.0.0.1", f"--socket={sock}", "--user=root", "--skip-log-bin",
         f"--pid-file={directory / 'mariadbd.pid'}", f"--log-error={directory / 'error.log'}",
         "--skip-name-resolve", "--max-connections=1000", "--innodb-buffer-pool-size=256M",
         "--innodb-flush-log-at-trx-commit=2", "--character-set-server=utf8mb4",
         "--collation-server=utf8mb4_bin"],
        stdout=log, stderr=log, start_new_session=True,
    )  # fmt: skip
    try:
        wait_for(lambda: greets(port), "MariaDB", START_S, alive=lambda: proc.poll() is None)
    except BaseException:
        stop_pid(proc.pid, STOP_GRACE_S)
        raise
    return {"server": "mysql", "name": _version(directory), "port": port, "pid": proc.pid,
            "socket": str(sock), "dir": str(directory)}  # fmt: skip


def greets(port: int, host: str = "127.0.0.1") -> bool:
    """Whether a MySQL server answers on the port with its handshake (protocol 10): it
    listens only once it is ready for connections."""
    try:
        with socket.create_connection((host, port), timeout=1) as s:
            s.settimeout(2)
            packet = s.recv(256)
    except OSError:
        return False
    return len(packet) > 5 and packet[4] == 10


def _version(directory: Path) -> str:
    """`MariaDB 10.11.x`, from the server's log line announcing it."""
    try:
        text = (directory / "error.log").read_text(errors="replace")
    except OSError:
        return "MariaDB"
    for line in reversed(text.splitlines()):
        if line.startswith("Version: '"):
            return "MariaDB " + line.split("'")[1].split("-", 1)[0]
    return "MariaDB"


def stop(info: dict[str, Any]) -> None:
    """SIGTERM (InnoDB shuts down cleanly), SIGKILL after a grace; a socket made in /tmp
    goes with it."""
    if running(info["pid"]):
        stop_pid(info["pid"], STOP_GRACE_S)
    sock = Path(info.get("socket", ""))
    if sock.name and sock.parent.name.startswith("bgbench-my-"):
        shutil.rmtree(sock.parent, ignore_errors=True)


def new_database(info: dict[str, Any]) -> str:
    """A new empty database on a MariaDB started here (made through its socket as root);
    its name."""
    name = "bg_" + uuid.uuid4().hex[:12]
    client = shutil.which("mariadb") or "mysql"
    subprocess.run(
        [client, "--no-defaults", f"--socket={info['socket']}", "--user=root",
         "--connect-timeout=10", "-e", f"CREATE DATABASE `{name}`"],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return name
