"""Cassandra, HBase and PostgreSQL rated side by side, and the consistency audit of a
3-node Cassandra cluster: what strong consistency costs, and what eventual consistency
hands out.

    .venv/bin/python benchmarks/real_stores.py consistency   # 3 nodes, RF 3
    .venv/bin/python benchmarks/real_stores.py soar          # 1-node Cassandra, HBase, PostgreSQL

- consistency: on Cassandra 127.0.0.1-3 with replication factor 3, the 10%-write mix
  (`high`) with (a) writes ONE / reads ONE and (b) QUORUM / QUORUM: a rating of each
  (a 30 s warm-up at T=8, search 5 s, final 10 s), then REPEATS fixed-T runs of each,
  alternating (a) and (b) so drift hits both alike. Prints throughput, the validator's
  unpredictable reads, the lag of the stale reads (how long before the read the write
  it missed had completed) and the load process's CPU.
- soar: SoAR of 1-node Cassandra, HBase and PostgreSQL at one setting (`low` mix, 1,000
  members, 2 agents, SoAR search 3 s, final 6 s), as benchmarks/paper_effects.py stores.

Servers are started on loopback by deploy/local/servers.py in temporary directories and
stopped at the end; the 3-node cluster needs about 3 GB of memory.
"""

import argparse
import json
import tempfile
from pathlib import Path

from harness import bgbench, new_database, servers

from bgbench.coordinator.results import ResultsStore

SETTINGS = {"ONE/ONE": "ONE", "QUORUM/QUORUM": "QUORUM"}


def experiments(results: str, rating_id: str) -> list[dict]:
    """A rating's experiments' results, from the results store."""
    return [
        json.loads(e["result_json"]) for e in ResultsStore(Path(results)).experiments(rating_id)
    ]


def client_cpu(result: dict) -> float:
    """The busiest load process's CPU, % of one core: is the client the bottleneck?"""
    return max(a["cpu_percent"] for a in result["agents"])


def cassandra_options(server: dict, level: str, keyspace: str, rf: int) -> list[str]:
    return [
        "-p", f"store.options.hosts={','.join(server['hosts'])}",
        "-p", f"store.options.port={server['port']}",
        "-p", f"store.options.replication_factor={rf}", "-p", f"store.options.keyspace={keyspace}",
        "-p", f"store.options.read_consistency={level}",
        "-p", f"store.options.write_consistency={level}",
    ]  # fmt: skip


def consistency(tmp: Path, args: argparse.Namespace) -> None:
    cluster_dir = tmp / "cassandra3"
    server = servers.start("cassandra-cluster", cluster_dir)
    results = str(tmp / "results")
    common = ["--store", "cassandra", "--mix", "high", "--users", str(args.users),
              "--results", results]  # fmt: skip
    try:
        print(f"Cassandra 5.0.2, 3 nodes on 127.0.0.1-3, RF 3, `high` mix (10% writes), "
              f"{args.users:,} members, 1 agent")  # fmt: skip
        print("\nRatings (SLA: 95% of actions within 100 ms, at most 0.1% unpredictable reads)")
        print(f"{'writes/reads':>14} {'SoAR':>8} {'at T':>5} {'Socialites':>10} "
              f"{'reads':>9} {'unpredictable':>13} {'%':>8}")  # fmt: skip
        for label, level in SETTINGS.items():
            s = bgbench(
                "rate", *common, "--agents", "1", "--delta-search", "5", "--delta", "10",
                "--max-threads", "128", "--warmup", "30",
                *cassandra_options(server, level, f"rate_{level.lower()}", 3),
            )  # fmt: skip
            runs = experiments(results, s["rating_id"])
            reads = sum(e["reads"] for e in runs)
            stale = sum(e["unpredictable_reads"] for e in runs)
            print(f"{label:>14} {s['soar']:>8,.0f} {s['soar_threads']:>5} "
                  f"{s['socialites']:>10} {reads:>9,} {stale:>13,} "
                  f"{100 * stale / max(reads, 1):>8.4f}", flush=True)  # fmt: skip
        print(f"\nFixed T={args.threads}, {args.duration:.0f} s each, alternating, "
              f"{args.repeats} of each")  # fmt: skip
        print(f"{'writes/reads':>14} {'actions/s':>10} {'p95 ms':>7} {'reads':>9} "
              f"{'unpredictable':>13} {'%':>8} {'lag p50 ms':>10} {'lag max ms':>10} "
              f"{'client CPU %':>12}")  # fmt: skip
        totals: dict[str, list[dict]] = {label: [] for label in SETTINGS}
        for _ in range(args.repeats):
            for label, level in SETTINGS.items():
                r = bgbench(
                    "run", *common, "--agents", "1", "--threads", str(args.threads),
                    "--duration", str(args.duration),
                    *cassandra_options(server, level, f"audit_{level.lower()}", 3),
                )  # fmt: skip
                totals[label].append(r)
                lag = r["lag"]
                print(f"{label:>14} {r['actions_per_s']:>10,.0f} {r['overall']['p95_ms']:>7.1f} "
                      f"{r['reads']:>9,} {r['unpredictable_reads']:>13,} "
                      f"{r['unpredictable_percent']:>8.4f} {lag['p50_ms']:>10.2f} "
                      f"{lag['max_ms']:>10.2f} {client_cpu(r):>12.0f}", flush=True)  # fmt: skip
        print("\nMeans over the fixed-T runs")
        base = None
        for label, runs in totals.items():
            rate = sum(r["actions_per_s"] for r in runs) / len(runs)
            reads = sum(r["reads"] for r in runs)
            stale = sum(r["unpredictable_reads"] for r in runs)
            base = base or rate
            print(f"{label:>14} {rate:>10,.0f} actions/s ({100 * (rate / base - 1):+.1f}% vs "
                  f"ONE/ONE), {stale:,} unpredictable of {reads:,} reads "
                  f"({100 * stale / max(reads, 1):.4f}%)")  # fmt: skip
    finally:
        servers.stop(cluster_dir)


def soar(tmp: Path, args: argparse.Namespace) -> None:
    results = str(tmp / "results")
    started = {}
    try:
        for kind in ("postgres", "cassandra", "hbase"):
            started[kind] = servers.start(kind, tmp / kind)
        pg, cas, hb = started["postgres"], started["cassandra"], started["hbase"]
        dsn = new_database(pg)
        runs = {
            "PostgreSQL 15": ["--store", "postgres", "-p", f"store.options.dsn={dsn}"],
            "Cassandra 5.0.2 (1 node)": ["--store", "cassandra",
                                         *cassandra_options(cas, "ONE", "soar", 1)],
            "HBase 2.6.1 (Thrift)": ["--store", "hbase", "-p", f"store.options.port={hb['port']}",
                                     "-p", f"store.options.server_name={hb['name']}"],
        }  # fmt: skip
        print("SoAR, `low` mix, 1,000 members, 2 agents, SoAR search 3 s / final 6 s")
        print(f"{'store':>26} {'SoAR':>10} {'at T':>6} {'unique exp.':>11} {'p95 ms at SoAR':>15}")
        for label, opts in runs.items():
            s = bgbench(
                "rate", "--mix", "low", "--objective", "soar", "--delta-search", "3",
                "--delta", "6", "--results", results, *opts,
            )  # fmt: skip
            runs = experiments(results, s["rating_id"])
            best = [e for e in runs if e["threads"] == s["soar_threads"]]
            p95 = best[-1]["overall"]["p95_ms"] if best else float("nan")
            print(f"{label:>26} {s['soar']:>10,.0f} {s['soar_threads']:>6} "
                  f"{s['experiments_unique']:>11} {p95:>15.1f}", flush=True)  # fmt: skip
    finally:
        for kind in started:
            servers.stop(tmp / kind)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["consistency", "soar"])
    parser.add_argument("--users", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=16, help="T of the fixed-T runs")
    parser.add_argument("--duration", type=float, default=60, help="s per fixed-T run")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        {"consistency": consistency, "soar": soar}[args.what](Path(tmp), args)


if __name__ == "__main__":
    main()
