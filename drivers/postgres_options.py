"""PostgreSQL's options and DSN forms, without the driver library.

Campaigns hand a binding a libpq connection string, as keywords
(`host=H port=P user=U dbname=D`) or as a URI (`postgresql://user@host:port/dbname`).
psycopg (loading, tools) takes it as given; asyncpg (the runs) gets the same parameters
as the URI it reads (`asyncpg_dsn`). Both forms are parsed here as libpq parses them, so
checking settings imports neither driver.
"""

from typing import Annotated, ClassVar, Literal
from urllib.parse import unquote, urlencode

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

Isolation = Literal["read committed", "repeatable read", "serializable"]
ReadFrom = Literal["primary", "replica"]
DEFAULT_DSN = "host=127.0.0.1 port=5432 user=postgres dbname=postgres"
DSN_FORMS = "use 'host=H port=P user=U dbname=D' or postgresql://user@host:port/dbname"

# libpq's connection keywords (PQconndefaults of libpq 17/18)
LIBPQ_KEYWORDS = frozenset(
    {
        "application_name", "channel_binding", "client_encoding", "connect_timeout", "dbname",
        "fallback_application_name", "gssdelegation", "gssencmode", "gsslib", "host",
        "hostaddr", "keepalives", "keepalives_count", "keepalives_idle", "keepalives_interval",
        "krbsrvname", "load_balance_hosts", "max_protocol_version", "min_protocol_version",
        "oauth_client_id", "oauth_client_secret", "oauth_issuer", "oauth_scope", "options",
        "passfile", "password", "port", "replication", "require_auth", "requirepeer",
        "scram_client_key", "scram_server_key", "service", "ssl_max_protocol_version",
        "ssl_min_protocol_version", "sslcert", "sslcertmode", "sslcompression", "sslcrl",
        "sslcrldir", "sslkey", "sslkeylogfile", "sslmode", "sslnegotiation", "sslpassword",
        "sslrootcert", "sslsni", "target_session_attrs", "tcp_user_timeout", "user",
    }
)  # fmt: skip
# The libpq keywords asyncpg reads from a URI's query (the rest it would send to the server
# as settings); connect_timeout gives way to connect_timeout_s, as it does for psycopg.
ASYNCPG_KEYWORDS = frozenset(
    {
        "host", "port", "dbname", "user", "password", "passfile", "service",
        "application_name", "target_session_attrs", "sslmode", "sslcert", "sslkey",
        "sslrootcert", "sslcrl", "sslpassword", "sslnegotiation", "ssl_min_protocol_version",
        "ssl_max_protocol_version", "krbsrvname", "gsslib",
    }
)  # fmt: skip
URI_PREFIXES = ("postgresql://", "postgres://")


class DSNError(ValueError):
    """A connection string libpq would refuse (the message never repeats a value)."""


def parse_dsn(dsn: str) -> dict[str, str]:
    """The parameters of a libpq connection string, keywords or URI, as libpq reads them."""
    if dsn.startswith(URI_PREFIXES):
        params = _parse_uri(dsn.split("://", 1)[1])
    else:
        params = _parse_keywords(dsn)
    for key in params:
        if key not in LIBPQ_KEYWORDS:
            raise DSNError(f'invalid connection option "{key}"')
    return params


def _parse_keywords(dsn: str) -> dict[str, str]:
    params: dict[str, str] = {}
    i, n = 0, len(dsn)
    while True:
        while i < n and dsn[i].isspace():
            i += 1
        if i >= n:
            return params
        start = i
        while i < n and dsn[i] != "=" and not dsn[i].isspace():
            i += 1
        key = dsn[start:i]
        while i < n and dsn[i].isspace():
            i += 1
        if i >= n or dsn[i] != "=":
            raise DSNError(f'missing "=" after "{key}" in connection info string')
        i += 1
        while i < n and dsn[i].isspace():
            i += 1
        value, i = _value(dsn, i)
        params[key] = value


def _value(dsn: str, i: int) -> tuple[str, int]:
    """One value from position i (quoted or not, backslash escapes): it, and where it ends."""
    out: list[str] = []
    n = len(dsn)
    quoted = i < n and dsn[i] == "'"
    i += quoted
    while i < n:
        c = dsn[i]
        if quoted and c == "'":
            return "".join(out), i + 1
        if not quoted and c.isspace():
            break
        if c == "\\" and i + 1 < n:
            i += 1
            c = dsn[i]
        out.append(c)
        i += 1
    if quoted:
        raise DSNError("unterminated quoted string in connection info string")
    return "".join(out), i


def _parse_uri(rest: str) -> dict[str, str]:
    params: dict[str, str] = {}
    rest, _, query = rest.partition("?")
    netloc, slash, dbname = rest.partition("/")
    if "@" in netloc:
        userinfo, _, netloc = netloc.rpartition("@")
        user, colon, password = userinfo.partition(":")
        if user:
            params["user"] = unquote(user)
        if colon:
            params["password"] = unquote(password)
    hosts, ports = [], []
    for node in netloc.split(",") if netloc else []:
        host, port = _host_port(node)
        hosts.append(unquote(host))
        ports.append(port)
    if any(hosts):
        params["host"] = ",".join(hosts)
    if any(ports):
        params["port"] = ",".join(ports)
    if slash and dbname:
        params["dbname"] = unquote(dbname)
    for pair in query.split("&") if query else []:
        key, eq, value = pair.partition("=")
        if not eq:
            raise DSNError(f'missing key/value separator "=" in URI query parameter: "{key}"')
        key = unquote(key)
        if key not in LIBPQ_KEYWORDS:
            raise DSNError(f'invalid URI query parameter: "{key}"')
        params[key] = unquote(value)
    return params


def _host_port(node: str) -> tuple[str, str]:
    if node.startswith("["):
        host, bracket, after = node[1:].partition("]")
        if not bracket:
            raise DSNError('missing "]" in IPv6 host address in URI')
        return host, after[1:] if after.startswith(":") else ""
    host, _, port = node.partition(":")
    return host, port


def asyncpg_dsn(dsn: str) -> str:
    """The libpq connection string (keywords or URI) as the URI asyncpg reads."""
    params = parse_dsn(dsn)
    params.pop("connect_timeout", None)
    if "hostaddr" in params:  # asyncpg has no separate address to connect to
        params["host"] = params.pop("hostaddr")
    unknown = sorted(set(params) - ASYNCPG_KEYWORDS)
    if unknown:
        raise ValueError(
            f"libpq keyword {unknown[0]!r} is not supported by asyncpg, the driver the runs "
            f"use: remove it (supported: {', '.join(sorted(ASYNCPG_KEYWORDS))})"
        )
    return "postgresql://?" + urlencode(params)


def server_of(dsn: str) -> str:
    """host:port/dbname of a connection string, never its password."""
    try:
        info = parse_dsn(dsn)
    except DSNError:
        return "?"
    host = info.get("host") or info.get("hostaddr") or "localhost"
    return f"{host}:{info.get('port') or 5432}/{info.get('dbname') or info.get('user') or ''}"


def keyword_dsn(**params: str | int) -> str:
    """A libpq keyword connection string from parameters (values quoted as libpq wants)."""

    def quote(value: str | int) -> str:
        text = str(value)
        if text and not any(c.isspace() or c in "'\\" for c in text):
            return text
        return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"

    return " ".join(f"{k}={quote(v)}" for k, v in params.items())


class PostgresOptions(BaseModel):
    """The options every PostgreSQL binding takes; a workload's binding may add its own."""

    model_config = ConfigDict(extra="forbid")

    dsn: str = Field(DEFAULT_DSN, description="libpq connection string: keywords or URI")
    isolation: Isolation = "read committed"
    pool_max: Annotated[int, Field(ge=1, le=10_000)] = 512
    connect_timeout_s: Annotated[float, Field(gt=0)] = 10.0
    replica_dsn: str | None = Field(
        None,
        description="libpq connection string of a hot standby of the dsn's server (the same "
        "database): where the runs' reads go when read_from is replica",
    )
    read_from: ReadFrom = Field(
        "primary",
        description="replica: the read actions of the runs go to replica_dsn, everything else "
        "(writes, schema, loading, read-back) to dsn",
    )

    @field_validator("dsn", "replica_dsn")
    @classmethod
    def _libpq(cls, dsn: str | None) -> str | None:
        try:
            if dsn is not None:
                asyncpg_dsn(dsn)
        except DSNError as exc:
            raise ValueError(f"not a libpq connection string ({exc}): {DSN_FORMS}") from None
        return dsn

    @field_validator("read_from")
    @classmethod
    def _replica_named(cls, read_from: ReadFrom, info: ValidationInfo) -> ReadFrom:
        if read_from != "replica" or "replica_dsn" not in info.data:  # a refused replica_dsn
            return read_from  # has its own line
        if not info.data["replica_dsn"]:
            raise ValueError(
                "replica needs replica_dsn, the hot standby's connection string "
                "(deploy/local's postgres-replica server gives both)"
            )
        if info.data.get("isolation") == "serializable":
            raise ValueError(
                "replica reads cannot be serializable (a hot standby runs no serializable "
                "transaction): use isolation 'repeatable read' or 'read committed'"
            )
        return read_from

    @property
    def reads_dsn(self) -> str:
        """Where the runs' read actions go: the standby's dsn, or the primary's."""
        if self.read_from == "replica" and self.replica_dsn:
            return self.replica_dsn
        return self.dsn


LOCK_TIMEOUT_MS = "how long a transaction waits for a row lock before it aborts, ms"


class PostgresTxOptions(PostgresOptions):
    """The options of a transactional binding (its concurrency_control mixin is the
    SDK's): the isolation follows concurrency_control, lock_timeout_ms bounds a lock wait
    (PostgreSQL's lock_timeout; a wait that long aborts the attempt as lock_timeout)."""

    binding_label: ClassVar[str] = "the binding"

    lock_timeout_ms: Annotated[int, Field(ge=1, le=3_600_000, description=LOCK_TIMEOUT_MS)] = 5000

    @field_validator("isolation")
    @classmethod
    def _isolation_follows_control(cls, isolation: Isolation) -> Isolation:
        if isolation != "read committed":
            raise ValueError(
                f"{cls.binding_label} sets each transaction's isolation from concurrency_control "
                "(pessimistic: read committed with row locks, optimistic: serializable): "
                "leave isolation out"
            )
        return isolation
