"""The Compose example (deploy/compose/) as files: its network in RFC 2544's benchmarking
range, PostgreSQL limited in CPU, two agents found by one name, no secret in its files.
tests/e2e/test_containers.py runs it for real."""

import ipaddress
import tomllib
from pathlib import Path

import yaml

COMPOSE = Path(__file__).resolve().parents[2] / "deploy" / "compose"
BENCHMARKING = ipaddress.ip_network("198.18.0.0/15")


def _compose() -> dict:
    data: dict = yaml.safe_load((COMPOSE / "compose.yaml").read_text())
    return data


def test_the_network_is_in_the_benchmarking_range_never_a_private_one():
    (config,) = _compose()["networks"]["bench"]["ipam"]["config"]
    default = config["subnet"].split(":-", 1)[1].rstrip("}")
    subnet = ipaddress.ip_network(default)
    assert subnet.subnet_of(BENCHMARKING)
    for private in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"):
        assert not subnet.overlaps(ipaddress.ip_network(private))


def test_postgres_is_cpu_limited_and_two_agents_share_one_name():
    services = _compose()["services"]
    assert float(services["postgres"]["cpus"]) == 1.0
    assert services["agent"]["scale"] == 2
    assert "0.0.0.0:7100" in services["agent"]["command"]
    rating = tomllib.loads((COMPOSE / "rating.toml").read_text())
    assert rating["agents"]["addresses"] == ["agent:7100"]
    assert rating["store"]["name"] == "postgres"


def test_secrets_come_from_the_environment_only():
    services = _compose()["services"]
    for name in ("agent", "coordinator"):
        env = services[name]["environment"]
        assert env["BGBENCH_TOKEN"] == "${BGBENCH_TOKEN:-}"
        assert env["PGPASSWORD"] == "${PGPASSWORD:-}"
    assert services["postgres"]["environment"]["POSTGRES_PASSWORD"] == "${PGPASSWORD:-}"
    dsn = tomllib.loads((COMPOSE / "rating.toml").read_text())["store"]["options"]["dsn"]
    assert "password" not in dsn
