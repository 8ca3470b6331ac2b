"""Servers a campaign starts for its jobs (Strudel's workload manager), through the
packaged launchers (bgbench/launchers/servers.py, which deploy/local/servers.py runs from a
checkout), and stops: exactly those it started, also on failure or Ctrl-C.

Each server lives in a directory of the campaign's (results/CAMPAIGN/servers/KEY/) whose
server.json records its PIDs. A campaign resumed after its coordinator was killed finds
the servers that coordinator left running there and uses them again (the interrupted
rating's data is in them), and stops them at its end like its own.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bgbench.coordinator.campaign.document import ServerSpec
from bgbench.coordinator.records.events import Say
from bgbench.errors import SystemFault, UserError
from bgbench.launchers import servers as launchers
from bgbench.launchers.procs import running, stop_pid

STATE = "server.json"
PORT = "campaign-port"  # the port a server of the campaign had (kept when it stops)


def check_kinds(specs: list[ServerSpec]) -> None:
    """Refuse a server kind the launchers do not start, before anything runs."""
    if not specs:
        return
    known = list(launchers.kinds())
    for spec in specs:
        if spec.kind not in known:
            raise UserError(f"unknown server kind {spec.kind!r}: use one of {', '.join(known)}")


@dataclass
class Servers:
    """The servers of one campaign, by key (a shared server's name, or job-N-KIND)."""

    root: Path  # results/CAMPAIGN/servers
    say: Say
    running: dict[str, dict[str, Any]] = field(default_factory=dict)

    def adopt(self) -> None:
        """Take over the servers an earlier, killed coordinator of this campaign left
        running; forget those that are gone."""
        if not self.root.is_dir():
            return
        for state in sorted(self.root.glob(f"*/{STATE}")):
            info = json.loads(state.read_text())
            if launchers.alive(info):
                self.running[state.parent.name] = info
                self.say(f"using {info['server']} {state.parent.name} again (still up)")
            else:
                state.unlink()

    def ensure(self, seq: int, specs: list[ServerSpec]) -> None:
        """Start the servers of job `seq` that are not running yet."""
        for spec in specs:
            self._ensure(self.key(seq, spec), spec.kind)

    def options(self, seq: int, specs: list[ServerSpec]) -> dict[str, object]:
        """The store options job `seq`'s running servers provide (a new database, keyspace
        or prefix on each: jobs sharing a server never see each other's data)."""
        options: dict[str, object] = {}
        for spec in specs:
            info = self.running[self.key(seq, spec)]
            try:
                options.update(launchers.store_options(info))
            except (OSError, SystemExit, subprocess.SubprocessError) as exc:
                raise SystemFault(f"server {spec.key} gave no store options: {exc}") from None
        return options

    @staticmethod
    def key(seq: int, spec: ServerSpec) -> str:
        return f"job-{seq}-{spec.kind}" if spec.fresh else spec.key

    def _ensure(self, key: str, kind: str) -> dict[str, Any]:
        if key in self.running:
            return self.running[key]
        self.say(f"starting {kind} server {key} (bgbench.launchers)")
        directory = self.root / key
        known = directory / PORT  # a server started here before: its port again
        port = int(known.read_text()) if known.exists() else None
        try:
            info: dict[str, Any] = launchers.start(kind, directory, port)
        except SystemExit as exc:  # the launcher's own refusal (an unknown kind...)
            raise UserError(f"server {key}: {exc}") from None
        except Exception as exc:
            self.stop(key)  # what it left behind, if it recorded anything
            raise SystemFault(f"server {key} ({kind}) did not start: {exc}") from None
        (directory / PORT).write_text(str(info["port"]))
        self.running[key] = info
        return info

    def described(self, seq: int, specs: list[ServerSpec]) -> list[dict[str, Any]]:
        """What a job's record says of its servers (no secrets: ports and PIDs)."""
        out = []
        for spec in specs:
            info = self.running.get(self.key(seq, spec), {})
            pids = info.get("pids") or ([info["pid"]] if "pid" in info else [])
            out.append({**spec.to_dict(), "key": self.key(seq, spec), "port": info.get("port"),
                        "pids": pids})  # fmt: skip
        return out

    def stop(self, key: str) -> None:
        self.running.pop(key, None)
        state = self.root / key / STATE
        if not state.exists():
            return
        self.say(f"stopping server {key}")
        info = json.loads(state.read_text())
        launchers.stop(state.parent)
        for pid in info.get("pids") or [info["pid"]]:  # what its own stop left running
            if running(pid):
                stop_pid(pid)

    def stop_fresh(self, seq: int, specs: list[ServerSpec]) -> None:
        for spec in specs:
            if spec.fresh:
                self.stop(self.key(seq, spec))

    def stop_all(self) -> None:
        for key in list(self.running):
            self.stop(key)
        if self.root.is_dir():  # anything recorded but not adopted (started, then killed)
            for state in self.root.glob(f"*/{STATE}"):
                self.stop(state.parent.name)
