"""What the deck answers, and to whom: its Host rule, the Origin and anti-forgery checks of
every state-changing request, and the optional bearer token.

A web page in the user's browser can send requests to the deck: cross-site directly, or
through DNS rebinding (its own name made to resolve to 127.0.0.1, so the browser calls it
same-origin). The Host header is the rebinding page's name, so only the names the deck
serves are answered, on every route. A state-changing request must also come from one of
the deck's own origins and carry the anti-forgery token its pages embed (or the bearer
token, which a browser cannot attach cross-site).
"""

import ipaddress
import re
import secrets
import socket
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

import psutil
from fastapi.responses import JSONResponse

from bgbench.errors import UserError

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

CSRF_HEADER = "X-BGBench-CSRF"  # the anti-forgery token, as the deck's script sends it
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
DEFAULT_PORTS = {"http": 80, "https": 443}  # https: the deck behind a TLS proxy (--allow-host)

# host[:port]: a DNS name, an IPv4 address or a bracketed IPv6 address, then a port.
AUTHORITY = re.compile(
    r"(?P<host>\[[0-9A-Fa-f:.]{2,45}\]|[A-Za-z0-9_.-]{1,253})(?::(?P<port>[0-9]{1,5}))?"
)
LABEL = r"(?!-)[A-Za-z0-9_-]{1,63}(?<!-)"
HOST_NAME = re.compile(rf"{LABEL}(\.{LABEL})*")  # what --allow-host takes as a name


def parse_authority(value: str, default_port: int) -> tuple[str, int] | None:
    """`host[:port]` as (lower-case host without brackets, port), None if it is not one."""
    match = AUTHORITY.fullmatch(value)
    if match is None:
        return None
    if match["port"] is None:
        return match["host"].strip("[]").lower(), default_port
    port = int(match["port"])
    if not 0 < port < 65536:
        return None
    return match["host"].strip("[]").lower(), port


def _normal_address(host: str) -> str:
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return host.lower()


def check_allow_host(value: str) -> tuple[str, int | None]:
    """An --allow-host value: a name or an address, with a port or without (any port)."""
    parsed = parse_authority(value, 0) if value else None
    valid = parsed is not None and (
        HOST_NAME.fullmatch(parsed[0]) is not None or _is_address(parsed[0])
    )
    if parsed is None or not valid:
        raise UserError(
            f"--allow-host {value!r}: give a host name or address the deck is reached by, "
            "optionally with :PORT (e.g. deck.example.org or 192.168.1.4:8765)"
        )
    host, port = parsed
    return _normal_address(host), port or None


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _own_addresses() -> set[str]:
    """Every address of this host's interfaces, and its name: what a deck bound to the
    wildcard address is reached by."""
    found = {socket.gethostname().lower()}
    for addresses in psutil.net_if_addrs().values():
        for a in addresses:
            if a.family in (socket.AF_INET, socket.AF_INET6):
                found.add(_normal_address(a.address.split("%", 1)[0]))
    return found


@dataclass(frozen=True)
class HostRule:
    """The Host values the deck answers: the (host, port) pairs it listens on, and the
    names the user allowed (--allow-host; port None: any port, as behind a proxy)."""

    served: frozenset[tuple[str, int]]
    allowed: frozenset[tuple[str, int | None]] = frozenset()

    @classmethod
    def for_binding(
        cls, host: str, address: str, port: int, allowed: Iterable[str] = ()
    ) -> "HostRule":
        """The deck listening on `address`:`port` (given as `host`), plus --allow-host names."""
        hosts = {_normal_address(host.strip("[]")), _normal_address(address)}
        ip = ipaddress.ip_address(_normal_address(address))
        if ip.is_loopback or ip.is_unspecified:
            hosts.update(LOOPBACK_NAMES)
        if ip.is_unspecified:
            hosts |= _own_addresses()
        served = frozenset((h, port) for h in hosts)
        return cls(served, frozenset(check_allow_host(value) for value in allowed))

    def accepts(self, authority: str, default_port: int = 80, scheme: str = "http") -> bool:
        """`authority` (a Host header, an Origin's host[:port]) is one the deck serves;
        https only for an allowed name (a TLS proxy in front of the deck)."""
        parsed = parse_authority(authority, default_port)
        if parsed is None:
            return False
        host, port = _normal_address(parsed[0]), parsed[1]
        if scheme == "http" and (host, port) in self.served:
            return True
        return (host, port) in self.allowed or (host, None) in self.allowed

    def accepts_origin(self, origin: str) -> bool:
        """`Origin: scheme://host[:port]`, one of the deck's own (never "null")."""
        try:
            parts = urlsplit(origin)
        except ValueError:
            return False
        if parts.scheme not in DEFAULT_PORTS or parts.path or parts.query or parts.fragment:
            return False
        if "@" in parts.netloc:
            return False
        return self.accepts(parts.netloc, DEFAULT_PORTS[parts.scheme], parts.scheme)


def new_csrf_token() -> str:
    """The anti-forgery token of one deck process: random, embedded in its pages."""
    return secrets.token_urlsafe(32)


def _headers(scope: Scope) -> dict[bytes, list[bytes]]:
    found: dict[bytes, list[bytes]] = {}
    for key, value in scope.get("headers", []):
        found.setdefault(key, []).append(value)
    return found


def _bearer(headers: dict[bytes, list[bytes]]) -> list[bytes]:
    return [v[7:].strip() for v in headers.get(b"authorization", []) if v[:7].lower() == b"bearer "]


def _carries(candidates: Iterable[bytes], secret: bytes) -> bool:
    return any(secrets.compare_digest(c, secret) for c in candidates)


class RequestGuard:
    """Every request: a Host the deck serves (421), and with a token, the token (401:
    `Authorization: Bearer T` or `?token=T`). A state-changing one: an Origin of the deck's
    own and its anti-forgery token in CSRF_HEADER (403), unless it carries the bearer
    token in Authorization, which no other page can send."""

    def __init__(self, app: ASGIApp, hosts: HostRule, csrf: str, token: str | None) -> None:
        self.app = app
        self.hosts = hosts
        self.csrf = csrf.encode()
        self.token = token.encode() if token else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        problem = self._problem(scope) if scope["type"] == "http" else None
        if problem is None:
            await self.app(scope, receive, send)
        else:
            await JSONResponse({"error": problem[1]}, status_code=problem[0])(scope, receive, send)

    def _problem(self, scope: Scope) -> tuple[int, str] | None:
        headers = _headers(scope)
        host = headers.get(b"host", [])
        if len(host) != 1 or not self.hosts.accepts(host[0].decode("latin-1")):
            return 421, "this deck does not serve that Host: open it by its own address"
        bearer = self.token is not None and _carries(_bearer(headers), self.token)
        if self.token is not None and not bearer and not _carries(_query_token(scope), self.token):
            return 401, "this deck needs its token: add ?token=... to the address"
        if scope["method"] in SAFE_METHODS:
            return None
        origin = headers.get(b"origin", [])
        own_origin = len(origin) == 1 and self.hosts.accepts_origin(origin[0].decode("latin-1"))
        if (origin or not bearer) and not own_origin:
            return 403, "refused: a change must come from the deck's own page (Origin)"
        if not bearer and not _carries(headers.get(CSRF_HEADER.lower().encode(), []), self.csrf):
            return 403, f"refused: a change must carry the deck's {CSRF_HEADER} token"
        return None


def _query_token(scope: Scope) -> list[bytes]:
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    return [v.encode() for v in query.get("token", [])]
