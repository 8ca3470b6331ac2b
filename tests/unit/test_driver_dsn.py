"""The DSN forms the drivers read without their libraries (bgbench/drivers/*_options.py),
checked against the libraries themselves: libpq's connection strings as psycopg parses
them, MongoDB URIs as pymongo does."""

import re

import pytest
from psycopg.conninfo import conninfo_to_dict
from pymongo.uri_parser import parse_uri

from bgbench.drivers.mongodb_options import check_uri, nodes, where
from bgbench.drivers.postgres_options import (
    DSNError,
    asyncpg_dsn,
    keyword_dsn,
    parse_dsn,
    server_of,
)

LIBPQ = [
    "host=127.0.0.1 port=5432 user=postgres dbname=postgres",
    "host = a  port= 5 password='it\\'s' dbname=x\\ y",
    "host='a b' sslmode=disable",
    "",
    "host=",
    "host=a=b",
    "postgresql://bg:s%40cret@127.0.0.1:5432/bg?sslmode=disable",
    "postgres://h/d%20b",
    "postgresql://u@[::1]:5,h2/db",
    "postgresql:///db",
    "postgresql://",
    "postgresql://h:x/db",
]
REFUSED = [
    "not a dsn",
    "host=a port=1 foo=2",
    "host='unterminated",
    "postgresql://u:p@h:5/db?sslmode=x&foo=1",
]


@pytest.mark.parametrize("dsn", LIBPQ)
def test_a_libpq_connection_string_parses_as_libpq_parses_it(dsn):
    assert parse_dsn(dsn) == conninfo_to_dict(dsn)


@pytest.mark.parametrize("dsn", REFUSED)
def test_what_libpq_refuses_is_refused_with_its_reason(dsn):
    with pytest.raises(Exception) as libpq:
        conninfo_to_dict(dsn)
    with pytest.raises(DSNError) as ours:
        parse_dsn(dsn)
    assert str(ours.value) == str(libpq.value).strip()


def test_asyncpg_gets_the_same_parameters_and_messages_never_show_the_password():
    dsn = "postgresql://bg:s3cret@db.example:6432/bench?connect_timeout=3"
    assert (
        asyncpg_dsn(dsn)
        == "postgresql://?user=bg&password=s3cret&host=db.example&port=6432&dbname=bench"
    )
    assert server_of(dsn) == "db.example:6432/bench"
    with pytest.raises(ValueError, match="'options' is not supported by asyncpg"):
        asyncpg_dsn("host=h options=-csearch_path=bg")
    made = keyword_dsn(host="a b", password="x'y", port=5)
    assert conninfo_to_dict(made) == {"host": "a b", "password": "x'y", "port": "5"}


GOOD_URIS = [
    "mongodb://127.0.0.1:27017",
    "mongodb://u:p%40@h:1/?authSource=admin&readPreference=nearest",
    "mongodb://h1,h2:27018/db?replicaSet=rs",
    "mongodb://[::1]:5/",
]


@pytest.mark.parametrize("uri", GOOD_URIS)
def test_a_mongodb_uri_names_the_servers_pymongo_finds(uri):
    assert check_uri(uri) == uri
    assert nodes(uri)[1] == parse_uri(uri)["nodelist"]
    assert "p%40" not in where(uri) and "@" not in where(uri)


@pytest.mark.parametrize(
    ("uri", "says"),
    [
        ("notauri", "no mongodb:// or mongodb+srv:// scheme"),
        ("mongodb://bg:pw@127.0.0.1:99999/", "Port must be an integer"),
        ("mongodb://127.0.0.1/?nosuchoption=1", "Unknown option"),
        ("mongodb://", "at least one hostname"),
        ("mongodb://h:abc", "non-digit"),
    ],
)
def test_a_uri_pymongo_refuses_is_refused_without_repeating_it(uri, says):
    with pytest.raises(Exception):  # noqa: B017 - pymongo's own refusal, any type
        parse_uri(uri)
    with pytest.raises(ValueError, match=re.escape(says)) as refused:
        check_uri(uri)
    assert "pw" not in str(refused.value)
