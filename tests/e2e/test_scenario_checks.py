"""Scenario mistakes through the CLI: `bgbench check-config` and `bgbench campaign check`
exit 2 with one line naming the step for each (an unknown action, an unknown node with
the known ones listed, a step at or after the experiment's end, a missing node or command,
an action the node cannot do, the model store), `run` and `rate` refuse them before
anything starts, and a valid scenario passes."""

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.helpers import bgbench

WEB1 = {"kill": "pkill -9 app", "start": "app --daemon", "address": "127.0.0.9",
        "client_ports": [9999]}  # fmt: skip
NODES = f"nodes:\n  commands:\n    web1: {json.dumps(WEB1)}\n"
KNOWN = "known nodes web1 (from nodes.commands)"

# (name, the scenario's YAML lines, extra settings, the one line check-config prints)
MISTAKES = [
    ("unknown-action", ["{at: 5s, do: explode, node: web1}"], "",
     "scenario step 1 (at 5s, explode web1): unknown action 'explode': use one of kill, "
     "stop, start, restart, pause, resume, partition, heal, add, remove, restart-cache, run"),
    ("unknown-node", ["{at: 5s, do: kill, node: web1}", "{at: 8s, do: start, node: n9}"], "",
     f"scenario step 2 (at 8s, start n9): no node n9: {KNOWN}"),
    ("after-the-end", ["{at: 5s, do: kill, node: web1}", "{at: 1m, do: start, node: web1}"],
     "run: {maxexecutiontime: 60}\n",
     "scenario step 2 (at 60s, start web1): at or after the experiment's end: experiments "
     "last 60s (run.maxexecutiontime)"),
    ("after-the-search", ["{at: 20s, do: kill, node: web1}"], "sla: {delta_search_s: 15}\n",
     "scenario step 1 (at 20s, kill web1): at or after the experiment's end: experiments "
     "last 15s (sla.delta_search_s)"),
    ("no-node", ["{at: 5s, do: stop}"], "",
     "scenario step 1 (at 5s, stop): stop needs a node (node: NAME)"),
    ("no-command", ["{at: 5s, do: run}"], "",
     "scenario step 1 (at 5s, run): run needs a command (command: ...)"),
    ("cannot", ["{at: 5s, do: pause, node: web1}"], "",
     "scenario step 1 (at 5s, pause web1): node web1 cannot pause: it can kill, start, "
     "partition, heal (from nodes.commands)"),
    ("model-store", ["{at: 5s, do: kill, node: web1}"], "store: {name: model}\n",
     "scenario: a scenario needs a real store, not the simulated store 'model' (store.name)"),
]  # fmt: skip
LOADING = {"unknown-action", "no-node", "no-command"}  # refused by the settings model


def settings_file(where: Path, name: str, steps: list[str], extra: str) -> Path:
    path = where / f"{name}.yaml"
    path.write_text("scenario:\n" + "".join(f"  - {s}\n" for s in steps) + NODES + extra)
    return path


def expected(name: str, path: Path, line: str) -> str:
    return f"invalid config in {path}: {line}" if name in LOADING else line


def test_check_config_prints_one_line_per_mistake_and_exits_2(tmp_path: Path):
    files = [settings_file(tmp_path, n, steps, extra) for n, steps, extra, _ in MISTAKES]
    with ThreadPoolExecutor(4) as pool:  # independent commands: the machine is busy
        procs = list(pool.map(lambda f: bgbench("check-config", str(f), timeout=120), files))
    for (name, _, _, line), path, proc in zip(MISTAKES, files, procs, strict=True):
        assert proc.returncode == 2, (name, proc.stdout, proc.stderr)
        assert proc.stderr.splitlines() == [f"bgbench: error: {expected(name, path, line)}"], name
        assert "valid" not in proc.stdout


def test_a_valid_scenario_passes_check_config_in_yaml_and_toml(tmp_path: Path):
    steps = ["{at: 5s, do: kill, node: web1}", "{at: 8s, do: partition, node: web1, "
             "from: clients}", "{at: 9s, do: heal}", "{at: 10s, do: start, node: web1}",
             "{at: 12s, do: run, command: 'docker restart c1', timeout: 30s}"]  # fmt: skip
    yaml_file = settings_file(tmp_path, "ok", steps, "")
    toml_file = tmp_path / "ok.toml"
    toml_file.write_text(
        '[[scenario]]\nat = "5s"\ndo = "kill"\nnode = "web1"\n'
        '[[scenario]]\nat = "10s"\ndo = "start"\nnode = "web1"\n'
        '[nodes.commands.web1]\nkill = "pkill -9 app"\nstart = "app --daemon"\n'
    )
    for path, count in ((yaml_file, 5), (toml_file, 2)):
        proc = bgbench("check-config", str(path), timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.startswith(f"{path}: valid")
        settings = json.loads(proc.stdout.split("\n", 1)[1])
        assert len(settings["scenario"]) == count and settings["scenario"][0]["at"] == 5


def test_nodes_of_a_running_server_are_named_by_its_directory(tmp_path: Path, memcached_server):
    directory = memcached_server["dir"]
    path = tmp_path / "cache.yaml"
    path.write_text(
        f"nodes: {{servers: [{directory}]}}\n"
        "scenario:\n  - {at: 5s, do: restart-cache, node: cache}\n"
        "  - {at: 8s, do: kill, node: n1}\n"
    )
    proc = bgbench("check-config", str(path), timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.splitlines() == [
        f"bgbench: error: scenario step 2 (at 8s, kill n1): no node n1: known nodes cache "
        f"(from {directory})"
    ]
    path.write_text(path.read_text().replace("kill, node: n1", "restart-cache, node: cache"))
    assert bgbench("check-config", str(path), timeout=120).returncode == 0


def campaign_job(name: str, steps: list[str], extra: str) -> str:
    lines = [f"  - name: {name}\n", "    extends: cass\n"]
    lines += [f"    {x}\n" for x in extra.splitlines()]
    return "".join(lines) + "    scenario:\n" + "".join(f"      - {s}\n" for s in steps)


def test_campaign_check_names_each_job_and_its_mistake_and_exits_2(tmp_path: Path):
    """Node names come from the job's server kind, nothing started: cassandra-cluster has
    n1 .. n4, only n2 .. n4 can be added or removed (n1 is its seed)."""
    cases = [
        ("ok", ["{at: 5s, do: kill, node: n2}", "{at: 10s, do: add, node: n4}"], "", ""),
        ("unknown-node", ["{at: 5s, do: kill, node: n9}"], "",
         "scenario step 1 (at 5s, kill n9): no node n9: known nodes n1, n2, n3, n4 "
         "(from server cassandra-cluster)"),
        ("after-the-end", ["{at: 5s, do: kill, node: n2}", "{at: 30s, do: start, node: n2}"],
         "", "scenario step 2 (at 30s, start n2): at or after the experiment's end: "
         "experiments last 20s (sla.delta_search_s)"),
        ("unknown-action", ["{at: 5s, do: explode, node: n2}"], "",
         "scenario step 1 (at 5s, explode n2): unknown action 'explode'"),
        ("cannot", ["{at: 5s, do: remove, node: n1}"], "",
         "scenario step 1 (at 5s, remove n1): node n1 cannot remove"),
        ("no-server", ["{at: 5s, do: kill, node: n2}"], "server: []",
         "scenario step 1 (at 5s, kill n2): no node n2: no nodes are known"),
    ]  # fmt: skip
    path = tmp_path / "scenarios.yaml"
    path.write_text(
        "campaign: scenario-mistakes\ntemplates:\n  cass:\n"
        "    server: {kind: cassandra-cluster}\n    store: {name: cassandra}\n"
        "    sla: {delta_search_s: 20, delta_s: 40}\njobs:\n"
        + "".join(campaign_job(name, steps, extra) for name, steps, extra, _ in cases)
    )
    proc = bgbench("campaign", "check", str(path), timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.splitlines()
    assert lines[-1] == "bgbench: error: 5 of 6 jobs are invalid", lines
    for seq, (name, _, _, line) in enumerate(cases[1:], start=2):
        (mine,) = [x for x in lines if x.startswith(f"job {seq} ({name}): ")]
        assert mine.startswith(f"job {seq} ({name}): {line}"), mine
        assert f"(set at {path}:" in mine, mine  # the line of the campaign that set it
    assert not [x for x in lines if x.startswith("job 1 ")]


@pytest.mark.parametrize("command", ["run", "rate"])
def test_run_and_rate_refuse_a_mistake_before_anything_starts(tmp_path: Path, command):
    path = settings_file(tmp_path, "late", ["{at: 30s, do: kill, node: web1}"], "")
    results = tmp_path / "results"
    proc = bgbench(command, "-c", str(path), "--results", str(results), timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.splitlines()[-1] == (
        "bgbench: error: scenario step 1 (at 30s, kill web1): at or after the experiment's "
        "end: experiments last 20s (run.maxexecutiontime)"
    )
    assert not results.exists()  # no results store, no agent, no load
