"""A Cassandra node that exits while starting is named with its log's last ERROR line: a CI
run said only "n4 exited while starting", and its log went with the machine."""

from bgbench.launchers.cassandra_nodes import _last_error


def test_the_last_error_line_of_the_log_is_given_with_the_log(tmp_path):
    (tmp_path / "cassandra.log").write_text(
        "INFO  [main] starting\n"
        "ERROR [main] first failure\n"
        "INFO  [main] still going\n"
        "ERROR [main] Exception encountered during startup: Unable to gossip with any peers\n"
        "\tat org.apache.cassandra.gms.Gossiper.doShadowRound(Gossiper.java:1)\n"
    )
    said = _last_error({"dir": str(tmp_path)})
    assert said.startswith("ERROR [main] Exception encountered during startup: Unable to gossip")
    assert said.endswith(f"(log: {tmp_path / 'cassandra.log'})")


def test_a_log_without_errors_or_missing_says_so(tmp_path):
    (tmp_path / "cassandra.log").write_text("INFO  [main] starting\n")
    assert _last_error({"dir": str(tmp_path)}).startswith("no ERROR line (log: ")
    assert _last_error({"dir": str(tmp_path / "gone")}).startswith("no ERROR line (log: ")
