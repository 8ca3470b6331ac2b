"""MySQL's options (MariaDB's too), without the driver libraries.

A binding names its server by fields, not by a URI: host, port, user, password and
database. The password is a `SecretStr`: its repr and every message show `**********`,
and the results store replaces it with `***` (a field named password is a secret there,
coordinator/configuration/redaction.py), so it is never printed or stored. Checking
settings imports neither asyncmy nor PyMySQL.
"""

import math
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

Isolation = Literal["read uncommitted", "read committed", "repeatable read", "serializable"]
DEFAULT_PORT = 3306
# InnoDB's names of the isolation levels (SET SESSION tx_isolation = ...)
TX_ISOLATION = {
    "read uncommitted": "READ-UNCOMMITTED",
    "read committed": "READ-COMMITTED",
    "repeatable read": "REPEATABLE-READ",
    "serializable": "SERIALIZABLE",
}


class MySQLOptions(BaseModel):
    """The options every MySQL binding takes; a workload's binding may add its own."""

    model_config = ConfigDict(extra="forbid")

    host: str = Field("127.0.0.1", min_length=1, max_length=255, pattern=r"^[A-Za-z0-9_.:-]+$")
    port: Annotated[int, Field(ge=1, le=65535)] = DEFAULT_PORT
    user: str = Field("root", min_length=1, max_length=80)
    password: SecretStr | None = Field(None, description="never printed nor stored")
    database: str = Field(
        "bgbench",
        pattern=r"^[A-Za-z0-9_]{1,64}$",
        description="made when missing (create_schema); letters, digits and _",
    )
    isolation: Isolation = Field(
        "repeatable read", description="the sessions' transaction isolation (InnoDB's default)"
    )
    pool_min: Annotated[int, Field(ge=0, le=10_000)] = 0
    pool_max: Annotated[int, Field(ge=1, le=10_000)] = 512
    connect_timeout_s: Annotated[float, Field(gt=0, le=3600)] = 10.0
    statement_timeout_s: Annotated[float, Field(ge=0, le=86_400)] = Field(
        60.0,
        description="the server stops a statement running longer (max_statement_time; 0: "
        "never); the client gives up on an answer after this and connect_timeout_s",
    )
    lock_wait_timeout_s: Annotated[int, Field(ge=1, le=86_400)] = Field(
        50, description="how long a statement waits for a row lock (innodb_lock_wait_timeout)"
    )

    snapshot_isolation: bool = Field(
        False,
        description="MariaDB's innodb_snapshot_isolation: at repeatable read, writing a row "
        "changed since the transaction's snapshot fails (1020, a conflict) instead of "
        "overwriting it (MariaDB 10.6.18, 10.11.8 and later)",
    )

    @model_validator(mode="after")
    def _pool(self) -> "MySQLOptions":
        if self.pool_min > self.pool_max:
            raise ValueError(f"pool_min ({self.pool_min}) exceeds pool_max ({self.pool_max})")
        return self

    @property
    def where(self) -> str:
        """host:port/database, for messages: never the user's password."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}/{self.database}"

    @property
    def level(self) -> Isolation:
        """The sessions' isolation level (a workload's options may derive it)."""
        return self.isolation

    @property
    def secret(self) -> str:
        """The password the drivers send ('' when none)."""
        return self.password.get_secret_value() if self.password is not None else ""

    @property
    def read_timeout_s(self) -> float:
        """How long the client waits for an answer: the server's statement limit and then
        some; with no statement limit, an hour (nothing waits forever)."""
        if self.statement_timeout_s == 0:
            return 3600.0
        return self.statement_timeout_s + self.connect_timeout_s

    def session_settings(self) -> str:
        """The statement every connection runs first: isolation and timeouts (MariaDB's
        names)."""
        return (
            f"SET SESSION tx_isolation = '{TX_ISOLATION[self.level]}', "
            f"max_statement_time = {self.statement_timeout_s:.3f}, "
            f"innodb_lock_wait_timeout = {self.lock_wait_timeout_s}"
            + (", innodb_snapshot_isolation = ON" if self.snapshot_isolation else "")
        )


LOCK_TIMEOUT_MS = "how long a transaction waits for a row lock before it aborts, ms"
MYSQL_SECONDS = " (InnoDB waits whole seconds: rounded up; default: lock_wait_timeout_s)"


class MySQLTxOptions(MySQLOptions):
    """The options of a transactional binding (its concurrency_control mixin is the
    SDK's): lock_timeout_ms, when given, sets innodb_lock_wait_timeout (lock_wait)."""

    lock_timeout_ms: Annotated[
        int | None, Field(ge=1, le=3_600_000, description=LOCK_TIMEOUT_MS + MYSQL_SECONDS)
    ] = None

    @model_validator(mode="after")
    def _lock_wait_in_seconds(self) -> "MySQLTxOptions":
        lock_wait(self)
        return self


def lock_wait(options: MySQLOptions) -> None:
    """lock_timeout_ms as InnoDB's whole seconds (innodb_lock_wait_timeout), rounded up."""
    wait_ms = getattr(options, "lock_timeout_ms", None)
    if wait_ms is None:
        return
    if "lock_wait_timeout_s" in options.model_fields_set:
        raise ValueError("set lock_timeout_ms or lock_wait_timeout_s, not both")
    options.lock_wait_timeout_s = math.ceil(wait_ms / 1000)
