"""The Helm chart (deploy/helm/bgbench) lints and renders with its default values and with
non-default ones; every manifest it renders passes the Kubernetes schemas (strict); its
values schema and templates refuse bad values in one line; its generated certificates are
the ones a coordinator can check, and a real agent started with the chart's flags and
certificates serves a real coordinator given the chart's settings file over mutual TLS;
and its agents and the systemd unit name the same agent settings, every one of them a
flag of `bgbench agent --help`.

helm is built from the Go module proxy by scripts/test (into ~/.cache/bgbench/helm/,
$BGBENCH_HELM); without it these tests are skipped."""

import base64
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID

from bgbench.coordinator.configuration.config import Settings
from bgbench.protos import AGENT_READY_LINE

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "deploy" / "helm" / "bgbench"
SYSTEMD = ROOT / "deploy" / "systemd"
VALUES = Path(__file__).resolve().parent / "helm_values"
HELM_VERSION = "v4.3.2"
K8S_VERSION = "1.30.0"
RELEASE, NAMESPACE = "rate1", "bench"
AGENT_HOST = f"{RELEASE}-bgbench-agent.{NAMESPACE}.svc.cluster.local"
# The agent settings both ways of running an agent must give (the token by its
# environment twin, never on a command line).
ESSENTIAL = {"--listen", "--token", "--tls-cert", "--tls-key", "--tls-client-ca",
             "--processes", "--work-dir"}  # fmt: skip
Doc = dict[str, Any]


def find_helm() -> str | None:
    for candidate in (
        os.environ.get("BGBENCH_HELM"),
        str(Path.home() / ".cache" / "bgbench" / "helm" / HELM_VERSION / "helm"),
        shutil.which("helm"),
    ):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


HELM = find_helm()
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(HELM is None, reason=f"helm {HELM_VERSION} is not built (scripts/test)"),
]


def helm(*args: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    assert HELM is not None
    homes = {f"HELM_{kind.upper()}_HOME": str(tmp / kind) for kind in ("cache", "config", "data")}
    env = {**os.environ, **homes}
    return subprocess.run([HELM, *args], capture_output=True, text=True, timeout=120, env=env)


def values_args(name: str | None) -> list[str]:
    return [] if name is None else ["-f", str(VALUES / f"{name}.yaml")]


def render(tmp: Path, name: str | None = None, *extra: str) -> list[Doc]:
    done = helm("template", RELEASE, str(CHART), "--namespace", NAMESPACE,
                *values_args(name), *extra, tmp=tmp)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


def one(docs: list[Doc], kind: str) -> Doc:
    found = [d for d in docs if d["kind"] == kind]
    assert len(found) == 1, f"{len(found)} {kind}s"
    return found[0]


def container(docs: list[Doc], kind: str) -> Doc:
    containers = one(docs, kind)["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return containers[0]


VALUE_SETS = [None, "non-default", "plain"]


@pytest.mark.parametrize("name", VALUE_SETS, ids=lambda n: n or "default")
def test_the_chart_lints_and_every_rendered_manifest_passes_the_schemas(name, tmp_path):
    done = helm("lint", "--strict", str(CHART), *values_args(name), tmp=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    docs = render(tmp_path, name)
    assert {"Service", "StatefulSet"} <= {d["kind"] for d in docs}
    for doc in docs:
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
        assert doc["metadata"]["namespace"] == NAMESPACE


def test_by_default_the_coordinator_rates_through_the_headless_service(tmp_path):
    docs = render(tmp_path)
    assert sorted(d["kind"] for d in docs) == [
        "ConfigMap", "Job", "Secret", "Secret", "Service", "StatefulSet"]  # fmt: skip
    service, agents = one(docs, "Service"), one(docs, "StatefulSet")
    assert service["spec"]["clusterIP"] == "None"
    assert agents["spec"]["serviceName"] == service["metadata"]["name"]
    assert agents["spec"]["replicas"] == 3
    pod_labels = agents["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= pod_labels.items()
    settings = yaml.safe_load(one(docs, "ConfigMap")["data"]["rating.yaml"])
    assert settings["agents"]["addresses"] == [f"{AGENT_HOST}:7100"]
    assert settings["agents"]["tls"]["server_name"] == AGENT_HOST
    settings["agents"].pop("tls")  # its files exist only inside the pod
    parsed = Settings.model_validate(settings)
    assert parsed.agents.on_failure == "retry" and parsed.store.name == "sqlite"
    assert one(docs, "Job")["metadata"]["name"] == f"{RELEASE}-bgbench-rating-1"  # a revision's
    coordinator = container(docs, "Job")
    assert coordinator["args"][:3] == ["rate", "--config", "/config/rating.yaml"]
    assert coordinator["args"][3:5] == ["--results", "/results"]


@pytest.mark.parametrize("kind", ["StatefulSet", "Job"])
def test_pods_run_unprivileged_with_the_token_from_a_secret(kind, tmp_path):
    docs = render(tmp_path)
    pod = one(docs, kind)["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] != 0
    assert pod["automountServiceAccountToken"] is False
    box = container(docs, kind)
    assert box["securityContext"]["readOnlyRootFilesystem"] is True
    assert box["securityContext"]["allowPrivilegeEscalation"] is False
    assert box["securityContext"]["capabilities"]["drop"] == ["ALL"]
    assert "/tmp" in {m["mountPath"] for m in box["volumeMounts"]}
    token = next(e for e in box["env"] if e["name"] == "BGBENCH_TOKEN")
    assert token["valueFrom"]["secretKeyRef"] == {"name": f"{RELEASE}-bgbench-token",
                                                   "key": "token"}  # fmt: skip
    assert not any("token" in arg.lower() for arg in box["args"])


def decoded(secret: Doc, key: str) -> bytes:
    return base64.b64decode(secret["data"][key])


def test_the_generated_token_and_certificates_are_usable(tmp_path):
    docs = render(tmp_path)
    secrets = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Secret"}
    token = decoded(secrets[f"{RELEASE}-bgbench-token"], "token").decode()
    assert re.fullmatch(r"[A-Za-z0-9]{48}", token)
    tls = secrets[f"{RELEASE}-bgbench-tls"]
    ca = x509.load_pem_x509_certificate(decoded(tls, "ca.pem"))
    agent = x509.load_pem_x509_certificate(decoded(tls, "agent.pem"))
    client = x509.load_pem_x509_certificate(decoded(tls, "coordinator.pem"))
    for cert in (agent, client):
        cert.verify_directly_issued_by(ca)
    names = agent.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert AGENT_HOST in names.get_values_for_type(x509.DNSName)
    assert f"*.{AGENT_HOST}" in names.get_values_for_type(x509.DNSName)
    usage = client.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert ExtendedKeyUsageOID.CLIENT_AUTH in usage
    assert b"PRIVATE KEY" in decoded(tls, "agent.key")
    assert b"PRIVATE KEY" in decoded(tls, "coordinator.key")


def test_non_default_values_reach_the_manifests(tmp_path):
    docs = render(tmp_path, "non-default")
    assert "Secret" not in {d["kind"] for d in docs}  # both are the user's own
    agents = one(docs, "StatefulSet")
    assert agents["spec"]["replicas"] == 5
    claim = agents["spec"]["volumeClaimTemplates"][0]["spec"]
    assert claim["storageClassName"] == "fast-ssd"
    assert claim["resources"]["requests"]["storage"] == "50Gi"
    pod = agents["spec"]["template"]["spec"]
    assert "requiredDuringSchedulingIgnoredDuringExecution" in pod["affinity"]["podAntiAffinity"]
    assert pod["imagePullSecrets"] == [{"name": "registry-login"}]
    assert {v["secret"]["secretName"] for v in pod["volumes"] if "secret" in v} == {"team-tls"}
    agent = container(docs, "StatefulSet")
    assert agent["image"] == "registry.example/team/bgbench:0.1.0-rc1"
    assert agent["args"][agent["args"].index("--processes") + 1] == "auto"
    assert agent["args"][agent["args"].index("--listen") + 1] == "0.0.0.0:7200"
    coordinator = container(docs, "Job")
    url = "postgresql://bgbench@results.db.svc:5432/bgbench"
    assert coordinator["args"][coordinator["args"].index("--results") + 1] == url
    assert coordinator["args"][-4:] == ["--store", "postgres", "-p", "store.options.host=pg.db.svc"]
    password = next(e for e in coordinator["env"] if e["name"] == "PGPASSWORD")
    assert password["valueFrom"]["secretKeyRef"] == {"name": "results-db", "key": "pw"}
    assert one(docs, "Job")["spec"]["ttlSecondsAfterFinished"] == 3600
    settings = yaml.safe_load(one(docs, "ConfigMap")["data"]["rating.yaml"])
    host = f"{RELEASE}-bgbench-agent.{NAMESPACE}.svc.k8s.example"
    assert settings["agents"]["addresses"] == [f"{host}:7200"]
    assert settings["agents"]["on_failure"] == "stop"
    assert settings["agents"]["heartbeat_timeout"] == 30


def test_agents_alone_without_tls(tmp_path):
    docs = render(tmp_path, "plain")
    assert sorted(d["kind"] for d in docs) == ["Secret", "Service", "StatefulSet"]
    agent = container(docs, "StatefulSet")
    assert not {"--tls-cert", "--tls-key", "--tls-client-ca"} & set(agent["args"])
    secret = one(docs, "Secret")
    assert decoded(secret, "token") == b"a-token-of-at-least-sixteen-characters"


@pytest.mark.parametrize(
    ("setting", "named"),
    [
        ("agent.processes=300", "processes"),
        ("auth.token=short", "token"),
        ("agent.antiAffinity=sometimes", "antiAffinity"),
        ("coordinator.results.url=postgresql://u:hunter2hunter2@db:5432/r", "password"),
        ("coordinator.results.url=mysql://u@db/r", "coordinator.results.url"),
        ("coordinator.settings.agents.addresses={a:1}", "agents.addresses is the chart's own"),
        ("coordinator.settings.agents.token=a-token-of-sixteen-chars", "agents.token"),
        ("agnet.replicas=2", "agnet"),
    ],
)
def test_the_values_schema_refuses_bad_values_naming_them(setting, named, tmp_path):
    done = helm("template", RELEASE, str(CHART), "--set", setting, tmp=tmp_path)
    assert done.returncode != 0
    assert named in done.stderr
    assert "hunter2" not in done.stderr + done.stdout


def test_processes_may_be_a_number_or_auto(tmp_path):
    for given, passed in (("4", "4"), ("auto", "auto"), ("256", "256")):
        agent = container(
            render(tmp_path, None, "--set", f"agent.processes={given}"), "StatefulSet"
        )
        assert agent["args"][agent["args"].index("--processes") + 1] == passed


def help_options() -> dict[str, str | None]:
    """`bgbench agent --help`: each flag -> its environment twin (None: it has none)."""
    out = subprocess.run(
        [sys.executable, "-m", "bgbench", "agent", "--help"],
        capture_output=True, text=True, timeout=120, env={**os.environ, "COLUMNS": "1000"},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    options: dict[str, str | None] = {}
    flag = None
    for line in out.stdout.splitlines():
        row = re.match(r"^\W*(--[a-z][a-z0-9-]*)\s", line)
        if row:
            flag = row.group(1)
            options[flag] = None
        twin = re.search(r"env var: (BGBENCH_\w+)", line)
        if twin and flag:
            options[flag] = twin.group(1)
    return options


def named_settings(args: list[str], env_names: list[str]) -> set[str]:
    """The agent flags a command line and its environment set, every one known to --help."""
    options = help_options()
    by_env = {env: flag for flag, env in options.items() if env}
    flags = {a for a in args if a.startswith("--")}
    assert flags <= options.keys(), f"not in bgbench agent --help: {flags - options.keys()}"
    bgbench_env = [n for n in env_names if n.startswith("BGBENCH_")]
    unknown = [n for n in bgbench_env if n not in by_env]
    assert not unknown, f"no agent flag reads {unknown}"
    return flags | {by_env[n] for n in bgbench_env}


def systemd_agent() -> set[str]:
    unit = (SYSTEMD / "bgbench-agent.service").read_text()
    exec_start = re.search(r"^ExecStart=(.*)$", unit, re.M)
    assert exec_start
    env_names = re.findall(r"^(BGBENCH_\w+)=", (SYSTEMD / "agent.env.example").read_text(), re.M)
    return named_settings(exec_start.group(1).split(), env_names)


def test_the_chart_and_the_systemd_unit_name_the_same_agent_flags(tmp_path):
    agent = container(render(tmp_path), "StatefulSet")
    assert agent["args"][0] == "agent"
    chart = named_settings(agent["args"][1:], [e["name"] for e in agent["env"]])
    systemd = systemd_agent()
    assert chart >= ESSENTIAL, ESSENTIAL - chart
    assert systemd >= ESSENTIAL, ESSENTIAL - systemd
    assert chart == systemd


def in_tmp(value: str, tmp: Path) -> str:
    """A path inside the pod (/tls/..., /work) -> the same under tmp."""
    return str(tmp / value.lstrip("/")) if value.startswith(("/tls/", "/work")) else value


@pytest.mark.e2e  # a real agent and a real coordinator, over mutual TLS
def test_a_coordinator_with_the_charts_settings_runs_on_an_agent_with_its_flags(tmp_path):
    """The chart's agent command line, token and generated certificates start a real agent;
    a coordinator given the chart's settings file (only the address and the files' places
    changed) reaches it over mutual TLS, checking the certificate for the Service's name."""
    docs = render(tmp_path)
    secrets = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Secret"}
    (tmp_path / "tls").mkdir()
    for key in ("ca.pem", "agent.pem", "agent.key", "coordinator.pem", "coordinator.key"):
        (tmp_path / "tls" / key).write_bytes(decoded(secrets[f"{RELEASE}-bgbench-tls"], key))
    token = decoded(secrets[f"{RELEASE}-bgbench-token"], "token").decode()
    args = [in_tmp(a, tmp_path) for a in container(docs, "StatefulSet")["args"]]
    args[args.index("--listen") + 1] = "127.0.0.1:0"
    env = {**os.environ, "BGBENCH_TOKEN": token}
    agent = subprocess.Popen(
        [sys.executable, "-m", "bgbench", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        assert agent.stdout is not None
        line = agent.stdout.readline()
        assert line.startswith(AGENT_READY_LINE), line + agent.stderr.read()
        address = line[len(AGENT_READY_LINE) :].strip()
        settings = yaml.safe_load(one(docs, "ConfigMap")["data"]["rating.yaml"])
        settings["agents"]["addresses"] = [address]
        tls = settings["agents"]["tls"]
        assert tls["server_name"] == AGENT_HOST  # the certificate's name, not the address's
        settings["agents"]["tls"] = {k: in_tmp(v, tmp_path) for k, v in tls.items()}
        (tmp_path / "rating.yaml").write_text(yaml.safe_dump(settings))
        done = subprocess.run(
            [sys.executable, "-m", "bgbench", "run", "-c", str(tmp_path / "rating.yaml"),
             "--store", "null", "--threads", "2", "--duration", "1", "--users", "100",
             "--results", str(tmp_path / "results"), "--json"],
            capture_output=True, text=True, timeout=240, env=env, cwd=tmp_path,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        assert json.loads(done.stdout)
        assert token not in done.stdout + done.stderr
    finally:
        agent.kill()
        agent.wait(30)


def test_the_job_waits_for_every_agent_by_name_with_a_bound(tmp_path):
    """The coordinator's init container: done once the name resolves to agent.replicas
    addresses; past its bound, it fails saying how many it found."""
    job = one(render(tmp_path), "Job")["spec"]["template"]["spec"]
    wait = job["initContainers"][0]
    assert wait["args"][1:] == [AGENT_HOST, "3", "600"]
    script = wait["args"][0]
    run = [sys.executable, "-c", script]
    found = subprocess.run([*run, "127.0.0.1", "1", "30"], capture_output=True, text=True,
                           timeout=60)  # fmt: skip
    assert found.returncode == 0 and found.stdout.strip() == "127.0.0.1: 1 agents"
    short = subprocess.run([*run, "127.0.0.1", "2", "1"], capture_output=True, text=True,
                           timeout=60)  # fmt: skip
    assert short.returncode == 1
    assert short.stderr.strip() == "127.0.0.1: 1 of 2 agents ready after 1 s"
