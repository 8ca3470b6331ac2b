"""The agent's guard: a shared token on every call, TLS, and loopback unless told otherwise."""

import hmac
import ipaddress
import socket
from pathlib import Path

import grpc

from bgbench.protos import AUTH_METADATA_KEY

STREAMING_METHODS = ("/Run",)


def _deny(message: str, streaming: bool) -> grpc.RpcMethodHandler:
    def abort_unary(request, context):
        context.abort(grpc.StatusCode.UNAUTHENTICATED, message)

    def abort_stream(request, context):
        context.abort(grpc.StatusCode.UNAUTHENTICATED, message)
        yield  # pragma: no cover - abort raises

    if streaming:
        return grpc.unary_stream_rpc_method_handler(abort_stream)
    return grpc.unary_unary_rpc_method_handler(abort_unary)


class TokenInterceptor(grpc.ServerInterceptor):
    """Refuses every call whose metadata lacks "authorization: Bearer <token>"."""

    def __init__(self, token: str) -> None:
        self._expected = f"Bearer {token}".encode()

    def intercept_service(self, continuation, handler_call_details):
        metadata = dict(handler_call_details.invocation_metadata or ())
        given = str(metadata.get(AUTH_METADATA_KEY, "")).encode()
        if hmac.compare_digest(given, self._expected):
            return continuation(handler_call_details)
        streaming = handler_call_details.method.endswith(STREAMING_METHODS)
        reason = "missing token" if not given else "wrong token"
        return _deny(f"{reason}: this agent needs the shared token (agents.token)", streaming)


def is_loopback(listen: str) -> bool:
    host = listen.rsplit(":", 1)[0].strip("[]")
    if host in ("localhost", ""):
        return host == "localhost"
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        try:
            return ipaddress.ip_address(socket.gethostbyname(host)).is_loopback
        except OSError:
            return False


def server_credentials(cert: Path, key: Path, client_ca: Path | None) -> grpc.ServerCredentials:
    """TLS with the agent's certificate; with client_ca, clients must present a certificate
    that CA signed (mutual TLS)."""
    return grpc.ssl_server_credentials(
        [(key.read_bytes(), cert.read_bytes())],
        root_certificates=client_ca.read_bytes() if client_ca else None,
        require_client_auth=client_ca is not None,
    )
