"""The deployment files agree with the schemas and with the agent they start."""

import configparser
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from bgbench.coordinator.config import Settings

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
K8S_VERSION = "1.30.0"


def manifests():
    for path in sorted((DEPLOY / "k8s").glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                yield pytest.param(doc, id=f"{path.name}:{doc['kind']}")


@pytest.mark.parametrize("doc", list(manifests()))
def test_kubernetes_manifests_are_valid(doc):
    kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


def test_the_manifests_hold_what_a_run_needs():
    kinds = {doc.values[0]["kind"] for doc in manifests()}
    assert {"Namespace", "Secret", "Service", "StatefulSet", "Job", "ConfigMap"} <= kinds


def test_the_coordinator_configmap_is_a_valid_rating():
    config = next(p.values[0] for p in manifests() if p.values[0]["kind"] == "ConfigMap")
    data = tomllib.loads(config["data"]["rating.toml"])
    data["agents"].pop("tls")  # its files exist only inside the pod
    settings = Settings.model_validate(data)
    assert len(settings.agents.addresses) == 3 and settings.agents.on_failure == "retry"


def agent_help() -> str:
    out = subprocess.run(
        [sys.executable, "-m", "bgbench", "agent", "--help"], capture_output=True, text=True
    )
    return out.stdout


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


def test_the_environment_example_only_names_variables_the_agent_reads():
    help_text = agent_help()
    names = re.findall(
        r"^(BGBENCH_\w+)=", (DEPLOY / "systemd" / "agent.env.example").read_text(), re.M
    )
    assert names
    for name in names:
        assert name in help_text, name
