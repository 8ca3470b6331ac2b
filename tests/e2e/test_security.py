"""Agents refuse calls without the shared token, speak TLS and mutual TLS, and stay on
loopback unless given a token."""

import subprocess
import sys
from pathlib import Path

import grpc
import pytest
import trustme

from bgbench.coordinator.agents import AgentClient, Credentials
from bgbench.errors import SystemFault, UserError
from bgbench.protos import AGENT_READY_LINE, PROTOCOL_VERSION, bearer
from bgbench.protos import worker_pb2 as pb
from bgbench.protos import worker_pb2_grpc as pb_grpc

TOKEN = "s3cret-token"


def start_agent(tmp_path, *args: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "bgbench", "agent", "--work-dir", str(tmp_path / "agent"), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith(AGENT_READY_LINE):
        proc.kill()
        raise AssertionError(f"agent did not start: {line!r} {proc.stderr.read()}")
    return proc, line[len(AGENT_READY_LINE) :].strip()


@pytest.fixture
def token_agent(tmp_path):
    proc, address = start_agent(tmp_path, "--token", TOKEN)
    yield address
    proc.terminate()
    proc.wait(10)


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


def test_listening_beyond_loopback_needs_a_token(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "bgbench", "agent", "--listen", "0.0.0.0:0",
         "--work-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode != 0
    assert "refusing to listen on 0.0.0.0:0 without --token" in proc.stderr


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
    }.items():
        (tmp_path / name).write_bytes(blob)
        files[name] = tmp_path / name
    return files


def test_tls_agent(tmp_path, pki):
    proc, address = start_agent(
        tmp_path, "--token", TOKEN, "--tls-cert", str(pki["server.pem"]),
        "--tls-key", str(pki["server.key"]),
    )  # fmt: skip
    try:
        ca = pki["ca.pem"].read_bytes()
        assert AgentClient(address, Credentials(token=TOKEN, ca=ca)).handshake().cores >= 1
        with pytest.raises(SystemFault):  # plaintext cannot talk to a TLS agent
            AgentClient(address, Credentials(token=TOKEN)).handshake()
    finally:
        proc.terminate()
        proc.wait(10)


def test_mutual_tls_agent_needs_a_client_certificate(tmp_path, pki):
    proc, address = start_agent(
        tmp_path, "--token", TOKEN, "--tls-cert", str(pki["server.pem"]),
        "--tls-key", str(pki["server.key"]), "--tls-client-ca", str(pki["ca.pem"]),
    )  # fmt: skip
    try:
        ca = pki["ca.pem"].read_bytes()
        with pytest.raises(SystemFault):
            AgentClient(address, Credentials(token=TOKEN, ca=ca)).handshake()
        client = Credentials(
            token=TOKEN, ca=ca, cert=pki["client.pem"].read_bytes(),
            key=pki["client.key"].read_bytes(),
        )  # fmt: skip
        assert AgentClient(address, client).handshake().cores >= 1
    finally:
        proc.terminate()
        proc.wait(10)


def test_make_certs_script_gives_working_mutual_tls(tmp_path):
    script = Path(__file__).resolve().parents[2] / "deploy" / "make-certs.sh"
    subprocess.run(["bash", str(script), str(tmp_path / "tls"), "127.0.0.1"], check=True,
                   capture_output=True, timeout=120)  # fmt: skip
    tls = tmp_path / "tls"
    proc, address = start_agent(
        tmp_path, "--token", TOKEN, "--tls-cert", str(tls / "agent-127.0.0.1.pem"),
        "--tls-key", str(tls / "agent-127.0.0.1.key"), "--tls-client-ca", str(tls / "ca.pem"),
    )  # fmt: skip
    try:
        creds = Credentials(
            token=TOKEN, ca=(tls / "ca.pem").read_bytes(),
            cert=(tls / "coordinator.pem").read_bytes(), key=(tls / "coordinator.key").read_bytes(),
        )  # fmt: skip
        assert AgentClient(address, creds).handshake().cores >= 1
    finally:
        proc.terminate()
        proc.wait(10)
