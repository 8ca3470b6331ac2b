"""Agents refuse calls without the shared token, speak TLS and mutual TLS, stay on loopback
unless given a long token, and refuse bad flags in one line with exit code 2. A TLS
mismatch is named as such, never as an unreachable agent."""

import os
import socket
import subprocess
import sys
from pathlib import Path

import grpc
import pytest
import trustme

from bgbench.coordinator.execution.agents import AgentClient, Credentials
from bgbench.errors import UserError
from bgbench.protos import AGENT_READY_LINE, PROTOCOL_VERSION, bearer
from bgbench.protos import worker_pb2 as pb
from bgbench.protos import worker_pb2_grpc as pb_grpc

TOKEN = "s3cret-token-for-the-tests"
AGENT = [sys.executable, "-m", "bgbench", "agent"]


@pytest.fixture
def start_agent(tmp_path):
    """Starts agents (the token from the environment: a command line shows in ps) and kills
    every one of them when the test ends, however it ends."""
    started: list[subprocess.Popen] = []

    def start(*args: str) -> str:
        proc = subprocess.Popen(
            [*AGENT, "--work-dir", str(tmp_path / "agent"), *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "BGBENCH_TOKEN": TOKEN},
        )  # fmt: skip
        started.append(proc)
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith(AGENT_READY_LINE), f"agent did not start: {line!r}"
        return line[len(AGENT_READY_LINE) :].strip()

    try:
        yield start
    finally:
        for proc in started:
            proc.kill()
            proc.wait(10)


@pytest.fixture
def token_agent(start_agent):
    return start_agent()


def handshake(channel, metadata=()) -> pb.HandshakeReply:
    stub = pb_grpc.WorkerStub(channel)
    return stub.Handshake(
        pb.HandshakeRequest(protocol_version=PROTOCOL_VERSION), timeout=10, metadata=metadata
    )


def test_calls_without_the_token_are_refused(token_agent):
    channel = grpc.insecure_channel(token_agent)
    for metadata in ((), bearer("wrong")):
        with pytest.raises(grpc.RpcError) as info:
            handshake(channel, metadata)
        assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
    # the streaming call is guarded too
    stub = pb_grpc.WorkerStub(channel)
    with pytest.raises(grpc.RpcError) as info:
        list(stub.Run(pb.RunRequest(experiment_id="x", threads=1), timeout=10))
    assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert handshake(channel, bearer(TOKEN)).protocol_version == PROTOCOL_VERSION
    channel.close()


def test_the_coordinator_names_a_token_problem_in_one_line(token_agent):
    with pytest.raises(UserError, match=r"agents\.token"):
        AgentClient(token_agent, Credentials(token="wrong")).handshake()
    assert AgentClient(token_agent, Credentials(token=TOKEN)).handshake().cores >= 1


def test_a_wrong_protocol_version_is_refused_even_with_the_token(token_agent):
    channel = grpc.insecure_channel(token_agent)
    reply = pb_grpc.WorkerStub(channel).Handshake(
        pb.HandshakeRequest(protocol_version=PROTOCOL_VERSION - 1), timeout=10,
        metadata=bearer(TOKEN),
    )  # fmt: skip
    assert "protocol version mismatch" in reply.error.message
    channel.close()


def refused(tmp_path, *args: str, token: str | None = None) -> str:
    """Runs an agent that must refuse to start: exit code 2 and one line on stderr, which it
    returns. None of these binds: the refusals come before the listener."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BGBENCH_")}
    if token is not None:
        env["BGBENCH_TOKEN"] = token
    proc = subprocess.run(
        [*AGENT, "--work-dir", str(tmp_path / "refused"), *args],
        capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("bgbench agent: error: "), proc.stderr
    return lines[0]


def test_listening_beyond_loopback_needs_a_token(tmp_path):
    line = refused(tmp_path, "--listen", "0.0.0.0:0")
    assert "refusing to listen on 0.0.0.0:0 without --token" in line


@pytest.mark.parametrize("via", ["flag", "environment"])
def test_a_short_token_beyond_loopback_is_refused_without_showing_it(tmp_path, via):
    short = "tok-Zq9"
    if via == "flag":
        line = refused(tmp_path, "--listen", "0.0.0.0:0", "--token", short)
    else:
        line = refused(tmp_path, "--listen", "0.0.0.0:0", token=short)
    assert "--token shorter than 16 characters" in line
    assert short not in line


@pytest.mark.parametrize(
    "args, named",
    [
        (["--tls-cert", "cert.pem"], "--tls-cert and --tls-key go together"),
        (["--tls-key", "key.pem"], "--tls-cert and --tls-key go together"),
        (["--tls-client-ca", "ca.pem"], "--tls-client-ca needs them"),
        (["--tls-cert", "nowhere.pem", "--tls-key", "nowhere.key"], "--tls-cert: nowhere.pem"),
        (["--processes", "0"], "--processes"),
        (["--processes", "many"], "--processes: 'many' is not 1 to 256 or auto"),
        (["--no-such-flag"], "--no-such-flag"),
    ],
)
def test_bad_agent_flags_are_one_line_and_exit_2(tmp_path, args, named):
    assert named in refused(tmp_path, *args, token=TOKEN)


def test_a_port_in_use_is_refused_in_one_line(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        address = f"127.0.0.1:{taken.getsockname()[1]}"
        line = refused(tmp_path, "--listen", address, token=TOKEN)
    assert f"--listen: cannot listen on {address}" in line


@pytest.fixture
def pki(tmp_path):
    ca = trustme.CA()
    server = ca.issue_cert("127.0.0.1", "localhost")
    client = ca.issue_cert("bgbench-coordinator")
    files = {}
    for name, blob in {
        "ca.pem": ca.cert_pem.bytes(),
        "server.pem": server.cert_chain_pems[0].bytes(),
        "server.key": server.private_key_pem.bytes(),
        "client.pem": client.cert_chain_pems[0].bytes(),
        "client.key": client.private_key_pem.bytes(),
        "other-ca.pem": trustme.CA().cert_pem.bytes(),
    }.items():
        (tmp_path / name).write_bytes(blob)
        files[name] = tmp_path / name
    return files


def test_tls_agent(start_agent, pki):
    address = start_agent(
        "--tls-cert", str(pki["server.pem"]), "--tls-key", str(pki["server.key"])
    )  # fmt: skip
    ca = pki["ca.pem"].read_bytes()
    assert AgentClient(address, Credentials(token=TOKEN, ca=ca)).handshake().cores >= 1
    # plain text to a TLS agent: a TLS mismatch, named as one
    with pytest.raises(UserError, match=r"TLS handshake failed: the agent speaks TLS") as info:
        AgentClient(address, Credentials(token=TOKEN)).handshake()
    assert "agents.tls.ca_file" in str(info.value) and "unreachable" not in str(info.value)
    # a CA that did not sign the agent's certificate
    other = pki["other-ca.pem"].read_bytes()
    with pytest.raises(UserError, match=r"TLS handshake failed: .*not signed by agents\.tls"):
        AgentClient(address, Credentials(token=TOKEN, ca=other)).handshake()


def test_tls_to_a_plain_text_agent_is_named(token_agent, pki):
    with pytest.raises(UserError, match=r"TLS handshake failed: the agent does not speak TLS"):
        AgentClient(
            token_agent, Credentials(token=TOKEN, ca=pki["ca.pem"].read_bytes())
        ).handshake()


def test_mutual_tls_agent_needs_a_client_certificate(start_agent, pki):
    address = start_agent(
        "--tls-cert", str(pki["server.pem"]), "--tls-key", str(pki["server.key"]),
        "--tls-client-ca", str(pki["ca.pem"]),
    )  # fmt: skip
    ca = pki["ca.pem"].read_bytes()
    with pytest.raises(UserError, match=r"TLS handshake failed: .*client certificate") as info:
        AgentClient(address, Credentials(token=TOKEN, ca=ca)).handshake()
    assert "agents.tls.cert_file" in str(info.value)
    client = Credentials(
        token=TOKEN, ca=ca, cert=pki["client.pem"].read_bytes(),
        key=pki["client.key"].read_bytes(),
    )  # fmt: skip
    assert AgentClient(address, client).handshake().cores >= 1


def test_make_certs_script_gives_working_mutual_tls(tmp_path, start_agent):
    script = Path(__file__).resolve().parents[2] / "deploy" / "make-certs.sh"
    subprocess.run(["bash", str(script), str(tmp_path / "tls"), "127.0.0.1"], check=True,
                   capture_output=True, timeout=120)  # fmt: skip
    tls = tmp_path / "tls"
    address = start_agent(
        "--tls-cert", str(tls / "agent-127.0.0.1.pem"), "--tls-key",
        str(tls / "agent-127.0.0.1.key"), "--tls-client-ca", str(tls / "ca.pem"),
    )  # fmt: skip
    creds = Credentials(
        token=TOKEN, ca=(tls / "ca.pem").read_bytes(),
        cert=(tls / "coordinator.pem").read_bytes(), key=(tls / "coordinator.key").read_bytes(),
    )  # fmt: skip
    assert AgentClient(address, creds).handshake().cores >= 1


def test_an_agent_certificate_for_another_name_is_named_exit_2(start_agent, pki, tmp_path):
    """The agent's certificate is signed by the CA but holds another name than the address
    dialled: a TLS mismatch, exit 2, never "unreachable" (exit 3)."""
    wrong = trustme.CA()
    elsewhere = wrong.issue_cert("elsewhere.example")
    (tmp_path / "wrong-ca.pem").write_bytes(wrong.cert_pem.bytes())
    (tmp_path / "elsewhere.pem").write_bytes(elsewhere.cert_chain_pems[0].bytes())
    (tmp_path / "elsewhere.key").write_bytes(elsewhere.private_key_pem.bytes())
    address = start_agent(
        "--tls-cert", str(tmp_path / "elsewhere.pem"), "--tls-key", str(tmp_path / "elsewhere.key")
    )  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-m", "bgbench", "run", "--store", "sqlite", "--results",
         str(tmp_path / "res"), "-p", f'agents.addresses=["{address}"]',
         "-p", f"agents.tls.ca_file={tmp_path / 'wrong-ca.pem'}"],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "BGBENCH_TOKEN": TOKEN},
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("bgbench:")]
    assert len(lines) == 1, proc.stderr
    assert "TLS: agent 127.0.0.1's certificate is not for that name" in lines[0]
    assert "unreachable" not in lines[0]
    # with the name it holds, the same agent answers
    ca = (tmp_path / "wrong-ca.pem").read_bytes()
    creds = Credentials(token=TOKEN, ca=ca, server_name="elsewhere.example")
    assert AgentClient(address, creds).handshake().cores >= 1
