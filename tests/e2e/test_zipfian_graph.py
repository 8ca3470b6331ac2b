"""A Zipfian social graph end to end (issue 29): a SQLite rating and a PostgreSQL run on
Zipfian friendships, invitations and resource walls with comments restricted to friends,
every write action in the mix, validated with no unpredictable read; the store holds the
skewed graph the generator made."""

import json
import sqlite3
from pathlib import Path

import psycopg

from bgbench.coordinator.storage.results import ResultsStore
from tests.conftest import fresh_database
from tests.helpers import bgbench

SKEWED_GRAPH = """\
bg:
  database:
    friendship_distribution: zipfian
    resource_distribution: zipfian
    comments: friends
    confperc: 0.5
    commentcountperresource: 2
  workload:
    mix: {VP: 15, LF: 10, VFR: 10, IF: 6, AFR: 6, RFR: 4, TF: 4, VTR: 10, VCR: 15, PCR: 12, DCR: 8}
"""
WRITES = {"IF", "AFR", "RFR", "TF", "PCR", "DCR"}
READS = {"VP", "LF", "VFR", "VTR", "VCR"}


def settings(tmp: Path) -> str:
    path = tmp / "zipfian.yaml"
    path.write_text(SKEWED_GRAPH)
    return str(path)


def assert_skewed(relationships_per_member: list[int], members: int) -> None:
    """Mean phi (10) over the loaded members, the first member far above it (a ring: all 10)."""
    counts = sorted(relationships_per_member, reverse=True)
    assert sum(counts) / members < 10.5  # writes moved a few since the load
    assert counts[0] >= 5 * 10, counts[:5]


def assert_clean(result: dict) -> None:
    done = {a["action"] for a in result["per_action"]}
    assert done & WRITES == WRITES and done & READS == READS, done
    assert result["reads"] > 0 and result["unpredictable_reads"] == 0
    assert result["errors"] == 0


def test_a_sqlite_rating_on_a_zipfian_graph_validates_clean(tmp_path):
    db = tmp_path / "bg.sqlite"
    proc = bgbench(
        "rate", "--store", "sqlite", "--agents", "2", "--users", "400", "--json",
        "--delta-search", "1", "--delta", "1.5", "--max-threads", "8",
        "--results", str(tmp_path), "-c", settings(tmp_path),
        "-p", f"store.options.path={db}", "-p", "sla.beta_ms=1000", "-p", "rating.final_runs=1",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    s = json.loads(proc.stdout)
    rows = ResultsStore(tmp_path).experiments(s["rating_id"])
    assert len(rows) >= 2
    for row in rows:
        assert_clean(json.loads(row["result_json"]))
    with sqlite3.connect(db) as conn:
        ends = conn.execute(
            "SELECT m, count(*) FROM (SELECT inviterid AS m FROM friendship "
            "UNION ALL SELECT inviteeid FROM friendship) GROUP BY m"
        ).fetchall()
        walls = conn.execute("SELECT count(*) FROM resources GROUP BY walluserid").fetchall()
    assert_skewed([n for _, n in ends], 400)
    assert max(n for (n,) in walls) >= 5 * 10  # resources per wall: mean rho, skewed


def test_a_postgres_run_on_a_zipfian_graph_validates_clean(tmp_path, postgres_server):
    dsn = fresh_database(postgres_server)
    proc = bgbench(
        "run", "--store", "postgres", "--threads", "4", "--duration", "2", "--agents", "1",
        "--users", "500", "--results", str(tmp_path / "results"), "--json",
        "-c", settings(tmp_path), "-p", f"store.options.dsn={dsn}",
        "-p", "agents.heartbeat_timeout=60",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert_clean(json.loads(proc.stdout))
    with psycopg.connect(dsn) as conn:
        ends = conn.execute(
            "SELECT m, count(*) FROM (SELECT inviterid AS m FROM friendship "
            "UNION ALL SELECT inviteeid FROM friendship) AS e GROUP BY m"
        ).fetchall()
    assert_skewed([int(n) for _, n in ends], 500)
