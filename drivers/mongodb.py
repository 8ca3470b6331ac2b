"""MongoDB (pymongo): blocking clients for schema, loading, read-back and describe;
one AsyncMongoClient per event loop for socialites (pymongo's native asyncio driver).

Errors name the server as the options' `server_name` at the uri's hosts, never the uri
(it may hold a password) nor the topology a selection timeout appends.
"""

from typing import Any

import pymongo
from pymongo import AsyncMongoClient, ReadPreference, WriteConcern
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.database import Database
from pymongo.errors import PyMongoError

from bgbench.drivers.loops import PerLoop
from bgbench.drivers.mongodb_options import MongoOptions, MongoURI, check_uri, where
from bgbench.errors import StoreError

__all__ = [
    "READ_PREFERENCES",
    "MongoOptions",
    "MongoURI",
    "PerLoop",
    "PyMongoError",
    "async_client",
    "brief",
    "check_uri",
    "client",
    "client_options",
    "concern",
    "server_version",
    "unreachable",
    "where",
]

Document = dict[str, Any]
READ_PREFERENCES = {
    "primary": ReadPreference.PRIMARY,
    "primaryPreferred": ReadPreference.PRIMARY_PREFERRED,
    "secondary": ReadPreference.SECONDARY,
    "secondaryPreferred": ReadPreference.SECONDARY_PREFERRED,
    "nearest": ReadPreference.NEAREST,
}


def client_options(options: MongoOptions) -> dict[str, Any]:
    return {
        "serverSelectionTimeoutMS": options.timeout_ms,
        "socketTimeoutMS": options.timeout_ms,
        "maxPoolSize": options.pool_max,
    }


def concern(w: str | int, journal: bool, read_preference: str) -> dict[str, Any]:
    """get_database's keywords for a write concern (w, j) and a read preference by name."""
    return {
        "write_concern": WriteConcern(w=w, j=journal or None),
        "read_preference": READ_PREFERENCES[read_preference],
    }


def client(options: MongoOptions, **overrides: Any) -> pymongo.MongoClient[Document]:
    """A blocking client (it connects on first use); `overrides` replace client options."""
    return pymongo.MongoClient(options.uri, **{**client_options(options), **overrides})


def async_client(options: MongoOptions, **overrides: Any) -> AsyncMongoClient[Document]:
    """An asynchronous client: it binds itself to the loop it first runs on (PerLoop)."""
    return AsyncMongoClient(options.uri, **{**client_options(options), **overrides})


def brief(exc: BaseException) -> str:
    """pymongo's message on one line, without the topology a selection timeout appends."""
    text = (str(exc).strip() or type(exc).__name__).splitlines()[0]
    return text.split(", Timeout:")[0].split(" (configured timeouts")[0]


def unreachable(options: MongoOptions, exc: BaseException) -> StoreError:
    return StoreError(f"cannot reach {options.server_name} at {where(options.uri)}: {brief(exc)}")


def server_version(db: Database[Document] | pymongo.MongoClient[Document]) -> str:
    """The MongoDB version the server reports (MongoDB-wire servers report one too)."""
    admin = db.client.admin if isinstance(db, Database) else db.admin
    return str(admin.command("buildinfo").get("version", "?"))


AsyncDocuments = AsyncDatabase[Document]
