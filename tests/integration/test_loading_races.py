"""Loading through real agents, many load processes at once (issue 11, defect 2).

Every load process used to create the schema before loading its fragment while the others
loaded theirs: PostgreSQL's CREATE INDEX IF NOT EXISTS waits for a ShareLock behind a
loading transaction that waits for it (DeadlockDetected), and SQLite's statements that read
before they write failed at once with "database is locked". Now the coordinator has one
process create the schema before any load, and SQLite loads one process at a time.
"""

import json
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from bgbench.coordinator.configuration.config import load_settings, parse_override
from bgbench.coordinator.execution.agents import LocalAgents, spawn_local_agents
from bgbench.coordinator.execution.experiment import Cluster
from bgbench.errors import BGBenchError
from bgbench.protos import worker_pb2 as pb
from tests.conftest import fresh_database

AGENTS, PROCESSES, USERS, ROUNDS = 2, 4, 600, 10


@pytest.fixture(scope="module")
def agents(tmp_path_factory) -> Iterator[LocalAgents]:
    started = spawn_local_agents(AGENTS, PROCESSES, tmp_path_factory.mktemp("agents"), 60)
    try:
        yield started
    finally:
        started.close()


def prepare(agents: LocalAgents, store: str, option: str) -> int:
    """One Cluster.prepare over every agent; the members the agents report loaded."""
    settings = load_settings(
        None,
        [
            parse_override(f"store.name={store}"),
            parse_override(option),
            parse_override(f"usercount={USERS}"),
        ],
    )
    cluster = Cluster.connect(agents.addresses, None)
    try:
        replies = cluster.prepare(settings)
    finally:
        cluster.close()
    assert all(len(r.fragments) == PROCESSES for r in replies)
    return sum(f.members for r in replies for f in r.fragments)


def prepare_rounds(agents: LocalAgents, store: str, option_of, count_users) -> None:
    """ROUNDS prepares in a loop, each round's option from option_of(round); every round
    runs (the count of failures is the figure), and each must leave USERS members."""
    failures = []
    for i in range(ROUNDS):
        option = option_of(i)
        try:
            loaded = prepare(agents, store, option)
        except BGBenchError as exc:
            failures.append(f"round {i}: {exc}")
            continue
        assert loaded == USERS
        assert count_users(option) == USERS
    assert not failures, f"{len(failures)} of {ROUNDS} prepares failed: {failures[0]}"


def test_ten_prepares_on_postgres_never_deadlock(agents, postgres_server):
    # a fresh database, then the same one again (its schema exists)
    dsns = [fresh_database(postgres_server) for _ in range(ROUNDS // 2)]

    def users(option: str) -> int:
        with psycopg.connect(option.split("=", 1)[1]) as conn:
            return conn.execute("SELECT count(*) FROM users").fetchone()[0]

    prepare_rounds(agents, "postgres", lambda i: f"store.options.dsn={dsns[i // 2]}", users)


def test_ten_prepares_on_sqlite_never_find_the_database_locked(agents, tmp_path):
    def users(option: str) -> int:
        with sqlite3.connect(option.split("=", 1)[1]) as db:
            return db.execute("SELECT count(*) FROM users").fetchone()[0]

    # a new file, then the same one again
    path_of = lambda i: f"store.options.path={tmp_path / f'bg{i // 2}.sqlite'}"  # noqa: E731
    prepare_rounds(agents, "sqlite", path_of, users)


def test_a_prepare_without_a_phase_makes_the_schema_first_then_loads(agents, tmp_path):
    """The default phase, for a caller that sets none: one agent alone creates the schema in
    one load process, then all of its processes load."""
    settings = load_settings(None, [parse_override(f"usercount={USERS}")])
    cluster = Cluster.connect(agents.addresses[:1], None)
    try:
        for i in range(3):
            path = tmp_path / f"bg{i}.sqlite"
            request = pb.PrepareRequest(
                workload="bg",
                workload_config_json=settings.workload_config.model_dump_json(),
                store="sqlite",
                store_options_json=json.dumps({"path": str(path)}),
                capacities=cluster.layout.capacities,
                fragments=cluster.layout.fragments[0],
            )
            reply = cluster.clients[0].prepare(request)
            assert sum(f.members for f in reply.fragments) == USERS
            with sqlite3.connect(path) as db:
                assert db.execute("SELECT count(*) FROM users").fetchone()[0] == USERS
    finally:
        cluster.close()


def reload_run(tmp_path: Path, store: str, option: str) -> dict:
    """`bgbench run` with every load process reloading its fragment when the run starts."""
    proc = subprocess.run(
        [
            sys.executable, "-m", "bgbench", "run", "--store", store,
            "--agents", str(AGENTS), "--processes", str(PROCESSES), "--threads", "8",
            "--duration", "2", "--users", str(USERS), "--results", str(tmp_path / "results"),
            "--json", "-p", option, "-p", "rating.state=reload",
        ],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def check_reloaded(result: dict) -> None:
    assert result["fault"] == "", result["fault"]
    assert result["errors"] == 0 and result["actions"] > 0
    assert [a["start_state"] for a in result["agents"]] == ["reload"] * AGENTS
    assert all(a["load_processes"] == PROCESSES for a in result["agents"])


def test_a_reload_run_on_sqlite_with_many_processes(tmp_path):
    check_reloaded(reload_run(tmp_path, "sqlite", f"store.options.path={tmp_path / 'bg.sqlite'}"))


def test_a_reload_run_on_postgres_with_many_processes(tmp_path, postgres_server):
    dsn = fresh_database(postgres_server)
    check_reloaded(reload_run(tmp_path, "postgres", f"store.options.dsn={dsn}"))
