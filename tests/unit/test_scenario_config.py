"""The scenario and nodes settings: durations, steps in YAML and TOML, and every mistake
refused in one line naming the step, when the settings load or before anything starts
(check_scenario: the experiments' end, unknown nodes, actions a node cannot do)."""

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from bgbench.coordinator.campaign import load_campaign
from bgbench.coordinator.configuration.config import (
    Settings,
    describe_validation_error,
    load_settings,
)
from bgbench.coordinator.configuration.scenario import (
    ScenarioMistake,
    Step,
    check_scenario,
    experiments_end,
    parse_duration,
)
from bgbench.coordinator.execution.checkconfig import (
    check_scenario_before_start,
    check_settings_file,
    scenario_nodes,
)
from bgbench.errors import UserError

WEB1 = {"kill": "pkill -9 app", "start": "app --daemon", "address": "127.0.0.9",
        "client_ports": [9999]}  # fmt: skip


@pytest.mark.parametrize(
    ("given", "seconds"),
    [("20s", 20), ("1m30s", 90), ("500ms", 0.5), ("2m", 120), ("1h", 3600), ("1.5s", 1.5),
     (" 1m 30s ", 90), ("20", 20), (20, 20), (2.5, 2.5), ("0", 0), (".5s", 0.5)],
)  # fmt: skip
def test_durations(given, seconds):
    assert parse_duration(given) == pytest.approx(seconds)


@pytest.mark.parametrize(
    "given", ["20x", "s", "1m30", "-1", "-1s", "1e9", "nan", "inf", True, None, [20], "", "x" * 65]
)
def test_durations_refused(given):
    with pytest.raises(ValueError):
        parse_duration(given)


def settings_with(scenario, **more) -> Settings:
    return Settings.model_validate({"scenario": scenario, **more})


def refusal(scenario, **more) -> str:
    with pytest.raises(ValidationError) as caught:
        settings_with(scenario, **more)
    return describe_validation_error(caught.value)


def test_a_step_reads_its_fields_by_their_written_names():
    s = settings_with(
        [
            {"at": "20s", "do": "kill", "node": "n2"},
            {"at": "30s", "do": "partition", "node": "standby", "from": "clients"},
            {"at": 40, "do": "heal"},
            {"at": "45s", "do": "run", "command": "docker restart c1", "timeout": "1m"},
        ]
    )
    kill, partition, heal, run = s.scenario
    assert (kill.at_s, kill.do, kill.node, kill.timeout_s, kill.label) == (
        20, "kill", "n2", 120, "kill n2",
    )  # fmt: skip
    assert partition.from_ == "clients" and partition.label == "partition standby from clients"
    assert heal.node is None and heal.label == "heal all"
    assert run.command == "docker restart c1" and run.timeout_s == 60 and run.label == "run docker"
    assert Settings.model_validate({}).scenario == [] and Settings().nodes.servers == []


def test_settings_with_a_scenario_load_again_from_their_record():
    s = settings_with(
        [{"at": "1m30s", "do": "partition", "node": "n1", "from": "clients", "label": "cut"}],
        nodes={"servers": ["results/servers/cass"], "commands": {"web1": WEB1}},
    )
    recorded = json.loads(s.model_dump_json())  # a rating's settings are recorded so
    assert recorded["scenario"][0]["at"] == 90 and recorded["scenario"][0]["from"] == "clients"
    again = Settings.model_validate(recorded)
    assert again.scenario == s.scenario and again.nodes == s.nodes


def test_yaml_and_toml_files_give_the_same_scenario(tmp_path: Path):
    yaml_file = tmp_path / "s.yaml"
    yaml_file.write_text(
        "scenario:\n"
        "  - {at: 20s, do: kill, node: web1}\n"
        "  - {at: 50s, do: start, node: web1}\n"
        "nodes:\n  commands:\n    web1: {kill: pkill app, start: app}\n"
    )
    toml_file = tmp_path / "s.toml"
    toml_file.write_text(
        '[[scenario]]\nat = "20s"\ndo = "kill"\nnode = "web1"\n'
        '[[scenario]]\nat = 50\ndo = "start"\nnode = "web1"\n'
        '[nodes.commands.web1]\nkill = "pkill app"\nstart = "app"\n'
    )
    from_yaml, from_toml = load_settings(yaml_file, []), load_settings(toml_file, [])
    assert [(x.at_s, x.do, x.node) for x in from_yaml.scenario] == [
        (20, "kill", "web1"), (50, "start", "web1"),
    ]  # fmt: skip
    assert from_yaml.scenario == from_toml.scenario and from_yaml.nodes == from_toml.nodes


ACTIONS_LIST = "kill, stop, start, restart, pause, resume, partition, heal, add, remove, "
LOAD_MISTAKES = [
    ([{"at": "20s", "do": "explode", "node": "n2"}],
     "scenario step 1 (at 20s, explode n2): unknown action 'explode': use one of "
     + ACTIONS_LIST + "restart-cache, run"),
    ([{"at": "20s", "do": "kill", "node": "n1"}, {"at": "30s", "do": "stop"}],
     "scenario step 2 (at 30s, stop): stop needs a node (node: NAME)"),
    ([{"at": "20s", "do": "run"}], "scenario step 1 (at 20s, run): run needs a command"),
    ([{"at": "20s", "do": "run", "command": "true", "node": "n1"}],
     "scenario step 1 (at 20s, run n1): run takes no node"),
    ([{"at": "20s", "do": "kill", "node": "n2", "command": "x"}],
     "scenario step 1 (at 20s, kill n2): command is for run steps, not kill"),
    ([{"at": "20s", "do": "kill", "node": "n2", "from": "clients"}],
     "scenario step 1 (at 20s, kill n2): from is for partition steps, not kill"),
    ([{"at": "20s", "do": "partition", "node": "n2", "from": "everyone"}],
     "scenario step 1 (at 20s, partition n2): from: Input should be 'others' or 'clients'"),
    ([{"at": "20x", "do": "kill", "node": "n2"}],
     "scenario step 1 (at 20x, kill n2): at: '20x' is not a duration"),
    ([{"do": "kill", "node": "n2"}], "scenario step 1 (kill n2): at: missing"),
    ([{"at": 1, "node": "n2"}], "scenario step 1 (at 1s, n2): do: missing"),
    ([{"at": "20s", "do": "kill", "nod": "n2"}],
     "scenario step 1 (at 20s, kill): nod: unknown field"),
    ([{"at": "20s", "do": "kill", "node": "n2"}, {"at": "10s", "do": "start", "node": "n2"}],
     "scenario step 2 (at 10s, start n2): comes before step 1 (at 20s): list the steps in "
     "time order"),
    ([{"at": 1, "do": "run", "command": "echo 'unclosed"}],
     "scenario step 1 (at 1s, run): command: command \"echo 'unclosed\" does not split"),
    ([{"at": 1, "do": "run", "command": "  "}],
     "scenario step 1 (at 1s, run): command: a command needs at least a program"),
    ([{"at": 1, "do": "run", "command": "ls", "timeout": "0.5s"}],
     "scenario step 1 (at 1s, run): timeout: Input should be greater than or equal to 1"),
    ([{"at": 1, "do": "kill", "node": "n 2"}],
     "scenario step 1 (at 1s, kill n 2): node 'n 2' is not a node name"),
    (["kill n2"], "scenario step 1: a step is a mapping"),
    ([{"at": 1, "do": "heal", "label": "two\nlines"}],
     "scenario step 1 (at 1s, heal): label: one line of printable text"),
]  # fmt: skip


@pytest.mark.parametrize(("scenario", "line"), LOAD_MISTAKES)
def test_each_mistake_of_a_step_is_one_line_naming_it(scenario, line):
    message = refusal(scenario)
    assert message.startswith(f"invalid config: {line}"), message
    assert "\n" not in message and "Value error" not in message and "(got" not in message


def test_a_mistake_names_the_file(tmp_path: Path):
    f = tmp_path / "s.yaml"
    f.write_text("scenario:\n  - {at: 20s, do: kill}\n")
    with pytest.raises(UserError, match=rf"^invalid config in {f}: scenario step 1 \(at 20s"):
        load_settings(f, [])


def test_too_many_steps_are_refused():
    steps = [{"at": 1, "do": "heal"}] * 1001
    assert refusal(steps) == "invalid config: scenario: at most 1000 steps"


@pytest.mark.parametrize(
    ("nodes", "part"),
    [
        ({"commands": {"w": {"address": "10.0.0.1"}}}, "outside 127.0.0.0/8 and 198.18.0.0/15"),
        ({"commands": {"w": {"address": "web1"}}}, "'web1' is not an IP address"),
        ({"commands": {"w": {"client_ports": [80]}}}, "ports need the node's address"),
        ({"commands": {"w": {"peer_ports": [0], "address": "127.0.0.2"}}}, "peer_ports.0"),
        ({"commands": {"w w": {}}}, "'w w' is not a node name"),
        ({"commands": {"w": {"kill": "a 'b"}}}, "does not split into words"),
        ({"commands": {"w": {"reboot": "x"}}}, "nodes.commands.w.reboot: unknown setting"),
        ({"servers": "results/servers/cass"}, "nodes.servers: Input should be a valid list"),
    ],
)
def test_node_commands_refused(nodes, part):
    with pytest.raises(ValidationError) as caught:
        Settings.model_validate({"nodes": nodes})
    assert part in describe_validation_error(caught.value)


def test_the_actions_a_command_node_offers():
    s = Settings.model_validate(
        {"nodes": {"commands": {"web1": WEB1, "db": {"stop": "a", "start": "b"}, "x": {}}}}
    )
    commands = s.nodes.commands
    assert commands["web1"].actions() == {"kill", "start", "partition", "heal"}
    assert commands["db"].actions() == {"stop", "start"}  # restart only by its own command
    assert commands["x"].actions() == frozenset()


def test_the_experiments_a_scenario_must_fit_in():
    s = Settings.model_validate({"run": {"maxexecutiontime": 60}})
    assert experiments_end(s, "run") == (60, "run.maxexecutiontime")
    assert experiments_end(s, "rate") == (60, "run.maxexecutiontime")
    s = Settings.model_validate({"sla": {"delta_search_s": 30, "delta_s": 40}})
    assert experiments_end(s, "rate") == (30, "sla.delta_search_s")
    assert experiments_end(s, "run") == (20, "run.maxexecutiontime")
    s.rating.objective = "sweep"  # a sweep runs at Delta only
    assert experiments_end(s, "rate") == (40, "sla.delta_s")


NODES = {"n1": frozenset({"kill", "start"}), "n2": frozenset({"kill", "start", "add"})}


def mistake(scenario, names, command="rate", source="from results/servers/cass", **more):
    settings = settings_with(scenario, **more)
    with pytest.raises(ScenarioMistake) as caught:
        check_scenario(settings, names, command, source)
    return str(caught.value), caught.value.step


def test_a_step_at_or_after_the_experiments_end_is_refused():
    steps = [{"at": "10s", "do": "kill", "node": "n2"}, {"at": "20s", "do": "start", "node": "n2"}]
    assert mistake(steps, NODES) == (
        "scenario step 2 (at 20s, start n2): at or after the experiment's end: experiments "
        "last 20s (run.maxexecutiontime)", 1,
    )  # fmt: skip
    line, _ = mistake(steps, None, sla={"delta_search_s": 15})
    assert line.endswith("experiments last 15s (sla.delta_search_s)")
    check_scenario(settings_with(steps, run={"maxexecutiontime": 21}), NODES, "run")


def test_an_unknown_node_lists_the_known_ones_and_where_they_came_from():
    line, step = mistake(
        [{"at": 1, "do": "kill", "node": "n1"}, {"at": "5s", "do": "start", "node": "n9"}], NODES
    )
    assert line == (
        "scenario step 2 (at 5s, start n9): no node n9: known nodes n1, n2 "
        "(from results/servers/cass)"
    )
    assert step == 1
    line, _ = mistake([{"at": 1, "do": "kill", "node": "n1"}], {})
    assert line.startswith("scenario step 1 (at 1s, kill n1): no node n1: no nodes are known")


def test_an_action_the_node_cannot_do_says_what_it_can():
    line, _ = mistake([{"at": 1, "do": "add", "node": "n1"}], NODES, source="")
    assert line == "scenario step 1 (at 1s, add n1): node n1 cannot add: it can kill, start"


def test_without_node_names_only_the_times_are_checked():
    check_scenario(settings_with([{"at": 1, "do": "remove", "node": "anything"}]), None)
    check_scenario(settings_with([{"at": 1, "do": "heal"}, {"at": 2, "do": "run",
                                  "command": "true"}]), {})  # fmt: skip


def test_a_scenario_needs_a_real_store():
    s = settings_with([{"at": 1, "do": "run", "command": "true"}], store={"name": "model"})
    with pytest.raises(UserError, match=r"^scenario: a scenario needs a real store"):
        check_scenario_before_start(s, "run")
    check_scenario_before_start(Settings.model_validate({"store": {"name": "model"}}), "run")


def test_nodes_by_server_kind_and_by_command():
    s = settings_with([], nodes={"commands": {"web1": WEB1}})
    names, source = scenario_nodes(s.nodes, ["cassandra-cluster", "memcached"])
    assert set(names) == {"n1", "n2", "n3", "n4", "cache", "web1"}
    assert "add" in names["n4"] and "add" not in names["n1"]  # n1 is the seed
    assert "restart-cache" in names["cache"] and "partition" in names["n2"]
    assert source == "from server cassandra-cluster, server memcached, nodes.commands"
    with pytest.raises(UserError, match=r"^nodes: two nodes are named n1 "):
        scenario_nodes(s.nodes, ["cassandra-cluster", "cassandra"])


def test_a_server_directory_without_a_server_is_one_line(tmp_path: Path):
    s = settings_with(
        [{"at": 1, "do": "kill", "node": "n2"}], nodes={"servers": [str(tmp_path / "none")]}
    )
    with pytest.raises(UserError) as caught:
        check_scenario_before_start(s, "rate")
    assert str(caught.value).startswith(f"nodes.servers: {tmp_path / 'none'}: ")
    assert "\n" not in str(caught.value)


def test_check_config_checks_a_scenario(tmp_path: Path):
    f = tmp_path / "s.yaml"
    f.write_text(
        "scenario:\n  - {at: 5s, do: kill, node: web1}\n  - {at: 8s, do: start, node: web2}\n"
        f"nodes:\n  commands:\n    web1: {json.dumps(WEB1)}\n"
    )
    with pytest.raises(ScenarioMistake, match=r"^scenario step 2 \(at 8s, start web2\): no node"):
        check_settings_file(f, [])
    fixed = [{"at": "5s", "do": "kill", "node": "web1"}, {"at": 8, "do": "start", "node": "web1"}]
    assert len(check_settings_file(f, [("scenario", fixed)]).scenario) == 2  # -p scenario=[..]


CAMPAIGN = """
campaign: scenario-mistakes
templates:
  cass:
    server: {kind: cassandra-cluster}
    store: {name: cassandra}
    sla: {delta_search_s: 30, delta_s: 40}
jobs:
  - name: ok
    extends: cass
    scenario: [{at: 10s, do: kill, node: n2}, {at: 20s, do: add, node: n4}]
  - name: unknown-node
    extends: cass
    scenario:
      - {at: 10s, do: kill, node: n9}
  - name: bad-action
    extends: cass
    scenario: [{at: 10s, do: explode, node: n2}]
"""


def test_campaign_jobs_name_the_step_and_the_line_that_set_it(tmp_path: Path):
    path = tmp_path / "c.yaml"
    path.write_text(CAMPAIGN)
    ok, unknown, bad = load_campaign(path).jobs
    assert ok.error == "" and ok.settings is not None and len(ok.settings.scenario) == 2
    assert unknown.error == (
        "job 2 (unknown-node): scenario step 1 (at 10s, kill n9): no node n9: known nodes "
        f"n1, n2, n3, n4 (from server cassandra-cluster) (set at {path}:15)"
    )
    assert bad.error.startswith(
        "job 3 (bad-action): scenario step 1 (at 10s, explode n2): unknown action 'explode'"
    )
    assert bad.error.endswith(f"(set at {path}:18)")


def test_step_is_importable_as_the_model_of_one_step():
    step = Step.model_validate({"at": "2m", "do": "remove", "node": "n4"})
    assert step.at_s == 120 and step.describe() == "remove n4"


def test_a_secret_in_a_command_is_never_written_out():
    s = settings_with(
        [{"at": 1, "do": "run", "command": "curl https://ops:hunter2@lb.example/drain"}],
        nodes={"commands": {"web1": {"kill": "curl https://ops:hunter2@lb.example/kill"}}},
    )
    assert s.scenario[0].command == "curl https://ops:hunter2@lb.example/drain"  # runs as given
    written = s.model_dump_json()
    assert "hunter2" not in written and "ops:***@lb.example" in written
    with pytest.raises(ValidationError) as caught:  # a record's *** never runs as a command
        Settings.model_validate(json.loads(written))
    assert "command holds ***, a secret redacted when it was recorded" in (
        describe_validation_error(caught.value)
    )
