"""A Riak KV HTTP *emulator* for the tests: no Riak server can be installed on these machines.

It answers only the calls bgbench's Riak binding makes, as Riak KV 2.x documents them:
GET /ping; PUT /types/T/buckets/B/props; GET, PUT /types/T/buckets/B/keys/K. It checks
what a real Riak would reject (unknown or malformed quorum parameters, a PUT without a
content type, allow_mult on a bucket it cannot emulate) and keeps one copy of each value
with a counter as its vector clock. It proves the binding speaks that HTTP dialect and
that its BG logic is right; it says nothing of Riak's speed, replication, quorums,
siblings or staleness, which only a real Riak can show.

    python -m tests.riak_emulator PORT     # serves on 127.0.0.1:PORT until killed
"""

import base64
import json
import re
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit

KEY = re.compile(r"^/types/([^/]+)/buckets/([^/]+)/keys/([^/]+)$")
PROPS = re.compile(r"^/types/([^/]+)/buckets/([^/]+)/props$")
QUORUM = re.compile(r"^(\d+|one|quorum|all|default)$")
READ_PARAMS = {"r", "pr", "notfound_ok", "basic_quorum"}
WRITE_PARAMS = {"w", "dw", "pw", "returnbody"}
BOOLEANS = {"notfound_ok", "basic_quorum", "returnbody"}


class Store:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.values: dict[tuple[str, str, str], tuple[bytes, str, int]] = {}
        self.props: dict[tuple[str, str], dict] = {}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    store: Store

    def setup(self) -> None:
        super().setup()  # headers and body go out in separate writes: no Nagle delay
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _reply(self, status: int, body: bytes = b"", headers: dict | None = None) -> None:
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length", 0)))

    def _params(self, allowed: set[str]) -> dict[str, str] | None:
        params = dict(parse_qsl(urlsplit(self.path).query, keep_blank_values=True))
        for name, value in params.items():
            ok = name in allowed and (
                value in ("true", "false") if name in BOOLEANS else QUORUM.match(value)
            )
            if not ok:
                self._reply(400, f"Bad parameter {name}={value}\n".encode())
                return None
        return params

    def do_GET(self) -> None:
        path = urlsplit(self.path).path
        if path == "/ping":
            self._reply(200, b"OK", {"Content-Type": "text/html"})
            return
        match = KEY.match(path)
        if not match or self._params(READ_PARAMS) is None:
            if match is None:
                self._reply(404, b"not an emulated call\n")
            return
        with self.store.lock:
            found = self.store.values.get(match.groups())
        if found is None:
            self._reply(404, b"not found\n")
            return
        body, content_type, clock = found
        vclock = base64.b64encode(clock.to_bytes(8, "big")).decode()
        self._reply(200, body, {"Content-Type": content_type, "X-Riak-Vclock": vclock})

    def do_PUT(self) -> None:
        path = urlsplit(self.path).path
        body = self._body()
        if (match := PROPS.match(path)) is not None:
            props = json.loads(body).get("props", {})
            if props.get("allow_mult"):
                self._reply(400, b"the emulator keeps no siblings: allow_mult must be false\n")
                return
            with self.store.lock:
                self.store.props[match.groups()] = props
            self._reply(204)
            return
        match = KEY.match(path)
        if match is None:
            self._reply(404, b"not an emulated call\n")
            return
        if self._params(WRITE_PARAMS) is None:
            return
        content_type = self.headers.get("Content-Type")
        if not content_type:
            self._reply(400, b"Missing Content-Type request header\n")
            return
        with self.store.lock:
            old = self.store.values.get(match.groups())
            clock = (old[2] if old else 0) + 1
            self.store.values[match.groups()] = (body, content_type, clock)
        self._reply(204)


def serve(port: int) -> ThreadingHTTPServer:
    handler = type("BoundHandler", (Handler,), {"store": Store()})
    server = ThreadingHTTPServer(("127.0.0.1", port), handler)
    server.daemon_threads = True
    return server


if __name__ == "__main__":
    if len(sys.argv) != 2 or not sys.argv[1].isdigit():
        raise SystemExit(__doc__)
    serve(int(sys.argv[1])).serve_forever()
