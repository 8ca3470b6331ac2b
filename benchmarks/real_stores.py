"""Cassandra, HBase and PostgreSQL rated side by side, and the consistency audit of a
3-node Cassandra cluster: what strong consistency costs, and what eventual consistency
hands out. Runs examples/campaigns/real_stores.yaml and prints its tables.

    .venv/bin/python benchmarks/real_stores.py consistency   # 3 nodes, RF 3
    .venv/bin/python benchmarks/real_stores.py soar          # 1-node Cassandra, HBase, PostgreSQL
        [--users N] [--threads T] [--duration S] [--repeats N] [--results DIR]

- consistency (job entries `rating` and `audit`): on Cassandra 127.0.0.1-3 with
  replication factor 3, the 10%-write mix (`high`) with (a) writes ONE / reads ONE and
  (b) QUORUM / QUORUM: a rating of each (a 30 s warm-up at T=8, search 5 s, final 10 s),
  then REPEATS fixed-T runs of each, alternating (a) and (b) so drift hits both alike.
  Prints throughput, the validator's unpredictable reads, the lag of the stale reads (how
  long before the read the write it missed had completed) and the load process's CPU.
- soar (entry `soar`): SoAR of 1-node Cassandra, HBase and PostgreSQL at one setting
  (`low` mix, 1,000 members, 2 agents, SoAR search 3 s, final 6 s), as
  benchmarks/paper_effects.py stores.

The campaign starts its servers on loopback (deploy/local/servers.py) and stops them at
its end; the 3-node cluster needs about 3 GB of memory. The options patch a copy of the
campaign file (recorded with the campaign).
"""

import argparse
import tempfile
from pathlib import Path
from typing import Any

from harness import Patch, campaign_jobs, done, every_job, only

LABELS = {"ONE": "ONE/ONE", "QUORUM": "QUORUM/QUORUM"}
NAMES = {"postgres": "PostgreSQL 15", "cassandra-one": "Cassandra 5.0.2 (1 node)",
         "hbase": "HBase 2.6.1 (Thrift)"}  # fmt: skip


def client_cpu(result: dict) -> float:
    """The busiest load process's CPU, % of one core: is the client the bottleneck?"""
    return max(a["cpu_percent"] for a in result["agents"])


def consistency(jobs: list[dict], args: argparse.Namespace) -> None:
    ratings, audit = done(jobs, "rating"), done(jobs, "audit")
    print(f"Cassandra 5.0.2, 3 nodes on 127.0.0.1-3, RF 3, `high` mix (10% writes), "
          f"{args.users:,} members, 1 agent")  # fmt: skip
    print("\nRatings (SLA: 95% of actions within 100 ms, at most 0.1% unpredictable reads)")
    print(f"{'writes/reads':>14} {'SoAR':>8} {'at T':>5} {'Socialites':>10} "
          f"{'reads':>9} {'unpredictable':>13} {'%':>8}")  # fmt: skip
    for job in ratings:
        s, runs = job["record"], job["experiments"]
        reads = sum(e["reads"] for e in runs)
        stale = sum(e["unpredictable_reads"] for e in runs)
        print(f"{LABELS[job['vars']['level']]:>14} {s['soar']:>8,.0f} {s['soar_threads']:>5} "
              f"{s['socialites']:>10} {reads:>9,} {stale:>13,} "
              f"{100 * stale / max(reads, 1):>8.4f}")  # fmt: skip
    print(f"\nFixed T={args.threads}, {args.duration:.0f} s each, alternating, "
          f"{args.repeats} of each")  # fmt: skip
    print(f"{'writes/reads':>14} {'actions/s':>10} {'p95 ms':>7} {'reads':>9} "
          f"{'unpredictable':>13} {'%':>8} {'lag p50 ms':>10} {'lag max ms':>10} "
          f"{'client CPU %':>12}")  # fmt: skip
    totals: dict[str, list[dict]] = {label: [] for label in LABELS.values()}
    for job in audit:
        r, label = job["experiments"][-1], LABELS[job["vars"]["level"]]
        totals[label].append(r)
        lag = r["lag"]
        print(f"{label:>14} {r['actions_per_s']:>10,.0f} {r['overall']['p95_ms']:>7.1f} "
              f"{r['reads']:>9,} {r['unpredictable_reads']:>13,} "
              f"{r['unpredictable_percent']:>8.4f} {lag['p50_ms']:>10.2f} "
              f"{lag['max_ms']:>10.2f} {client_cpu(r):>12.0f}")  # fmt: skip
    print("\nMeans over the fixed-T runs")
    base = None
    for label, runs in totals.items():
        if not runs:
            continue
        rate = sum(r["actions_per_s"] for r in runs) / len(runs)
        reads = sum(r["reads"] for r in runs)
        stale = sum(r["unpredictable_reads"] for r in runs)
        base = base or rate
        print(f"{label:>14} {rate:>10,.0f} actions/s ({100 * (rate / base - 1):+.1f}% vs "
              f"ONE/ONE), {stale:,} unpredictable of {reads:,} reads "
              f"({100 * stale / max(reads, 1):.4f}%)")  # fmt: skip


def soar(jobs: list[dict], args: argparse.Namespace) -> None:
    print("SoAR, `low` mix, 1,000 members, 2 agents, SoAR search 3 s / final 6 s")
    print(f"{'store':>26} {'SoAR':>10} {'at T':>6} {'unique exp.':>11} {'p95 ms at SoAR':>15}")
    for job in done(jobs, "soar"):
        s = job["record"]
        best = [e for e in job["experiments"] if e["threads"] == s["soar_threads"]]
        p95 = best[-1]["overall"]["p95_ms"] if best else float("nan")
        print(f"{NAMES[job['vars']['store']]:>26} {s['soar']:>10,.0f} {s['soar_threads']:>6} "
              f"{s['experiments_unique']:>11} {p95:>15.1f}")  # fmt: skip


def patches(args: argparse.Namespace) -> list[Patch]:
    """The job entries of `args.what`, with the options that differ from the file's."""
    out = [only(["rating", "audit"] if args.what == "consistency" else ["soar"])]
    if args.what == "consistency" and args.users != 1000:
        out.append(every_job({"params": {"usercount": args.users}}))
    if (args.threads, args.duration, args.repeats) != (16, 60, 3):

        def audit(data: dict[str, Any]) -> None:
            for job in data["jobs"]:
                if job.get("name") == "audit":
                    job["run"] = {"threadcount": args.threads, "maxexecutiontime": args.duration}
                    job["foreach"]["round"] = list(range(1, args.repeats + 1))

        out.append(audit)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["consistency", "soar"])
    parser.add_argument("--users", type=int, default=1000, help="members (consistency)")
    parser.add_argument("--threads", type=int, default=16, help="T of the fixed-T runs")
    parser.add_argument("--duration", type=float, default=60, help="s per fixed-T run")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--results", type=Path, help="results directory (default: a temporary)")
    parser.add_argument("--show", metavar="CAMPAIGN_ID", help="print a recorded run's tables")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        jobs = campaign_jobs("real_stores", args.results, args.show, patches(args), tmp)
        {"consistency": consistency, "soar": soar}[args.what](jobs, args)


if __name__ == "__main__":
    main()
