"""The [resources] section and sla.client_bound: accepted when sound, refused in one line
naming the setting when not (settings are untrusted input)."""

from pathlib import Path

import pytest

from bgbench.coordinator.configuration.config import load_settings, parse_override
from bgbench.coordinator.execution.checkconfig import check_settings_file
from bgbench.errors import UserError
from bgbench.resources.bottleneck import Thresholds


def test_defaults():
    s = load_settings(None, [])
    r = s.resources
    assert r.discover_store and not r.store_pids and not r.node_exporters and not r.monitors
    assert r.thresholds == Thresholds(0.9, 0.9, 0.9, 0.9)
    assert s.sla.client_bound == "warn"


def test_a_full_section_is_accepted(tmp_path: Path):
    f = tmp_path / "s.toml"
    f.write_text(
        '[store]\nname = "null"\n'
        "[resources]\n"
        "store_pids = [41, 4194303]\n"
        'store_process_names = ["postgres", "memcached"]\n'
        'store_container = "b7c1e0f3a2d4"\n'
        "discover_store = false\n"
        'node_exporters = ["127.0.0.1:9100", "https://db1.example:9100/metrics", "[::1]:9100"]\n'
        'monitors = ["db2.example:50099"]\n'
        "cpu_saturation = 0.8\nclient_saturation = 1\ndisk_saturation = 0.5\n"
        "network_saturation = 0.01\n"
        '[sla]\nclient_bound = "fail"\n'
    )
    s = check_settings_file(f, [])
    assert s.resources.store_pids == [41, 4194303]
    assert s.resources.node_exporters[1] == "https://db1.example:9100/metrics"
    assert s.resources.thresholds == Thresholds(cpu=0.8, client=1.0, disk=0.5, network=0.01)
    assert s.sla.client_bound == "fail"


@pytest.mark.parametrize(
    ("override", "field", "says"),
    [
        ("resources.store_pids=[0]", "resources.store_pids.0", "greater than 0"),
        ("resources.store_pids=[-3]", "resources.store_pids.0", "greater than 0"),
        ("resources.store_pids=[99999999999]", "resources.store_pids.0", "less than"),
        ("resources.store_pids=" + str(list(range(1, 70))), "resources.store_pids", "at most 64"),
        ('resources.store_process_names=["a b"]', "store_process_names", "letters, digits"),
        ('resources.store_process_names=[""]', "store_process_names.0", "at least 1"),
        ('resources.store_process_names=["' + "p" * 300 + '"]', "store_process_names.0", "255"),
        ('resources.store_container="../etc"', "resources.store_container", "letters, digits"),
        ('resources.node_exporters=["db1"]', "resources.node_exporters", "must be host:port"),
        ('resources.node_exporters=["db1:0"]', "resources.node_exporters", "must be host:port"),
        ('resources.node_exporters=["ftp://db1:21"]', "node_exporters", "http(s) URL"),
        ('resources.node_exporters=["http://u:pw@db1:9100"]', "node_exporters", "credentials"),
        ('resources.node_exporters=["http://db1:99999"]', "node_exporters", "bad port"),
        ('resources.monitors=["db 2:50099"]', "resources.monitors", "must be host:port"),
        ("resources.cpu_saturation=0", "resources.cpu_saturation", "greater than 0"),
        ("resources.client_saturation=1.5", "resources.client_saturation", "less than or equal"),
        ('resources.disk_saturation="nan"', "resources.disk_saturation", "finite"),
        ("resources.surprise=1", "resources.surprise", "unknown setting"),
        ('sla.client_bound="maybe"', "sla.client_bound", "'warn' or 'fail'"),
    ],
)
def test_bad_values_are_one_line_naming_the_setting(override, field, says):
    with pytest.raises(UserError) as err:
        load_settings(None, [parse_override(override)])
    message = str(err.value)
    assert "\n" not in message
    assert field in message and says in message, message
