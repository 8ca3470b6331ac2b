"""The PostgreSQL bindings through a server killed and started again mid-run (a scenario's
kill + start, run with tolerate_errors): every action fails while it is down, and once it
serves again each socialite takes a fresh connection on its next action, so the run
succeeds again. Before, a connection its server had closed was never replaced: every later
action failed ("connection has been released back to the pool"). Real servers: the test's
own PostgreSQL, killed and started through bgbench.launchers.nodes."""

import threading
from pathlib import Path
from typing import Any

import pytest

from bgbench.launchers import nodes
from bgbench.run_result import RunResult
from bgbench.worker.engine import FragmentEngine, RunSpec
from bgbench.workloads.bg.config import BGConfig
from bgbench.workloads.bg.workload import WORKLOAD as BG
from bgbench.workloads.ehr.config import EHRConfig
from bgbench.workloads.ehr.workload import WORKLOAD as EHR
from bgbench.workloads.sensorlog.config import SensorLogConfig
from bgbench.workloads.sensorlog.workload import WORKLOAD as SENSORLOG
from tests.conftest import servers
from tests.helpers import wait_until

TASKS = 4
ACTION_S = 120.0  # a node action's bound (a killed PostgreSQL recovers before it serves)
WAIT_S = 60.0  # bound on each wait for the run to reach a mark
LONG_S = 600.0  # the run's duration: the test stops it once it has what it checks
CLEAN = 100  # successful actions in a row that show the run recovered


@pytest.fixture
def postgres_node(tmp_path):
    """The test's own PostgreSQL (its directory and server.json's info): it gets killed."""
    directory = tmp_path / "pg"
    info = servers.start("postgres", directory)
    try:
        yield directory, info
    finally:
        servers.stop(directory)


def engine_for(case: str, info: dict[str, Any], memcached: dict[str, Any]) -> FragmentEngine:
    store: dict[str, Any] = {"dsn": servers.new_database(info)}
    if case == "bg-postgres":
        config = BGConfig.model_validate(
            {"database": {"usercount": 200}, "workload": {"mix": "high"}}
        )
        return FragmentEngine(BG, config, "postgres", store, (1.0,), 0)
    if case == "bg-casql":
        store |= {"memcached": f"127.0.0.1:{memcached['port']}", "timeout_s": 2.0}
        config = BGConfig.model_validate(
            {"database": {"usercount": 200}, "workload": {"mix": "high"}}
        )
        return FragmentEngine(BG, config, "casql", store, (1.0,), 0)
    if case == "ehr-postgres":
        config = EHRConfig.model_validate(
            {"database": {"patients": 200}, "workload": {"mix": {"READ": 1, "WRITE": 1}}}
        )
        return FragmentEngine(EHR, config, "postgres", store, (1.0,), 0)
    config = SensorLogConfig.model_validate(
        {"database": {"machines": 4, "sensors": 3, "readings": 150, "seed": 5},
         "workload": {"mix": "ingest50", "q3_selectivity": 20}}
    )  # fmt: skip
    return FragmentEngine(SENSORLOG, config, "postgres", store, (1.0,), 0)


class Restart:
    """Kills the server once the run is under way, waits for errors, starts it again, waits
    for successful actions after the start, and stops the run: in a thread of its own (the
    publishing loop must not wait on it)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.stop = threading.Event()
        self.seen = (0, 0)  # actions, errors (cumulative, as published)
        self.marks: dict[str, tuple[int, int]] = {}
        self.lines: list[str] = []
        self.failure: BaseException | None = None
        self._stretch: tuple[int, int] | None = None  # actions, errors at the last error
        self.thread = threading.Thread(target=self._cycle, daemon=True)

    def publish(self, actions: int, errors: int, *rest: object) -> None:
        self.seen = (actions, errors)
        if actions >= 200 and not self.thread.is_alive() and "killed" not in self.marks:
            self.marks["killed"] = self.seen
            self.thread.start()

    def successes(self) -> int:
        return self.seen[0] - self.seen[1]

    def _clean_stretch(self) -> bool:
        """Whether CLEAN successful actions were done since the last error seen (CASQL's
        cache hits alone do not make one: its writes go to PostgreSQL)."""
        actions, errors = self.seen
        if self._stretch is None or errors != self._stretch[1]:
            self._stretch = (actions, errors)
        return actions - self._stretch[0] >= CLEAN

    def _cycle(self) -> None:
        try:
            self.lines.append(nodes.act(self.directory, "postgres", "kill", ACTION_S))
            errors = self.seen[1]
            wait_until(lambda: self.seen[1] >= errors + 50, "errors while it is down", WAIT_S)
            self.marks["down"] = self.seen
            self.lines.append(nodes.act(self.directory, "postgres", "start", ACTION_S))
            self.marks["started"] = self.seen
            wait_until(self._clean_stretch, "100 actions in a row without an error", WAIT_S)
        except BaseException as exc:  # the test's thread reports it
            self.failure = exc
        finally:
            self.stop.set()


def run_through_a_restart(
    engine: FragmentEngine, directory: Path, tmp: Path
) -> tuple[RunResult, Restart]:
    restart = Restart(directory)
    spec = RunSpec("restart", TASKS, LONG_S, 0, 7, tmp / "restart", tolerate_errors=True)
    summary = engine.run(spec, restart.stop, restart.publish)
    restart.thread.join(ACTION_S)
    return summary, restart


@pytest.mark.timeout(600)
@pytest.mark.parametrize("case", ["bg-postgres", "bg-casql", "ehr-postgres", "sensorlog-postgres"])
def test_a_run_fails_while_postgresql_is_down_and_succeeds_again_after_it_starts(
    postgres_node, memcached_server, tmp_path, case
):
    directory, info = postgres_node
    engine = engine_for(case, info, memcached_server)
    try:
        engine.prepare()
        summary, restart = run_through_a_restart(engine, directory, tmp_path)
    finally:
        engine.close()
    assert restart.failure is None, (restart.failure, restart.lines, summary.error_counts)
    assert restart.lines[0].startswith("killed postgres"), restart.lines
    assert summary.aborted == "", summary.aborted
    killed, down, started = (restart.marks[m] for m in ("killed", "down", "started"))
    assert down[1] - killed[1] >= 50  # every action failed while it was down
    after = (summary.actions - summary.errors) - (started[0] - started[1])
    assert after >= CLEAN, (after, summary.error_counts)  # successes after the start
