"""MySQL's options: checked without a server, and the password never shown or stored."""

import pytest
from pydantic import ValidationError

from bgbench.coordinator.configuration.config import StoreConfig
from bgbench.drivers.mysql_options import MySQLOptions
from bgbench.launchers.servers import OPTIONS_GIVEN

SECRET = "s3cr3t-Pa55"


def test_the_password_is_neither_printed_nor_written_out():
    options = MySQLOptions(password=SECRET, database="bank")
    assert options.secret == SECRET  # what the drivers send
    shown = [repr(options), str(options), options.model_dump_json(), options.where]
    assert not any(SECRET in text for text in shown), shown
    stored = StoreConfig(name="mysql", options={"password": SECRET, "user": "app"})
    assert SECRET not in stored.model_dump_json()
    assert '"user":"app"' in stored.model_dump_json()


def test_no_password_sends_an_empty_one_and_defaults_reach_a_local_server():
    options = MySQLOptions()
    assert options.secret == ""
    assert options.where == "127.0.0.1:3306/bgbench"


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"database": "bg`; DROP TABLE x"}, "database"),
        ({"pool_min": 9, "pool_max": 2}, "pool_min"),
        ({"port": 70000}, "port"),
        ({"isolation": "snapshot"}, "isolation"),
        ({"host": "db host"}, "host"),
        ({"pasword": "x"}, "pasword"),
    ],
)
def test_bad_options_are_refused_naming_the_field(options, field):
    with pytest.raises(ValidationError) as raised:
        MySQLOptions(**options)
    assert field in str(raised.value)


def test_every_connection_starts_at_the_isolation_and_timeouts_set():
    options = MySQLOptions(isolation="read committed", statement_timeout_s=2.5,
                           lock_wait_timeout_s=3)  # fmt: skip
    assert options.session_settings() == (
        "SET SESSION tx_isolation = 'READ-COMMITTED', max_statement_time = 2.500, "
        "innodb_lock_wait_timeout = 3"
    )
    assert "snapshot" not in options.session_settings()  # older MariaDB lacks it
    snapshot = MySQLOptions(snapshot_isolation=True).session_settings()
    assert snapshot.endswith(", innodb_snapshot_isolation = ON")
    assert options.read_timeout_s > 2.5  # the client outwaits the server's own limit
    assert MySQLOptions(statement_timeout_s=0).read_timeout_s > 0  # and never waits forever


def test_the_options_a_started_server_gives_are_valid_options():
    assert MySQLOptions(**OPTIONS_GIVEN["mysql"]).database == "bg_check"
