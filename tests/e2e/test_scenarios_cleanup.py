"""A scenario's mistakes are refused before anything starts, and what a scenario did is
undone however the experiment ends: normally, by an infrastructure fault (its agent
killed mid-run) and by Ctrl-C (SIGINT to `bgbench run`): no nft table of its process is
left, and no node of the server is left paused or dead. On a PostgreSQL of this file's
own (the scenario pauses it)."""

import signal
import sys

import pytest

from bgbench import results
from tests.conftest import servers
from tests.e2e.scenario_helpers import (
    end,
    left_behind,
    process_state,
    run_scenario,
    server_pids,
    settings_file,
    start_run,
    tables_of,
)
from tests.helpers import bgbench, wait_until

pytestmark = pytest.mark.slow

KILL_AGENTS = """\
import os, signal
parent = os.getppid()  # the coordinator that runs this step
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        stat = open(f"/proc/{pid}/stat").read()
        cmdline = open(f"/proc/{pid}/cmdline", "rb").read()
    except OSError:
        continue
    ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
    if ppid == parent and b"bgbench.worker.agent" in cmdline:
        os.kill(int(pid), signal.SIGKILL)
        print("killed agent", pid)
"""


@pytest.fixture(scope="module")
def postgres(tmp_path_factory):
    directory = tmp_path_factory.mktemp("postgres-scenario")
    try:
        info = servers.start("postgres", directory)
        yield directory, info
    finally:
        servers.stop(directory)


def pg_store(info: dict) -> dict:
    return {"name": "postgres", "options": {"dsn": servers.new_database(info)}}


PAUSE_AND_CUT = [
    {"at": "2s", "do": "partition", "node": "postgres", "from": "clients"},
    {"at": "2s", "do": "pause", "node": "postgres"},
]


@pytest.mark.parametrize(
    ("step", "words"),
    [
        ({"at": "2s", "do": "kill", "node": "n9"}, "no node n9: known nodes postgres"),
        ({"at": "30s", "do": "kill", "node": "postgres"}, "at or after the experiment's end"),
        ({"at": "2s", "do": "explode", "node": "postgres"}, "explode"),
        ({"at": "2s", "do": "add", "node": "postgres"}, "node postgres cannot add"),
    ],
)
def test_a_scenario_mistake_is_one_line_exit_2_before_anything_starts(
    postgres, tmp_path, step, words
):
    directory, info = postgres
    store = {"name": "postgres", "options": {"dsn": f"host=127.0.0.1 port={info['port']}"}}
    path = settings_file(tmp_path / "s.yaml", store, [step], [directory], 10)
    proc = bgbench("run", "-c", str(path), "--results", str(tmp_path / "results"), timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert words in proc.stderr and "scenario step 1" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").iterdir())


def test_a_paused_and_cut_node_is_restored_when_the_experiment_ends(postgres, tmp_path):
    directory, info = postgres
    scenario = [*PAUSE_AND_CUT, {"at": "5s", "do": "resume", "node": "postgres"},
                {"at": "5s", "do": "heal"}]  # fmt: skip
    r = run_scenario(settings_file(tmp_path / "s.yaml", pg_store(info), scenario, [directory], 10),
                     tmp_path / "results")  # fmt: skip
    assert [s["ok"] for s in r["scenario"]["steps"]] == [True] * 4, r["scenario"]["steps"]
    assert r["tables_left"] == [] and left_behind(directory, r["pid"]) == []
    assert "undo: deleted table inet bgbench_" in r["stderr"]
    cut = r["scenario"]["phases"][2]  # paused: nothing succeeds until resumed
    assert cut["label"] == "pause postgres" and cut["unavailable_s"] > 0


def test_an_experiment_an_agent_failure_ends_is_undone(postgres, tmp_path):
    directory, info = postgres
    script = tmp_path / "kill_agents.py"
    script.write_text(KILL_AGENTS)
    scenario = [*PAUSE_AND_CUT, {"at": "4s", "do": "run", "command": f"{sys.executable} {script}"}]
    path = settings_file(tmp_path / "s.yaml", pg_store(info), scenario, [directory], 60,
                         agents={"on_failure": "stop"})  # fmt: skip
    proc = start_run(path, tmp_path / "results")
    try:
        _, err = proc.communicate(timeout=300)
    finally:
        end(proc)
    assert proc.returncode == 3, err[-3000:]
    assert "undo: deleted table inet bgbench_" in err and "undo: resumed" in err, err[-3000:]
    assert left_behind(directory, proc.pid) == []


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_an_interrupt_mid_scenario_undoes_it(postgres, tmp_path, sig):
    directory, info = postgres
    [pid] = server_pids(directory)
    path = settings_file(tmp_path / "s.yaml", pg_store(info), PAUSE_AND_CUT, [directory], 120)
    proc = start_run(path, tmp_path / "results")
    try:
        wait_until(lambda: process_state(pid) == "T" and tables_of(proc.pid), "the pause", 180)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=180)
    finally:
        end(proc)
    assert proc.returncode == 130, err[-3000:]
    assert left_behind(directory, proc.pid) == []
    assert process_state(pid) not in ("T", "")


def test_a_campaign_jobs_servers_are_its_scenarios_nodes(tmp_path):
    """A campaign job names no nodes.servers: the PostgreSQL the campaign starts for it is
    where its `postgres` node comes from, and it is resumed at the experiment's end."""
    campaign = tmp_path / "scenario.yaml"
    campaign.write_text(
        "campaign: scenario-nodes\n"
        "jobs:\n"
        "  - name: pause\n"
        "    store: {name: postgres}\n"
        "    server: {kind: postgres}\n"
        "    agents: {local: 1, processes: 1}\n"
        "    params: {usercount: 500}\n"
        "    rating: {objective: sweep, sweep_threads: [4], sweep_repeats: 1}\n"
        "    sla: {delta_s: 8}\n"
        "    scenario:\n"
        "      - {at: 2s, do: pause, node: postgres}\n"
        "      - {at: 4s, do: resume, node: postgres}\n"
    )
    proc = bgbench("campaign", "run", str(campaign), "--results", str(tmp_path / "r"), timeout=280)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "2.0 s: pause postgres — paused postgres" in proc.stderr, proc.stderr[-3000:]
    steps = results.load(tmp_path / "r").steps
    assert list(steps["action"]) == ["pause", "resume"] and all(steps["ok"])
