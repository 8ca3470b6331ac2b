"""Prometheus' node_exporter (Debian's prometheus-node-exporter, installed when missing) on
loopback: a host's CPU, memory, disk and network over HTTP, as a remote store host would
serve them to bgbench ([resources] node_exporters). Standard library only."""

import shutil
import urllib.request
from pathlib import Path
from typing import Any

from bgbench.launchers.procs import apt, free_port, running, spawn, wait_for

BINARY = "prometheus-node-exporter"


def start(directory: Path, port: int | None = None) -> dict[str, Any]:
    if shutil.which(BINARY) is None:
        apt(BINARY)
    port = port or free_port()
    directory.mkdir(parents=True, exist_ok=True)
    pid = spawn(
        [shutil.which(BINARY) or BINARY, f"--web.listen-address=127.0.0.1:{port}"],
        directory,
        "node_exporter.log",
    )
    wait_for(lambda: _serves(port), "node_exporter", 30, alive=lambda: running(pid))
    return {
        "server": "node-exporter",
        "port": port,
        "pid": pid,
        "endpoint": f"127.0.0.1:{port}",
        "dir": str(directory),
    }


def _serves(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as reply:
            return bool(reply.status == 200)
    except OSError:
        return False
