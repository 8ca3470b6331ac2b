"""Distinct test hosts on one machine: network namespaces joined to the root one by veth pairs.

Each host gets 198.18.<n>.2 (RFC 2544's benchmarking range, nobody's network) and the
root namespace 198.18.<n>.1 on a /30 link, n never reused within a test run. Everything
is created with names unique to this process and removed on exit, agents first (by PID).
"""

import itertools
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from bgbench.protos import AGENT_READY_LINE

PORT = 7100


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=30)


@dataclass
class Host:
    index: int
    namespace: str
    address: str  # the host's own address
    agent: subprocess.Popen | None = None

    @property
    def agent_address(self) -> str:
        return f"{self.address}:{PORT}"

    def start_agent(self, work_dir: Path, token: str, processes: int = 1) -> str:
        self.agent = subprocess.Popen(
            [
                "ip",
                "netns",
                "exec",
                self.namespace,
                sys.executable,
                "-m",
                "bgbench.worker.agent",
                "--listen",
                self.agent_address,
                "--work-dir",
                str(work_dir / f"host-{self.index}"),
                "--processes",
                str(processes),
                "--allow-store-paths",  # the test's SQLite file is an absolute path
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "BGBENCH_TOKEN": token},  # not in argv: ps shows argv
        )
        assert self.agent.stdout is not None
        line = self.agent.stdout.readline()
        if not line.startswith(AGENT_READY_LINE):
            self.agent.kill()
            raise RuntimeError(
                f"agent on {self.namespace} did not start: {self.agent.stderr.read()}"
            )
        return self.agent_address

    def stop_agent(self) -> None:
        if self.agent is not None and self.agent.poll() is None:
            self.agent.terminate()
            try:
                self.agent.wait(15)
            except subprocess.TimeoutExpired:
                self.agent.kill()
                self.agent.wait(5)


_made = itertools.count()
_subnets = itertools.count(1)  # one /30 per host, never reused within a test run


@contextmanager
def network_hosts(count: int) -> Iterator[list[Host]]:
    tag = f"{os.getpid() % 10000}{next(_made)}"
    hosts: list[Host] = []
    try:
        for i in range(1, count + 1):
            ns, outside, inside = f"bgb{tag}h{i}", f"bgv{tag}o{i}", f"bgv{tag}i{i}"
            net = next(_subnets)
            host = Host(i, ns, f"198.18.{net}.2")
            _ip("netns", "add", ns)
            hosts.append(host)
            _ip("link", "add", outside, "type", "veth", "peer", "name", inside)
            _ip("link", "set", inside, "netns", ns)
            _ip("addr", "add", f"198.18.{net}.1/30", "dev", outside)
            _ip("link", "set", outside, "up")
            _ip("netns", "exec", ns, "ip", "addr", "add", f"198.18.{net}.2/30", "dev", inside)
            _ip("netns", "exec", ns, "ip", "link", "set", inside, "up")
            _ip("netns", "exec", ns, "ip", "link", "set", "lo", "up")
        yield hosts
    finally:
        for host in hosts:
            host.stop_agent()
        for host in hosts:
            subprocess.run(["ip", "netns", "del", host.namespace], capture_output=True, timeout=30)
