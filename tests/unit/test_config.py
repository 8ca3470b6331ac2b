from pathlib import Path

import pytest

from bgbench.coordinator.configuration.config import load_settings, parse_override
from bgbench.errors import UserError
from bgbench.workloads.bg.mixes import NAMED_MIXES, resolve_mix


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_defaults_are_valid():
    s = load_settings(None, [])
    assert s.store.name == "sqlite"
    assert s.bg.workload.zipfianmean == 0.27
    assert s.sla.alpha == 95 and s.sla.beta_ms == 100 and s.sla.tau == 0.1


def test_file_then_flags(tmp_path):
    f = write(
        tmp_path,
        "s.toml",
        '[bg.database]\nusercount = 5000\n[run]\nthreadcount = 4\n[store]\nname = "null"\n',
    )
    s = load_settings(f, [parse_override("threadcount=16"), parse_override("run.seed=9")])
    assert s.bg.database.usercount == 5000
    assert s.run.threadcount == 16  # the flag wins over the file
    assert s.run.seed == 9
    assert s.store.name == "null"


def test_yaml_files(tmp_path):
    f = write(tmp_path, "s.yaml", "bg:\n  workload:\n    mix: high\n")
    assert load_settings(f, []).bg.workload.mix == "high"


@pytest.mark.parametrize(
    ("override", "field"),
    [
        ("usercount=1", "bg.database.usercount"),
        ("threadcount=0", "run.threadcount"),
        ("zipfianmean=1.5", "bg.workload.zipfianmean"),
        ("bg.workload.mix=lots", "bg.workload.mix"),
        ("friendcountperuser=3", "bg.database.friendcountperuser"),
        ("run.threads=3", "run.threads"),
        ("sla.tau=-1", "sla.tau"),
    ],
)
def test_bad_values_name_the_field_in_one_line(override, field):
    with pytest.raises(UserError) as info:
        load_settings(None, [parse_override(override)])
    message = str(info.value)
    assert field in message
    assert "\n" not in message


def test_bad_file_is_one_line(tmp_path):
    f = write(tmp_path, "bad.toml", "[run\nthreadcount = 4\n")
    with pytest.raises(UserError, match="not valid TOML") as info:
        load_settings(f, [])
    assert "\n" not in str(info.value)
    with pytest.raises(UserError, match="No such file"):
        load_settings(tmp_path / "missing.toml", [])


def test_friends_must_fit_in_the_database():
    with pytest.raises(UserError, match="friendcountperuser"):
        load_settings(
            None, [parse_override("usercount=10"), parse_override("friendcountperuser=10")]
        )


def test_named_mixes_are_table_3():
    for name in ("verylow", "low", "high"):
        mix = NAMED_MIXES[name]
        assert sum(mix.values()) == pytest.approx(100)
    writes = {"IF", "AFR", "RFR", "TF", "PCR", "DCR"}
    share = {n: sum(v for k, v in NAMED_MIXES[n].items() if k in writes) for n in NAMED_MIXES}
    assert share["verylow"] == pytest.approx(0.1)
    assert share["low"] == pytest.approx(1)
    assert share["high"] == pytest.approx(10)
    assert resolve_mix("10%") == resolve_mix("high")


def test_custom_mixes_are_normalised_and_checked():
    assert resolve_mix({"VP": 3, "ViewSelfProfileSession": 1}) == {
        "VP": 0.75,
        "ViewSelfProfileSession": 0.25,
    }
    with pytest.raises(ValueError, match="unknown mix entry"):
        resolve_mix({"XX": 1})
    with pytest.raises(ValueError, match="more than 0"):
        resolve_mix({"VP": 0})
    assert resolve_mix("VP") == {"VP": 1.0}  # one action alone, by its code
    assert resolve_mix("InviteFrdSession") == {"InviteFrdSession": 1.0}
