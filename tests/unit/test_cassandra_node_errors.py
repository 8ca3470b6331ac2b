"""A Cassandra node that exits while starting is named with its log's last ERROR line: a CI
run said only "n4 exited while starting", and its log went with the machine. And a spare
node's JMX port, picked when the cluster started, is picked again if taken meanwhile."""

import socket

from bgbench.launchers.cassandra_nodes import _last_error
from bgbench.launchers.cassandra_server import keep_jmx_port_free
from bgbench.launchers.procs import bindable


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


def test_a_spare_nodes_jmx_port_taken_meanwhile_is_replaced_in_its_command(tmp_path):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        taken = holder.getsockname()[1]
        record = {"jmx_port": taken, "command": ["java", f"-Dcassandra.jmx.local.port={taken}",
                                                 "-Dcassandra.config=file:///n4.yaml"]}  # fmt: skip
        keep_jmx_port_free(record)
        port = record["jmx_port"]
        assert port != taken and bindable("127.0.0.1", port)
        assert record["command"] == ["java", f"-Dcassandra.jmx.local.port={port}",
                                     "-Dcassandra.config=file:///n4.yaml"]  # fmt: skip
    free = dict(record)
    keep_jmx_port_free(free)
    assert free["jmx_port"] == port  # a free port stays
