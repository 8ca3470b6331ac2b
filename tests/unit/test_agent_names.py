"""Listed agent addresses whose name stands for many agents (coordinator/execution/
agent_names.py): what each listing expands to, and the TLS name each expanded agent is
checked for. The resolver is a table here; tests/e2e/test_agents_by_name.py resolves a
real name through /etc/hosts."""

import ipaddress

from bgbench.coordinator.execution.agent_names import agents_of, expand, resolve

TABLE = {
    "agents.svc": ["10.1.0.7", "10.1.0.3", "10.1.0.3", "fd00::7", "10.1.0.12"],
    "one.svc": ["10.2.0.1", "fd00::1"],
    "v6.svc": ["fd00::b", "fd00::a"],
    "other.svc": ["10.1.0.12", "10.9.0.1"],
}


def table(host: str, port: int) -> list:
    return [ipaddress.ip_address(a) for a in TABLE.get(host, [])]


def test_a_name_of_many_addresses_is_one_agent_each_deduplicated_and_sorted():
    assert agents_of("agents.svc:7100", table) == [
        "10.1.0.3:7100", "10.1.0.7:7100", "10.1.0.12:7100",
    ]  # fmt: skip


def test_ipv4_is_preferred_and_ipv6_alone_is_bracketed():
    assert agents_of("one.svc:7100", table) == ["one.svc:7100"]  # A and AAAA: one host
    assert agents_of("v6.svc:7100", table) == ["[fd00::a]:7100", "[fd00::b]:7100"]


def test_addresses_and_names_of_one_or_no_address_stay_as_listed():
    for address in ("10.0.0.1:7100", "[::1]:7100", "nowhere.invalid:7100", "one.svc:7100"):
        assert agents_of(address, table) == [address]


def test_expansion_keeps_each_names_capacity_and_tls_name():
    listed = expand(["agents.svc:7100", "10.5.0.1:7100", "other.svc:7100"], [2.0, 1.0, 3.0], table)
    # 10.1.0.12 is agents.svc's: the first name that listed it
    assert listed.addresses == [
        "10.1.0.3:7100", "10.1.0.7:7100", "10.1.0.12:7100", "10.5.0.1:7100", "10.9.0.1:7100",
    ]  # fmt: skip
    assert listed.capacities == [2.0, 2.0, 2.0, 1.0, 3.0]
    assert listed.server_names["10.1.0.7:7100"] == "agents.svc"
    assert listed.server_names["10.9.0.1:7100"] == "other.svc"
    assert "10.5.0.1:7100" not in listed.server_names
    assert listed.said() == "agents.svc:7100 is 3 agents; other.svc:7100 is 2 agents"


def test_without_expansion_nothing_changes():
    listed = expand(["10.0.0.1:7100", "10.0.0.1:7100", "one.svc:7100"], None, table)
    assert listed.addresses == ["10.0.0.1:7100", "10.0.0.1:7100", "one.svc:7100"]
    assert listed.capacities is None and listed.server_names == {} and listed.said() == ""


def test_the_real_resolver_finds_loopback_and_not_an_invalid_name():
    assert ipaddress.ip_address("127.0.0.1") in resolve("127.0.0.1", 7100)
    assert resolve("no-such-host.invalid", 7100) == []
