"""memcached: blocking commands on pymemcache, a socialite's own asyncio connection on
aiomcache. A memcached that cannot be reached at first contact (preparing) is the user's
to fix, named as `store.options.memcached`; later it is a fault of the store."""

from collections.abc import Callable
from typing import TypeVar

import aiomcache
from pymemcache.client.base import Client  # type: ignore[import-untyped]
from pymemcache.exceptions import MemcacheError  # type: ignore[import-untyped]

from bgbench.drivers import first_line
from bgbench.drivers.memcached_options import MemcachedOptions
from bgbench.errors import StoreError, UserError

__all__ = ["Client", "MemcacheError", "MemcachedOptions", "async_client", "client", "command"]

T = TypeVar("T")


def client(options: MemcachedOptions) -> Client:
    """A blocking client (it connects on its first command)."""
    return Client(
        options.address, connect_timeout=options.timeout_s, timeout=options.timeout_s,
        default_noreply=False,
    )  # fmt: skip


def async_client(options: MemcachedOptions) -> aiomcache.Client:
    """A socialite's own connection (pool_size 1), opened by its first command."""
    host, port = options.address
    return aiomcache.Client(host, port, pool_size=1)


def command(
    options: MemcachedOptions, run: Callable[[Client], T], first_contact: bool = False
) -> T:
    """A blocking command on a connection of its own, closed after."""
    conn = client(options)
    try:
        return run(conn)
    except (OSError, MemcacheError) as exc:
        where = options.memcached
        if first_contact:
            raise UserError(
                f"store.options.memcached: cannot reach memcached at {where} "
                f"({first_line(exc)}): correct the address, or start memcached"
            ) from None
        raise StoreError(f"cannot reach memcached at {where}: {first_line(exc)}") from None
    finally:
        conn.close()


def version(options: MemcachedOptions, first_contact: bool = False) -> str:
    version: bytes = command(options, Client.version, first_contact)
    return version.decode()
