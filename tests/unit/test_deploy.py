"""The systemd files agree with the agent they start (the Helm chart is checked by
test_helm_chart.py); the local server starter leaves the modes of the directories above a
server's alone."""

import configparser
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from tests.conftest import servers

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


def agent_help() -> str:
    out = subprocess.run(
        [sys.executable, "-m", "bgbench", "agent", "--help"], capture_output=True, text=True
    )
    return out.stdout


@pytest.mark.slow
def test_systemd_unit_starts_a_real_agent_command():
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.read(DEPLOY / "systemd" / "bgbench-agent.service")
    assert {"Unit", "Service", "Install"} <= set(unit.sections())
    exec_start = unit["Service"]["ExecStart"].split()
    assert exec_start[1:3] == ["agent", "--work-dir"]
    help_text = agent_help()
    for flag in (a for a in exec_start if a.startswith("--")):
        assert flag in help_text
    assert unit["Service"]["Restart"] == "on-failure"


@pytest.mark.slow
def test_the_environment_example_only_names_variables_the_agent_reads():
    help_text = agent_help()
    names = re.findall(
        r"^(BGBENCH_\w+)=", (DEPLOY / "systemd" / "agent.env.example").read_text(), re.M
    )
    assert names
    for name in names:
        assert name in help_text, name


def modes(path: Path) -> dict[Path, int]:
    return {p: p.stat().st_mode for p in [path, *path.parents]}


def answers(server: dict, sql: str) -> list[tuple]:
    dsn = f"host=127.0.0.1 port={server['port']} user=postgres dbname=postgres"
    with psycopg.connect(dsn, autocommit=True, connect_timeout=30) as conn:
        cursor = conn.execute(sql)
        return cursor.fetchall() if cursor.description else []


@pytest.mark.slow
@pytest.mark.integration  # starts a real PostgreSQL
def test_starting_postgres_changes_no_mode_of_a_private_parent(tmp_path):
    """Issue 24, item 4: `servers.py start postgres DIR` made every parent of DIR mode 0755,
    so a private home became world-readable."""
    private = tmp_path / "home"
    private.mkdir(mode=0o700)
    private.chmod(0o700)
    directory = private / "pg"
    before = modes(private)
    server = servers.start("postgres", directory)
    try:
        assert modes(private) == before
        assert answers(server, "SELECT 1") == [(1,)]
        answers(server, "CREATE TABLE kept AS SELECT 7 AS x")
        servers.stop(directory)
        server = servers.start("postgres", directory, server["port"])  # its data again
        assert answers(server, "SELECT x FROM kept") == [(7,)]
        assert modes(private) == before
    finally:
        servers.stop(directory)
    cluster = (directory / "pgdata").resolve().parent
    if cluster == directory:
        return  # postgres could enter tmp_path: its data is in DIR, as before
    shutil.rmtree(directory)
    other = private / "pg2"
    try:
        servers.start("postgres", other)
    finally:
        servers.stop(other)
    assert not cluster.exists()  # the cluster of a deleted directory is swept


def test_node_names_by_server_kind_without_starting_anything():
    from bgbench.launchers.nodes import PROCESS_ACTIONS, node_names

    cluster = node_names("cassandra-cluster")
    assert sorted(cluster) == ["n1", "n2", "n3", "n4"]
    assert cluster["n1"] == PROCESS_ACTIONS  # the seed stays a member
    assert cluster["n4"] == PROCESS_ACTIONS | {"add", "remove"}
    assert sorted(node_names("cassandra-dcs")) == ["n1", "n2", "n3"]
    assert "restart-cache" in node_names("memcached")["cache"]
    assert node_names("postgres") == {"postgres": PROCESS_ACTIONS}
    assert sorted(node_names("postgres-replica")) == ["primary", "standby"]
    assert node_names("postgres-replica-delayed") == node_names("postgres-replica")
    assert node_names("node-exporter") == {}


def server_json(directory: Path, info: dict) -> Path:
    (directory / "server.json").write_text(json.dumps(info))
    return directory


def test_node_actions_refuse_unknown_nodes_actions_and_bad_state_files(tmp_path):
    from bgbench.launchers.nodes import NodeActionError, act, nodes_of

    with pytest.raises(NodeActionError, match=r"^no server in"):
        nodes_of(tmp_path / "nowhere")
    (tmp_path / "server.json").write_text("{not json")
    with pytest.raises(NodeActionError, match="is not JSON"):
        act(tmp_path, "n1", "kill", 5)
    (tmp_path / "server.json").write_text(" " * (2 << 20))
    with pytest.raises(NodeActionError, match="larger than"):
        nodes_of(tmp_path)
    server_json(tmp_path, {"server": "memcached", "port": 1, "pid": 2**22 + 1})
    with pytest.raises(
        NodeActionError, match=r"^no node n2 in .* \(memcached\): known nodes cache$"
    ):
        act(tmp_path, "n2", "kill", 5)
    with pytest.raises(NodeActionError, match=r"^cache \(memcached\) cannot add: it can "):
        act(tmp_path, "cache", "add", 5)
    with pytest.raises(NodeActionError, match=r"^cache is not running$"):
        act(tmp_path, "cache", "pause", 5)
    assert [(n.name, n.state, n.member) for n in nodes_of(tmp_path)] == [("cache", "down", True)]
    server_json(tmp_path, {"server": "memcached", "pid": "x"})
    with pytest.raises(NodeActionError, match=r"server\.json has no field 'port'"):
        nodes_of(tmp_path)


def test_the_node_commands_print_their_usage_when_called_wrong(tmp_path):
    done = subprocess.run(
        [sys.executable, str(DEPLOY / "local" / "servers.py"), "node", str(tmp_path)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode != 0 and "node DIR NAME ACTION" in done.stderr
    done = subprocess.run(
        [sys.executable, str(DEPLOY / "local" / "servers.py"), "nodes", str(tmp_path)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1 and done.stderr.startswith(f"no server in {tmp_path}")


def test_nodetool_failures_are_told_by_their_reason_not_their_stack():
    from bgbench.launchers.cassandra_nodes import _first_reason

    trace = (
        "ERROR 12:00 something\njava.lang.UnsupportedOperationException: Node /127.0.0.4 is "
        "alive and owns this ID\n\tat org.apache.cassandra.Foo.bar(Foo.java:1)\n"
        "error: Node /127.0.0.4 is alive and owns this ID\n-- StackTrace --\n\tat x.y(Z.java:2)\n"
    )
    assert _first_reason(trace) == "error: Node /127.0.0.4 is alive and owns this ID"
    assert _first_reason("\tat a.b(C.java:1)\nReason here\n") == "Reason here"
    assert _first_reason("") == "no output"


def test_a_recorded_pid_that_now_runs_another_program_is_never_signalled(tmp_path):
    import os

    from bgbench.launchers.nodes import NodeActionError, act, nodes_of

    mine = os.getpid()  # this test's own process stands for a reused pid
    server_json(tmp_path, {"server": "memcached", "port": 1, "pid": mine, "paused": False})
    assert nodes_of(tmp_path)[0].state == "down"
    with pytest.raises(NodeActionError, match=r"^cache is not running$"):
        act(tmp_path, "cache", "kill", 5)
    node = {"name": "n1", "host": "127.0.0.1", "dir": str(tmp_path), "jmx_port": 1,
            "command": ["java", f"-Dcassandra.config=file://{tmp_path}/cassandra.yaml"],
            "pid": mine, "member": True, "paused": False}  # fmt: skip
    server_json(tmp_path, {"server": "cassandra", "kind": "cassandra", "port": 1,
                           "storage_port": 2, "pids": [mine], "nodes": [node]})  # fmt: skip
    assert nodes_of(tmp_path)[0].state == "down"
    with pytest.raises(NodeActionError, match=r"^kill n1: n1 is not running$"):
        act(tmp_path, "n1", "kill", 5)
