"""An agent address whose name resolves to many addresses is one agent per address: three
real agents on 127.0.0.2, .3 and .4, one name for all three in the coordinator's own
/etc/hosts (a private mount namespace: the machine's file is untouched), and a real
experiment over them, the token and TLS (a certificate for the name only) as with any
listed agent."""

import json
import os
import shutil
import subprocess
import sys

import pytest
import trustme

from bgbench.protos import AGENT_READY_LINE

NAME = "trio.bgbench.test"
TOKEN = "a-token-of-the-agents-by-name-test"
ADDRESSES = ("127.0.0.2", "127.0.0.3", "127.0.0.4")
# mount the hosts file over /etc/hosts in a mount namespace of the command's own, then run it
IN_OWN_HOSTS = 'mount --bind "$0" /etc/hosts && exec "$@"'

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None,
    reason="a private /etc/hosts needs root and unshare (CI runs as root)",
)


@pytest.fixture
def pki(tmp_path):
    ca = trustme.CA()
    cert = ca.issue_cert(NAME)  # the name only: an agent checked for its IP would fail
    files = {
        "ca.pem": ca.cert_pem.bytes(),
        "agent.pem": cert.cert_chain_pems[0].bytes(),
        "agent.key": cert.private_key_pem.bytes(),
    }
    for name, blob in files.items():
        (tmp_path / name).write_bytes(blob)
    return tmp_path


@pytest.fixture
def three_agents(tmp_path, pki):
    """Three agents on one port of 127.0.0.2, .3 and .4, killed by PID after the test."""
    started: list[subprocess.Popen[str]] = []

    def start(host: str, port: int, i: int) -> str:
        proc = subprocess.Popen(
            [sys.executable, "-m", "bgbench", "agent", "--listen", f"{host}:{port}",
             "--work-dir", str(tmp_path / f"agent-{i}"), "--processes", "1",
             "--allow-store-paths", "--tls-cert", str(pki / "agent.pem"),
             "--tls-key", str(pki / "agent.key")],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "BGBENCH_TOKEN": TOKEN},
        )  # fmt: skip
        started.append(proc)
        assert proc.stdout is not None
        line = proc.stdout.readline()  # the agent's first line, once it serves
        assert line.startswith(AGENT_READY_LINE), f"agent on {host} did not start: {line!r}"
        return line[len(AGENT_READY_LINE) :].strip()

    try:
        first = start(ADDRESSES[0], 0, 0)
        port = int(first.rpartition(":")[2])
        for i, host in enumerate(ADDRESSES[1:], 1):
            start(host, port, i)
        yield port
    finally:
        for proc in started:
            proc.kill()
            proc.wait(10)


def test_a_name_resolving_to_three_addresses_gives_three_agents(tmp_path, pki, three_agents):
    hosts = tmp_path / "hosts"
    hosts.write_text("".join(f"{a} {NAME}\n" for a in ADDRESSES) + "127.0.0.1 localhost\n")
    listed = f"{NAME}:{three_agents}"
    proc = subprocess.run(
        ["unshare", "--mount", "--", "sh", "-c", IN_OWN_HOSTS, str(hosts),
         sys.executable, "-m", "bgbench", "run", "--store", "sqlite", "--threads", "3",
         "--duration", "1", "--users", "300", "--results", str(tmp_path / "results"),
         "-p", f'agents.addresses=["{listed}"]', "-p", f"agents.tls.ca_file={pki / 'ca.pem'}",
         "-p", f"store.options.path={tmp_path / 'bg.sqlite'}",
         "-p", "agents.heartbeat_timeout=60", "--json"],
        capture_output=True, text=True, timeout=240,
        env={**os.environ, "BGBENCH_TOKEN": TOKEN},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert f"connecting to 3 agents ({listed} is 3 agents)" in proc.stderr, proc.stderr
    result = json.loads(proc.stdout)
    agents = [a["address"] for a in result["agents"]]
    assert agents == [f"{a}:{three_agents}" for a in ADDRESSES], result["agents"]
    assert all(a["log_records_written"] == a["log_records_read"] for a in result["agents"])
    assert TOKEN not in proc.stderr + proc.stdout


def test_without_the_token_the_agents_of_a_name_refuse_in_one_line(tmp_path, pki, three_agents):
    hosts = tmp_path / "hosts"
    hosts.write_text("".join(f"{a} {NAME}\n" for a in ADDRESSES))
    env = {k: v for k, v in os.environ.items() if k != "BGBENCH_TOKEN"}
    proc = subprocess.run(
        ["unshare", "--mount", "--", "sh", "-c", IN_OWN_HOSTS, str(hosts),
         sys.executable, "-m", "bgbench", "run", "--store", "sqlite", "--threads", "3",
         "--duration", "1", "--results", str(tmp_path / "results"),
         "-p", f'agents.addresses=["{NAME}:{three_agents}"]',
         "-p", f"agents.tls.ca_file={pki / 'ca.pem'}"],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("bgbench:")]
    assert len(lines) == 1 and "refused the call" in lines[0], proc.stderr
    assert "127.0.0." in lines[0] and "agents.token" in lines[0]
