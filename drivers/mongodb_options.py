"""MongoDB's options and its URI form (`mongodb://` or `mongodb+srv://`), checked without
the driver library: a typo is one line naming the option when the settings are checked
(pymongo would take a bare word as a host name and the run would wait on it). Messages
never repeat the uri: it may hold a password."""

from typing import Annotated, Literal
from urllib.parse import unquote

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

EXAMPLE = "use e.g. mongodb://127.0.0.1:27017 or mongodb+srv://cluster.example.com"
ReadPreferenceName = Literal[
    "primary", "primaryPreferred", "secondary", "secondaryPreferred", "nearest"
]
# the connection-string options pymongo knows (lower case: they are case-insensitive)
URI_OPTIONS = frozenset(
    {
        "appname", "authmechanism", "authmechanismproperties", "authsource", "compressors",
        "connect", "connecttimeoutms", "datetime_conversion", "directconnection", "driver",
        "enableoverloadretargeting", "fsync", "heartbeatfrequencyms", "journal",
        "loadbalanced", "localthresholdms", "maxadaptiveretries", "maxconnecting",
        "maxidletimems", "maxpoolsize", "maxstalenessseconds", "minpoolsize",
        "readconcernlevel", "readpreference", "readpreferencetags", "replicaset",
        "retryreads", "retrywrites", "server_api", "servermonitoringmode",
        "serverselectiontimeoutms", "sockettimeoutms", "srvallowedhostssuffix", "srvmaxhosts",
        "srvservicename", "ssl", "timeoutms", "tls", "tlsallowinvalidcertificates",
        "tlsallowinvalidhostnames", "tlscafile", "tlscertificatekeyfile",
        "tlscertificatekeyfilepassword", "tlscrlfile", "tlsdisableocspendpointcheck",
        "tlsinsecure", "tz_aware", "unicode_decode_error_handler", "uuidrepresentation", "w",
        "waitqueuemultiple", "waitqueuetimeoutms", "wtimeoutms", "zlibcompressionlevel",
    }
)  # fmt: skip
DEFAULT_PORT = 27017


def nodes(uri: str) -> tuple[str, list[tuple[str, int]]]:
    """The scheme and the (host, port) list of a MongoDB URI; ValueError naming what is
    wrong (never a value of the uri)."""
    scheme, sep, rest = uri.partition("://")
    if not sep or scheme not in ("mongodb", "mongodb+srv"):
        raise ValueError("no mongodb:// or mongodb+srv:// scheme")
    rest, _, query = rest.partition("?")
    netloc = rest.partition("/")[0]
    netloc = netloc.rpartition("@")[2]
    if not netloc:
        raise ValueError("Must provide at least one hostname or IP")
    found = [_node(node) for node in netloc.split(",")]
    for pair in query.split("&") if query else []:
        key, eq, _ = pair.partition("=")
        if not eq:
            raise ValueError("MongoDB URI options are key=value pairs")
        if unquote(key).lower() not in URI_OPTIONS:
            raise ValueError(f"Unknown option {unquote(key)}")
    return scheme, found


def _node(node: str) -> tuple[str, int]:
    if not node:
        raise ValueError("Empty host (or extra comma in host list)")
    if node.startswith("["):
        host, bracket, after = node[1:].partition("]")
        if not bracket or (after and not after.startswith(":")):
            raise ValueError("an IPv6 address literal must be enclosed in '[' and ']'")
        port = after[1:]
    else:
        host, _, port = node.partition(":")
        if ":" in port:
            raise ValueError("Reserved characters such as ':' must be escaped")
    if not port:
        return unquote(host), DEFAULT_PORT
    if not port.isdigit():
        raise ValueError("Port contains non-digit characters")
    if not 0 < int(port) < 65536:
        raise ValueError("Port must be an integer between 0 and 65535")
    return unquote(host), int(port)


def check_uri(uri: str) -> str:
    try:
        nodes(uri)
    except ValueError as exc:
        raise ValueError(f"not a MongoDB URI ({exc}): {EXAMPLE}") from None
    return uri


MongoURI = Annotated[str, AfterValidator(check_uri)]


def where(uri: str) -> str:
    """The servers a (checked) uri names, for messages: never its user, password or options."""
    try:
        scheme, found = nodes(uri)
    except ValueError:
        return "the servers of store.options.uri"
    if scheme == "mongodb+srv":
        return f"mongodb+srv://{found[0][0]}"
    return "mongodb://" + ",".join(
        f"[{host}]:{port}" if ":" in host else f"{host}:{port}" for host, port in found
    )


class MongoOptions(BaseModel):
    """The options every MongoDB binding takes; a workload's binding sets its own default
    database and adds its consistency options."""

    model_config = ConfigDict(extra="forbid")

    uri: MongoURI = "mongodb://127.0.0.1:27017"
    database: str = "bgbench"
    server_name: str = Field(
        "MongoDB", description="what the server is (SecantusDB, FerretDB 1.24, MongoDB 7.0...)"
    )
    timeout_ms: Annotated[int, Field(ge=100)] = 10_000
    pool_max: Annotated[int, Field(ge=1)] = 512
