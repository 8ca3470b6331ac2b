"""How the tests reach each store binding's real server.

Every binding registered in pyproject.toml must appear here with a function that
yields its options against a running server (started by the session fixtures in
tests/conftest.py through deploy/local/). A binding missing here fails the contract
suite rather than being skipped.
"""

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from pymemcache.client.base import Client

from bgbench.workloads.bg.config import BGDatabaseConfig
from bgbench.workloads.bg.generator import CONFIRMED, PENDING, Fragment, FragmentPlan
from bgbench.workloads.registry import make_binding
from tests.conftest import fresh_database, fresh_mysql_database


def loaded(name: str, options: dict, db: BGDatabaseConfig, plan: FragmentPlan):  # type: ignore[no-untyped-def]
    """A binding with its schema and fragment 0 loaded; the binding and the fragment."""
    binding = make_binding("bg", name, options)
    binding.create_schema(db)
    fragment = Fragment(db, plan, 0)
    binding.load_fragment(fragment)
    return binding, fragment


def relations(f: Fragment) -> tuple[dict[int, set[int]], dict[int, set[int]]]:
    """A fragment's generated friendships and invitations: friends, and inviters by invitee."""
    friends: dict[int, set[int]] = {}
    invited_by: dict[int, set[int]] = {}
    for a, b, st in f.friendships.tolist():
        if st == CONFIRMED:
            friends.setdefault(a, set()).add(b)
            friends.setdefault(b, set()).add(a)
        elif st == PENDING:
            invited_by.setdefault(b, set()).add(a)
    return friends, invited_by


def sqlite_server(tmp: Path, request: pytest.FixtureRequest) -> Iterator[dict]:
    yield {"path": str(tmp / "bg.sqlite")}


def null_server(tmp: Path, request: pytest.FixtureRequest) -> Iterator[dict]:
    yield {}


def postgres_server(tmp: Path, request: pytest.FixtureRequest) -> Iterator[dict]:
    pg = request.getfixturevalue("postgres_server")
    yield {"dsn": fresh_database(pg)}


def mysql_server(tmp: Path, request: pytest.FixtureRequest) -> Iterator[dict]:
    yield fresh_mysql_database(request.getfixturevalue("mysql_server"))


def casql_server(tmp: Path, request: pytest.FixtureRequest, **extra) -> Iterator[dict]:
    pg = request.getfixturevalue("postgres_server")
    mc = request.getfixturevalue("memcached_server")
    Client(("127.0.0.1", mc["port"])).flush_all(noreply=False)
    yield {"dsn": fresh_database(pg), "memcached": f"127.0.0.1:{mc['port']}", **extra}


def mongodb_server(tmp: Path, request: pytest.FixtureRequest) -> Iterator[dict]:
    server = request.getfixturevalue("mongo_wire_server")
    yield {
        "uri": f"mongodb://127.0.0.1:{server['port']}",
        "database": "bg_" + uuid.uuid4().hex[:12],
        "server_name": server["name"],
    }


def cassandra_server(tmp: Path, request: pytest.FixtureRequest) -> Iterator[dict]:
    server = request.getfixturevalue("cassandra_server")
    yield {"hosts": server["hosts"], "port": server["port"], "keyspace": _unique("bg")}


def hbase_server(tmp: Path, request: pytest.FixtureRequest) -> Iterator[dict]:
    server = request.getfixturevalue("hbase_server")
    yield {
        "port": server["port"],
        "table_prefix": _unique("bg") + "_",
        "server_name": server["name"],
    }


def riak_server(tmp: Path, request: pytest.FixtureRequest) -> Iterator[dict]:
    url = request.getfixturevalue("riak_url")
    emulated = not os.environ.get("BGBENCH_RIAK_URL")
    yield {
        "url": url,
        "bucket_prefix": _unique("bg") + "_",
        "server_name": "Riak KV emulator (tests/riak_emulator.py)" if emulated else "Riak KV",
    }


def _unique(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:12]}"


SERVERS: dict[str, Callable[[Path, pytest.FixtureRequest], Iterator[dict]]] = {
    "sqlite": sqlite_server,
    "null": null_server,
    "postgres": postgres_server,
    "casql": casql_server,
    "mongodb": mongodb_server,
    "cassandra": cassandra_server,
    "hbase": hbase_server,
    "riak": riak_server,
    "mysql": mysql_server,
}
