"""drivers/cassandra_errors.error_kind: one kind for the same failure from either driver."""

import acsylla
import cassandra
from cassandra.cluster import NoHostAvailable

from bgbench.drivers.cassandra_errors import error_kind


def test_the_same_refusal_from_either_driver_is_one_kind():
    refused = "Cannot achieve consistency level ALL"
    assert error_kind(acsylla.errors.CassErrorServerUnavailable(refused)) == "unavailable"
    assert error_kind(cassandra.Unavailable(refused)) == "unavailable"
    # cassandra-driver's retry policy wraps it once no other host is left: its kind stays
    assert error_kind(NoHostAvailable("no host", {"h1": cassandra.Unavailable(refused)})) == (
        "unavailable"
    )
    assert error_kind(acsylla.errors.CassErrorServerReadTimeout("t")) == "read timeout"
    assert error_kind(cassandra.ReadTimeout("t")) == "read timeout"
    assert error_kind(acsylla.errors.CassErrorLibRequestTimedOut("t")) == "client timeout"
    assert error_kind(cassandra.OperationTimedOut("t")) == "client timeout"


def test_mixed_or_unknown_errors():
    mixed = NoHostAvailable("no host", {"h1": cassandra.Unavailable("u"), "h2": OSError("x")})
    assert error_kind(mixed) == "no host"
    assert error_kind(acsylla.errors.CassErrorLibInternalError("x")) == "other"
    assert error_kind(ValueError("not a driver's")) is None
