"""`bgbench validate DIR`: stored bgbench logs, and the original BG Java logs."""

import csv
import json
import threading
from pathlib import Path

from bgbench.worker.engine import FragmentEngine, RunSpec
from bgbench.workloads.bg.config import BGConfig
from bgbench.workloads.bg.stores.sqlite import SQLiteOptions
from bgbench.workloads.bg.workload import WORKLOAD
from tests.helpers import bgbench
from tests.integration.test_engine import StaleBinding


def stale_run(tmp: Path) -> dict:
    cfg = BGConfig.model_validate({"database": {"usercount": 100}, "workload": {"mix": "high"}})
    binding = StaleBinding(SQLiteOptions(path=str(tmp / "db.sqlite")))
    engine = FragmentEngine(WORKLOAD, cfg, "sqlite", {}, (1.0,), 0, binding=binding)
    engine.prepare()
    engine.run(RunSpec("stale", 4, 2, 0, 1, tmp / "exp" / "stale"), threading.Event(), lambda *_: 0)
    return engine.validate(tmp / "exp" / "stale")


def test_validate_rereads_stored_logs_and_lists_every_bad_read(tmp_path):
    online = stale_run(tmp_path)
    assert online.unpredictable_reads > 0
    per_read = tmp_path / "bad.csv"
    proc = bgbench("validate", str(tmp_path / "exp"), "--json", "--per-read", str(per_read))
    assert proc.returncode == 0, proc.stderr
    d = json.loads(proc.stdout)
    assert d["source"] == "bgbench" and d["engine"] == "memory"
    assert d["reads"] == online.reads
    assert d["unpredictable_reads"] == online.unpredictable_reads
    assert d["unpredictable_sessions"] == online.unpredictable_sessions
    assert d["by_action"]["VP"]["unpredictable"] == d["unpredictable_reads"]
    assert d["lag"]["max_ms"] is not None and d["lag"]["p50_ms"] <= d["lag"]["max_ms"]
    with open(per_read) as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == d["unpredictable_reads"]
    assert {r["action"] for r in rows} == {"VP"}
    # the same logs out of core give the same answer
    proc = bgbench("validate", str(tmp_path / "exp"), "--json", "--memory-budget", "64KiB")
    ooc = json.loads(proc.stdout)
    assert ooc["engine"] == "out-of-core"
    for key in ("reads", "unpredictable_reads", "sessions", "unpredictable_sessions", "lag"):
        assert ooc[key] == d[key], key


def write_bg_logs(directory: Path) -> None:
    directory.mkdir()
    # Paper Table 10 on item (NumFriends, 7): reads of 3 (unpredictable) and 2 (valid).
    (directory / "read1-0.txt").write_text(
        "READ,NumFriends,1,0,7,0,10,3,ViewProfile\n"
        "READ,NumFriends,2,0,7,0,10,2,ViewProfile\n"
        "READ,PendingCount,3,0,7,20,30,5,ViewFriendReq\n"
    )
    (directory / "update1-1.txt").write_text(
        "UPDATE,NumFriends,10,1,7,1,3,1,D,ThawFriendship\n"
        "UPDATE,NumFriends,11,1,7,2,4,1,I,AcceptFriend\n"
        "UPDATE,NumFriends,12,1,7,5,6,2,I,AcceptFriend\n"
    )


def test_validate_reads_the_original_bg_logs(tmp_path):
    logs = tmp_path / "bg"
    write_bg_logs(logs)
    # with I = +1 the third update adds 1, not 2: valid values are {-1, 0, 1}
    initial = tmp_path / "initial.csv"
    initial.write_text("type,rid,value\nNumFriends,7,0\nPendingCount,7,5\n")
    proc = bgbench("validate", str(logs), "--initial", str(initial), "--json")
    assert proc.returncode == 0, proc.stderr
    d = json.loads(proc.stdout)
    assert d["source"] == "bg" and d["logs"] == 2
    assert (d["reads"], d["writes"], d["unpredictable_reads"]) == (3, 3, 2)
    assert d["by_item"]["NumFriends"] == {"reads": 2, "unpredictable": 2}
    assert d["by_action"]["ViewFriendReq"] == {"reads": 1, "unpredictable": 0}
    proc = bgbench("validate", str(logs), "--initial-default", "0", "--json")
    assert json.loads(proc.stdout)["unpredictable_reads"] == 3  # PendingCount 5 != 0


def test_malformed_bg_lines_are_named_never_dropped(tmp_path):
    logs = tmp_path / "bg"
    write_bg_logs(logs)
    with open(logs / "read1-0.txt", "a") as f:
        f.write("READ,NumFriends,4,0,seven,0,10,3,ViewProfile\nREAD,short\n")
    proc = bgbench("validate", str(logs), "--initial-default", "0")
    assert proc.returncode == 2
    assert "2 malformed lines" in proc.stderr and "read1-0.txt:4" in proc.stderr
    proc = bgbench("validate", str(logs), "--initial-default", "0", "--allow-malformed", "--json")
    d = json.loads(proc.stdout)
    assert d["malformed_lines"] == 2 and d["reads"] == 3
    assert any("read1-0.txt:5" in m for m in d["malformed"])


def test_validate_without_logs_or_initial_values_is_one_clear_line(tmp_path):
    proc = bgbench("validate", str(tmp_path))
    assert proc.returncode == 2 and "no logs" in proc.stderr
    logs = tmp_path / "bg"
    write_bg_logs(logs)
    proc = bgbench("validate", str(logs))
    assert proc.returncode == 2 and "--initial" in proc.stderr
    assert proc.stderr.count("\n") == 1


def log_dirs(root: Path) -> list[Path]:
    return sorted({p.parent for p in root.rglob("log-f*.bglog")})


def counts(d: dict) -> tuple[int, int, int, int, int]:
    keys = ("reads", "unpredictable_reads", "writes", "sessions", "unpredictable_sessions")
    return tuple(d[k] for k in keys)  # type: ignore[return-value]


def validate_json(path: Path, *extra: str) -> dict:
    proc = bgbench("validate", str(path), "--json", *extra)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_a_rating_validates_as_the_sum_of_its_experiments(tmp_path):
    # With --state reload every experiment starts from freshly loaded data: the same item
    # ids with different initial values in every experiment. Merged into one history they
    # looked stale (issue 11: 53,399 of 141,374 reads); each against its own, none is.
    results = tmp_path / "res"
    proc = bgbench(
        "rate", "--store", "sqlite", "--objective", "socialites", "--mix", "high",
        "--state", "reload", "--delta-search", "1", "--delta", "1", "--max-threads", "8",
        "--users", "400", "--results", str(results),
        "-p", f"store.options.path={tmp_path / 'db.sqlite'}", "-p", "rating.final_runs=2",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (rating,) = [p for p in results.iterdir() if p.is_dir()]
    one_by_one = [validate_json(d) for d in log_dirs(rating)]
    experiments = {d.name for d in log_dirs(rating)}
    assert len(experiments) >= 3  # a search over T = 1, 2, 4, 8
    expected = tuple(map(sum, zip(*(counts(d) for d in one_by_one), strict=True)))
    assert expected[0] > 1000 and expected[1] == 0

    whole = validate_json(rating)
    assert counts(whole) == expected
    assert whole["logs"] == len(one_by_one) and whole["experiments_validated"] == len(experiments)
    assert whole["unfinished_skipped"] == 0
    per_experiment = {e["experiment"]: e for e in whole["experiments"]}
    assert set(per_experiment) == experiments
    assert sum(e["reads"] for e in per_experiment.values()) == whole["reads"]
    assert all(e["unpredictable_reads"] == 0 for e in per_experiment.values())

    agent = next(p for p in sorted(rating.iterdir()) if p.name.startswith("agent-"))
    agent_expected = tuple(
        map(sum, zip(*(counts(validate_json(d)) for d in log_dirs(agent)), strict=True))
    )
    assert counts(validate_json(agent)) == agent_expected
    # out of core, log by log, the same answer
    assert counts(validate_json(rating, "--memory-budget", "64KiB")) == expected
