"""The agent's guard: a shared token on every call, TLS, loopback unless told otherwise,
and every file it writes kept inside its work dir."""

import hmac
import ipaddress
import re
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import grpc

from bgbench.errors import UserError
from bgbench.protos import AUTH_METADATA_KEY

STREAMING_METHODS = ("/Run", "/Watch")
# Beyond loopback a token is all that stands between the network and the agent.
MIN_TOKEN_CHARS = 16
# What the coordinator's ids look like: "20250101-120000-T8", "R...-abcd-T8-2s-retry1",
# "R...-warmup0-T8", "R...-T8-1e+06s"; a plain file name, never a path.
EXPERIMENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,127}")
ALLOW_STORE_PATHS_FLAG = "--allow-store-paths"

# grpc's handler classes are generic only in its stubs: annotations naming their
# parameters are quoted, so they are never evaluated at run time.
_Request = TypeVar("_Request")
_Response = TypeVar("_Response")


def _deny(message: str, streaming: bool) -> "grpc.RpcMethodHandler[Any, Any]":
    def abort_unary(request: object, context: grpc.ServicerContext) -> NoReturn:
        context.abort(grpc.StatusCode.UNAUTHENTICATED, message)

    def abort_stream(request: object, context: grpc.ServicerContext) -> Iterator[None]:
        context.abort(grpc.StatusCode.UNAUTHENTICATED, message)
        yield  # pragma: no cover - abort raises

    if streaming:
        return grpc.unary_stream_rpc_method_handler(abort_stream)
    return grpc.unary_unary_rpc_method_handler(abort_unary)


class TokenInterceptor(grpc.ServerInterceptor):
    """Refuses every call whose metadata lacks "authorization: Bearer <token>"."""

    def __init__(self, token: str) -> None:
        self._expected = f"Bearer {token}".encode()

    def intercept_service(
        self,
        continuation: Callable[
            [grpc.HandlerCallDetails], "grpc.RpcMethodHandler[_Request, _Response] | None"
        ],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> "grpc.RpcMethodHandler[_Request, _Response] | None":
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


def experiment_dir(work_dir: Path, experiment_id: str) -> Path:
    """work_dir/experiments/<id>, where an experiment's logs go; an id that is not a plain
    name, or that leads anywhere else (a symlink), is refused."""
    shown = repr(experiment_id[:80])
    if not EXPERIMENT_ID.fullmatch(experiment_id) or ".." in experiment_id:
        raise UserError(
            f"experiment_id {shown} is not a plain name: use 1 to 128 letters, digits, "
            "'.', '_', '+' or '-', starting with a letter or digit, without '..'"
        )
    root = (work_dir / "experiments").resolve()
    path = (root / experiment_id).resolve()
    if path.parent != root:
        raise UserError(f"experiment_id {shown} leads outside {root}")
    return path


def confine_paths(
    options: dict[str, Any], names: dict[str, object], work_dir: Path
) -> dict[str, Any]:
    """The store options with each file option in `names` (name: default) made absolute
    inside work_dir; a relative one resolves against it, one that lands elsewhere is refused."""
    root = work_dir.resolve()
    out = dict(options)
    for name, default in names.items():
        value = out.get(name, default)
        if not isinstance(value, str):
            continue  # the binding's options model names the problem
        target = (root / value).resolve()
        if not target.is_relative_to(root):
            raise UserError(
                f"store.options.{name}: {value} is outside this agent's work dir {root}: "
                f"give a path relative to it, or start the agent with {ALLOW_STORE_PATHS_FLAG}"
            )
        out[name] = str(target)
    return out
