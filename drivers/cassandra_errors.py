"""What kind of failure a Cassandra error is, whichever driver raised it.

BG's Cassandra socialites run on acsylla by default and on cassandra-driver when asked
(store.options.driver); schema, loading, read-back and blocking threads use
cassandra-driver. The same refusal reaches a task as another class from each driver
(the server's Unavailable is cassandra-driver's NoHostAvailable once its retry policy has
no host left to try, acsylla's CassErrorServerUnavailable), so what is compared across
drivers is the error's kind, named here. The drivers are imported only when the error's
module is theirs: this module needs neither.
"""

# cassandra-driver's class names (cassandra, cassandra.protocol) -> kind
CASSANDRA_DRIVER_KINDS = {
    "Unavailable": "unavailable",
    "UnavailableErrorMessage": "unavailable",
    "ReadTimeout": "read timeout",
    "ReadTimeoutErrorMessage": "read timeout",
    "WriteTimeout": "write timeout",
    "WriteTimeoutErrorMessage": "write timeout",
    "ReadFailure": "read failure",
    "ReadFailureMessage": "read failure",
    "WriteFailure": "write failure",
    "WriteFailureMessage": "write failure",
    "OperationTimedOut": "client timeout",
    "OverloadedErrorMessage": "overloaded",
    "IsBootstrappingErrorMessage": "bootstrapping",
    "InvalidRequest": "invalid query",
    "InvalidRequestException": "invalid query",
    "SyntaxException": "invalid query",
    "Unauthorized": "unauthorized",
    "UnauthorizedErrorMessage": "unauthorized",
    "AuthenticationFailed": "unauthorized",
    "NoHostAvailable": "no host",
    "ConnectionException": "no host",
    "ConnectionShutdown": "no host",
}

# acsylla's class names (acsylla.errors, the C++ driver's CassError codes) -> kind
ACSYLLA_KINDS = {
    "CassErrorServerUnavailable": "unavailable",
    "CassErrorServerReadTimeout": "read timeout",
    "CassErrorServerWriteTimeout": "write timeout",
    "CassErrorServerReadFailure": "read failure",
    "CassErrorServerWriteFailure": "write failure",
    "CassErrorLibRequestTimedOut": "client timeout",
    "CassErrorServerOverloaded": "overloaded",
    "CassErrorServerIsBootstrapping": "bootstrapping",
    "CassErrorServerInvalidQuery": "invalid query",
    "CassErrorServerSyntaxError": "invalid query",
    "CassExceptionInvalidQuery": "invalid query",
    "CassExceptionSyntaxError": "invalid query",
    "CassErrorServerUnauthorized": "unauthorized",
    "CassErrorServerBadCredentials": "unauthorized",
    "CassErrorLibNoHostsAvailable": "no host",
    "CassErrorLibUnableToConnect": "no host",
    "CassExceptionConnectionError": "no host",
    "CassErrorLibRequestQueueFull": "client overloaded",
    "CassErrorLibNoStreams": "client overloaded",
}


def error_kind(exc: BaseException) -> str | None:
    """The kind of a Cassandra driver's error (unavailable, read timeout, write timeout,
    client timeout, overloaded, invalid query, no host...): "other" for another error of
    a Cassandra driver, None for an error of neither driver.

    cassandra-driver's NoHostAvailable carries the error each host gave: when they are of
    one kind (a single node's Unavailable), that is its kind."""
    name = type(exc).__name__
    module = type(exc).__module__.split(".")[0]
    if module == "acsylla":
        return ACSYLLA_KINDS.get(name, "other")
    if module != "cassandra":
        return None
    if name == "NoHostAvailable":
        errors = getattr(exc, "errors", None) or {}
        kinds = {error_kind(e) for e in errors.values() if isinstance(e, BaseException)}
        if len(kinds) == 1:
            kind = kinds.pop()
            if kind is not None:
                return kind
    return CASSANDRA_DRIVER_KINDS.get(name, "other")
