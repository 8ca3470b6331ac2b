"""The `uri` store option of every MongoDB binding: a MongoDB connection string, checked when
the settings are, so a typo is one line naming the option (pymongo takes a bare word as a
host name and the run would wait on it)."""

from typing import Annotated

from pydantic import AfterValidator
from pymongo.errors import PyMongoError
from pymongo.uri_parser import parse_uri

EXAMPLE = "use e.g. mongodb://127.0.0.1:27017 or mongodb+srv://cluster.example.com"


def check_uri(uri: str) -> str:
    """As pymongo parses it, without resolving a mongodb+srv name: checking settings looks
    nothing up. Messages never repeat the uri: it may hold a password."""
    scheme, sep, rest = uri.partition("://")
    if not sep or scheme not in ("mongodb", "mongodb+srv"):
        raise ValueError(f"not a MongoDB URI (no mongodb:// or mongodb+srv:// scheme): {EXAMPLE}")
    try:
        parse_uri("mongodb://" + rest)
    except (PyMongoError, ValueError) as exc:
        detail = (str(exc).strip() or type(exc).__name__).splitlines()[0]
        raise ValueError(f"not a MongoDB URI ({detail}): {EXAMPLE}") from None
    return uri


MongoURI = Annotated[str, AfterValidator(check_uri)]


def where(uri: str) -> str:
    """The servers a (checked) uri names, for messages: never its user, password or options."""
    scheme, _, rest = uri.partition("://")
    try:
        nodes = parse_uri("mongodb://" + rest)["nodelist"]
    except (PyMongoError, ValueError):
        return "the servers of store.options.uri"
    hosts = [f"[{host}]:{port}" if ":" in host else f"{host}:{port}" for host, port in nodes]
    if scheme == "mongodb+srv":
        return f"mongodb+srv://{nodes[0][0]}"
    return "mongodb://" + ",".join(hosts)


def brief(exc: BaseException) -> str:
    """pymongo's message on one line, without the topology a selection timeout appends."""
    text = (str(exc).strip() or type(exc).__name__).splitlines()[0]
    return text.split(", Timeout:")[0].split(" (configured timeouts")[0]
