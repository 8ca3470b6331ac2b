"""What the scenario end-to-end tests share: a settings file with a scenario, `bgbench run`
on it, and the check that nothing a scenario did is left behind (no bgbench nft table, no
node of the server stopped, paused or dead)."""

import json
import signal
import subprocess
from pathlib import Path
from typing import Any

import yaml

from bgbench.coordinator.scenario.network import bgbench_tables
from tests.helpers import BGBENCH


def settings_file(path: Path, store: dict[str, Any], scenario: list[dict[str, Any]],
                  servers: list[Path], seconds: float, agents: dict[str, Any] | None = None,
                  ) -> Path:  # fmt: skip
    data: dict[str, Any] = {
        "workload": {"name": "bg"},
        "store": store,
        "run": {"threadcount": 4, "maxexecutiontime": seconds},
        "agents": {"local": 1, "processes": 1, "heartbeat_timeout": 60, **(agents or {})},
        "scenario": scenario,
        "nodes": {"servers": [str(s) for s in servers]},
    }
    path.write_text(yaml.safe_dump(data))
    return path


def start_run(settings: Path, results: Path, users: int = 500,
              args: tuple[str, ...] = ()) -> subprocess.Popen[str]:  # fmt: skip
    """`bgbench run -c SETTINGS --json ARGS`, started (its output piped)."""
    return subprocess.Popen(
        [*BGBENCH, "run", "-c", str(settings), "--users", str(users), "--results",
         str(results), "--json", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def run_scenario(settings: Path, results: Path, users: int = 500,
                 args: tuple[str, ...] = ()) -> dict[str, Any]:  # fmt: skip
    """`bgbench run -c SETTINGS --json` to its end; the result (exit 0 asserted), with
    its stderr and the nft tables its process left ("tables_left")."""
    proc = start_run(settings, results, users, args)
    try:
        out, err = proc.communicate(timeout=600)
    finally:
        end(proc)
    assert proc.returncode == 0, err[-3000:]
    result: dict[str, Any] = json.loads(out)
    result["stderr"] = err
    result["tables_left"] = tables_of(proc.pid)
    result["pid"] = proc.pid
    return result


def end(proc: subprocess.Popen[str]) -> None:
    """A run the test gave up on: interrupted as Ctrl-C does (its scenario is undone),
    killed if it does not end within two minutes."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGINT)
    try:
        proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate(timeout=30)


def tables_of(pid: int) -> list[str]:
    """The bgbench nft tables process `pid` made that exist now."""
    return [t for t in bgbench_tables() if t.startswith(f"bgbench_{pid}_")]


def process_state(pid: int) -> str:
    """The State letter of /proc/PID/status ("" when the process is gone)."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return ""
    for line in text.splitlines():
        if line.startswith("State:"):
            return line.split()[1]
    return ""


def server_pids(directory: Path) -> list[int]:
    info = json.loads((directory / "server.json").read_text())
    return [int(p) for p in info.get("pids") or [info["pid"]] if p]


def left_behind(directory: Path, pid: int) -> list[str]:
    """What the scenario of `bgbench` process `pid` left undone on the server in
    `directory`: its nft tables, and server processes stopped (T), dead (Z, or gone)."""
    problems = [f"nft table {t}" for t in tables_of(pid)]
    for pid in server_pids(directory):
        state = process_state(pid)
        if state in ("", "Z", "X"):
            problems.append(f"pid {pid} is dead")
        elif state in ("T", "t"):
            problems.append(f"pid {pid} is stopped")
    return problems


def phases_by_label(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["label"]: p for p in result["scenario"]["phases"]}
