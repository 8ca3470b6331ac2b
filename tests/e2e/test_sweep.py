"""`bgbench rate --objective sweep` end to end on SQLite through a real agent: the table
printed and recorded, a thread count that does not fit clipped with its reason, and a
sweep an agent's death ends (exit 3) resumed without repeating what finished."""

import json
import re
import subprocess

import psutil

from bgbench.coordinator.storage.results import ResultsStore
from tests.helpers import BGBENCH, bgbench

SWEEP_LINE = re.compile(r"^\s*sweep T=(\d+)")
TABLE_ROW = re.compile(r"^│\s*(\d+)\s*│")  # a thread count's first row in the sweep table


def sweep_args(tmp, threads: str, *extra: str) -> list[str]:
    """One agent with one load process (one fragment, so T=1 can run) over 100 members."""
    return [
        "rate", "--objective", "sweep", "--store", "sqlite", "--agents", "1",
        "--processes", "1", "--users", "100", "--delta", "1", "--results", str(tmp),
        "-p", f"store.options.path={tmp / 'bg.sqlite'}", "-p", f"rating.sweep_threads={threads}",
        "-p", "rating.sweep_repeats=2", *extra,
    ]  # fmt: skip


def words(text: str) -> str:
    return " ".join(text.split())  # rich may wrap a long line


def sweep_rows(tmp, rating_id: str) -> list[dict]:
    return [e for e in ResultsStore(tmp).experiments(rating_id) if e["phase"] == "sweep"]


def test_a_sweep_prints_its_table_and_clips_what_does_not_fit(tmp_path):
    proc = bgbench(*sweep_args(tmp_path, "[1,2,4,500]"))
    assert proc.returncode == 0, proc.stderr
    reason = "sweep: T=500 not run: at most 100 threads fit in this database"
    assert reason in words(proc.stderr) and reason in words(proc.stdout)
    assert "raise bg.database.usercount" in words(proc.stderr)
    rating_id = re.search(r"Thread sweep (R[\w-]+)", proc.stdout).group(1)
    table = proc.stdout.split("thread sweep: each T run 2 times for 1 s")[1]
    table = table.split("experiments, in the order they ran")[0]
    assert [int(m.group(1)) for m in map(TABLE_ROW.match, table.splitlines()) if m] == [1, 2, 4]
    assert "VP View Profile" in table and "p95 ms" in table
    rows = sweep_rows(tmp_path, rating_id)
    assert [r["threads"] for r in rows] == [1, 1, 2, 2, 4, 4]
    assert all(r["status"] in ("passed", "failed") and r["duration_s"] == 1 for r in rows)
    assert len(ResultsStore(tmp_path).experiments(rating_id)) == 6  # nothing at T=500

    csv_file = tmp_path / "sweep.csv"
    shown = bgbench("results", "sweep", rating_id, "--results", str(tmp_path), "--csv",
                    str(csv_file))  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    assert reason in words(shown.stdout)
    lines = csv_file.read_text().splitlines()
    assert lines[0].startswith("threads,repeats,passed,actions_per_s")
    assert {line.split(",")[0] for line in lines[1:]} == {"1", "2", "4"}
    exported = tmp_path / "export.json"
    export = bgbench("results", "export", rating_id, "--format", "json", "-o", str(exported),
                     "--results", str(tmp_path))  # fmt: skip
    assert export.returncode == 0, export.stderr
    sweep = json.loads(exported.read_text())["summary"]["sweep"]
    assert [r["threads"] for r in sweep["rows"]] == [1, 2, 4]


def test_a_sweep_as_json_has_its_table(tmp_path):
    proc = bgbench(*sweep_args(tmp_path, "[1,2,4]", "--json"))
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["objective"] == "sweep" and summary["soar"] is None
    table = summary["sweep"]
    assert table["repeats"] == 2 and table["duration_s"] == 1 and table["clipped"] == []
    assert [r["threads"] for r in table["rows"]] == [1, 2, 4]
    rows = sweep_rows(tmp_path, summary["rating_id"])
    assert len(rows) == 6
    for row in table["rows"]:
        runs = [r["actions_per_s"] for r in rows if r["threads"] == row["threads"]]
        assert row["repeats"] == 2 and abs(row["actions_per_s"] - sum(runs) / 2) < 1e-6
        assert row["actions_per_s_min"] == min(runs) and row["actions_per_s_max"] == max(runs)
        names = [a["action"] for a in row["actions"]]
        assert names[-1] == "all" and "VP" in names
        assert all(a["p95_ms"] > 0 and a["mean_ms"] > 0 for a in row["actions"] if a["count"])
        assert row["unpredictable_reads"] == 0 and row["reads"] > 0


def _agents_of(pid: int) -> list[psutil.Process]:
    return [
        c
        for c in psutil.Process(pid).children()
        if any("bgbench.worker.agent" in part for part in c.cmdline())
    ]


def test_a_sweep_an_agent_death_ends_is_resumed_without_repeats(tmp_path):
    coordinator = subprocess.Popen(
        [*BGBENCH, *sweep_args(tmp_path, "[1,2,4]")],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    spawned: list[psutil.Process] = []
    try:
        lines, done = [], 0
        assert coordinator.stderr is not None
        for line in coordinator.stderr:
            lines.append(line)
            if SWEEP_LINE.match(line):
                done += 1
                if done == 2:  # two experiments recorded: the agent dies before the third
                    agents = _agents_of(coordinator.pid)
                    spawned += [p for a in agents for p in [a, *a.children(recursive=True)]]
                    assert agents, "".join(lines)
                    agents[0].kill()
        assert coordinator.wait(120) == 3, "".join(lines)  # an infrastructure failure
    finally:
        if coordinator.poll() is None:
            coordinator.kill()
            coordinator.wait(10)
        for p in spawned:
            if p.is_running():
                p.kill()
    end = words(lines[-1])
    assert end.startswith("bgbench: fault:") and "infrastructure failure" in end, lines
    rating_id = re.search(r"--resume (R[\w-]+)", end).group(1)
    before = sweep_rows(tmp_path, rating_id)
    finished = [r for r in before if r["status"] != "fault"]
    assert len(finished) >= 2 and before[-1]["status"] == "fault"
    assert ResultsStore(tmp_path).rating(rating_id)["status"] == "failed"

    proc = bgbench("rate", "--resume", rating_id, "--results", str(tmp_path), "--json")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert [r["threads"] for r in summary["sweep"]["rows"]] == [1, 2, 4]
    after = [r for r in sweep_rows(tmp_path, rating_id) if r["status"] != "fault"]
    assert [r["threads"] for r in after] == [1, 1, 2, 2, 4, 4]
    assert [r["seq"] for r in after[: len(finished)]] == [r["seq"] for r in finished]
    assert summary["experiments_run_now"] == 6 - len(finished)
    assert any(f"resumed: {len(finished)}" in n for n in summary["notes"]), summary["notes"]
