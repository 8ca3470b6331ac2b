"""`bgbench deck`: serve the deck (deck_app.py) with uvicorn until interrupted."""

import ipaddress
import socket
from pathlib import Path
from typing import Annotated

import typer

from bgbench import extras
from bgbench.errors import UserError


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_binding(host: str, token: str | None) -> None:
    """Beyond loopback, only with a token (every request must then carry it)."""
    if not is_loopback(host) and not token:
        raise UserError(
            f"--host {host}: the deck starts and stops ratings, so it listens beyond loopback "
            "only with --token (or $BGBENCH_DECK_TOKEN), which every request must then carry"
        )


def listen(host: str, port: int) -> socket.socket:
    """The deck's listening socket, bound before anything else starts."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise UserError(f"--host {host}: {exc.strerror}; give an address of this host") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise UserError(
            f"--port {port}: cannot listen on {host}:{port} ({exc.strerror}); choose another port"
        ) from None
    except OverflowError:
        sock.close()
        raise UserError(f"--port {port}: not a port; give 1 to 65535") from None
    sock.listen(128)
    return sock


def deck(
    port: Annotated[int, typer.Option(min=1, max=65535, help="port to listen on")] = 8765,
    host: Annotated[
        str, typer.Option(help="address to listen on (beyond loopback only with --token)")
    ] = "127.0.0.1",
    results: Annotated[
        str,
        typer.Option(
            help="results directory the deck's ratings record into, or a postgresql:// store "
            "(its files then go under ./results)"
        ),
    ] = "results",
    settings_dir: Annotated[
        Path | None,
        typer.Option(help="where edited settings files are saved (default RESULTS/deck/settings)"),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(
            envvar="BGBENCH_DECK_TOKEN",
            show_envvar=True,
            help="every request must carry it (Authorization: Bearer T, or ?token=T)",
        ),
    ] = None,
    allow_host: Annotated[
        list[str] | None,
        typer.Option(
            help="also answer requests for this host name (NAME or NAME:PORT; repeatable), "
            "e.g. the name of a proxy in front of the deck; any other Host is refused"
        ),
    ] = None,
) -> None:
    """A local web deck: edit and check settings, start, watch, stop and resume ratings,
    browse past ones. Each rating runs as its own bgbench process."""
    extras.require_extra("deck", "bgbench deck")
    import uvicorn  # here: the web stack costs every other command nothing

    from bgbench.coordinator.interfaces.deck_app import DeckConfig, create_app
    from bgbench.coordinator.interfaces.deck_guard import HostRule, check_allow_host
    from bgbench.coordinator.rating.api import results_path
    from bgbench.coordinator.storage.location import location

    check_binding(host, token)
    for name in allow_host or []:
        check_allow_host(name)
    where = location(results)
    results_dir = results_path(where if isinstance(where, Path) else Path("results"))
    sock = listen(host, port)
    address, bound_port = sock.getsockname()[:2]
    hosts = HostRule.for_binding(host, address, bound_port, allow_host or [])
    settings = settings_dir or results_dir / "deck" / "settings"
    url = None if isinstance(where, Path) else where
    config = DeckConfig(results_dir, settings, hosts, token or None, url)
    server = uvicorn.Server(
        uvicorn.Config(create_app(config), log_level="warning", access_log=False)
    )
    shown = f"[{host}]" if ":" in host else host
    print(f"bgbench deck on http://{shown}:{sock.getsockname()[1]}/ (results in {config.where})")
    if token:
        print("every request must carry the token (?token=... in the address)")
    server.run(sockets=[sock])
