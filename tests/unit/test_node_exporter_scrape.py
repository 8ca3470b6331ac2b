"""A node_exporter's reply is untrusted: hostile HTTP servers on loopback (in a thread of
the test) that send too much, drip forever or say nothing. Each scrape ends within its
bounds with a ScrapeError naming the endpoint."""

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from bgbench.resources.node_exporter import NodeExporter, ScrapeError, fetch

HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n"


@pytest.fixture
def serve() -> Iterator[Callable[[Callable[[socket.socket, threading.Event], None]], int]]:
    """A loopback server answering each connection with `reply(conn, stop)`; its port."""
    stop = threading.Event()
    threads: list[threading.Thread] = []
    listeners: list[socket.socket] = []

    def start(reply: Callable[[socket.socket, threading.Event], None]) -> int:
        listener = socket.create_server(("127.0.0.1", 0))
        listener.settimeout(0.2)
        listeners.append(listener)

        def loop() -> None:
            while not stop.is_set():
                try:
                    conn, _ = listener.accept()
                except OSError:
                    continue
                with conn:
                    conn.recv(4096)
                    with contextlib.suppress(OSError):
                        reply(conn, stop)

        thread = threading.Thread(target=loop, daemon=True)
        thread.start()
        threads.append(thread)
        return int(listener.getsockname()[1])

    yield start
    stop.set()
    for thread in threads:
        thread.join(10)
    for listener in listeners:
        listener.close()


def test_a_reply_larger_than_the_bound_is_refused(serve):
    port = serve(lambda conn, stop: conn.sendall(HEAD + b"x" * 200_000))
    with pytest.raises(ScrapeError, match="larger than 100000 bytes"):
        fetch(f"http://127.0.0.1:{port}/metrics", 5, max_bytes=100_000)


def test_a_reply_dripping_forever_ends_at_the_timeout(serve):
    def drip(conn: socket.socket, stop: threading.Event) -> None:
        conn.sendall(HEAD)
        while not stop.wait(0.05):
            conn.sendall(b"# " + b"y" * 70_000 + b"\n")

    port = serve(drip)
    began = time.monotonic()
    with pytest.raises(ScrapeError, match="not read within"):
        fetch(f"http://127.0.0.1:{port}/metrics", 1)
    assert time.monotonic() - began < 10  # the timeout (1 s) plus one read's timeout at most


def test_a_server_that_says_nothing_is_a_scrape_error(serve):
    port = serve(lambda conn, stop: stop.wait(30))
    began = time.monotonic()
    with pytest.raises(ScrapeError, match=f"127.0.0.1:{port}"):
        NodeExporter(f"127.0.0.1:{port}", timeout_s=1).sample(0.0)
    assert time.monotonic() - began < 10


def test_a_reply_that_is_not_metrics_is_a_scrape_error(serve):
    port = serve(lambda conn, stop: conn.sendall(HEAD + b"<html>hello</html>\n"))
    with pytest.raises(ScrapeError, match="not a node_exporter"):
        NodeExporter(f"127.0.0.1:{port}").sample(0.0)


def test_an_http_error_is_a_scrape_error(serve):
    port = serve(lambda conn, stop: conn.sendall(b"HTTP/1.1 500 Oops\r\nContent-Length: 0\r\n\r\n"))
    with pytest.raises(ScrapeError, match=r"Oops|500"):
        NodeExporter(f"127.0.0.1:{port}").sample(0.0)


def test_a_redirect_is_not_followed(serve):
    target = serve(lambda conn, stop: conn.sendall(HEAD + b'node_cpu_seconds_total{cpu="0"} 1\n'))
    port = serve(
        lambda conn, stop: conn.sendall(
            f"HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:{target}/metrics\r\n"
            "Content-Length: 0\r\n\r\n".encode()
        )
    )
    with pytest.raises(ScrapeError, match=r"302|Found"):
        NodeExporter(f"127.0.0.1:{port}").sample(0.0)
