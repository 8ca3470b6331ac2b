"""Klein et al.'s consistency comparison on 3-node Cassandra: the EHR thread sweep under
strong (Table 1) and eventual (Table 2) settings, side by side, with the unpredictable
reads each handed out.

    .venv/bin/python benchmarks/ehr_consistency.py                  # starts the cluster
    .venv/bin/python benchmarks/ehr_consistency.py --threads 1,2,5,10,25,50,100,200,500,1000 \
        --repeats 3 --delta 5 --warmup 5 --patients 10000 [--port P]  # P: a running cluster

The cluster is three nodes on 127.0.0.1, .2 and .3, each its own data centre (dc1, dc2,
dc3; deploy/local/servers.py start cassandra-dcs), the keyspace replicated once in each
(NetworkTopologyStrategy), so EACH_QUORUM waits for all three. Settings:

- strong    writes EACH_QUORUM, reads LOCAL_QUORUM, requests coordinated in dc1 (Table 1,
            clients on one sub-cluster as the paper's)
- eventual  writes ONE, reads ONE, coordinated in dc1 (Table 2)
- eventual, every node coordinates: ONE/ONE with requests spread over all three data
            centres, where a read can reach a replica a write has not yet (bgbench's
            addition: the staleness the paper did not measure)

Each setting is one `bgbench rate --workload ehr --objective sweep` with one agent and
one load process (so T=1 runs), its own keyspace, loaded once, then warmed up unrated
(the JVMs' compilers and caches) before its first experiment.
"""

import argparse
import tempfile
from pathlib import Path

from harness import bgbench, servers

SETTINGS = {
    "strong": ["-p", "store.options.consistency=strong"],
    "eventual": ["-p", "store.options.consistency=eventual"],
    "eventual, every node coordinates": [
        "-p", "store.options.consistency=eventual", "-p", "store.options.coordinators=every_dc",
    ],
}  # fmt: skip


def sweep(cluster: dict, keyspace: str, args: argparse.Namespace, results: str,
          extra: list[str]) -> dict:  # fmt: skip
    datacenters = ",".join(f"{dc}:1" for dc in cluster["datacenters"])
    return bgbench(
        "rate", "--workload", "ehr", "--store", "cassandra", "--objective", "sweep",
        "--agents", "1", "--processes", "1", "--users", str(args.patients),
        "--delta", str(args.delta), "--warmup", str(args.warmup), "--results", results,
        "-p", f"rating.sweep_threads=[{args.threads}]",
        "-p", f"rating.sweep_repeats={args.repeats}",
        "-p", f"store.options.hosts={','.join(cluster['hosts'])}",
        "-p", f"store.options.port={cluster['port']}",
        "-p", f"store.options.datacenters={datacenters}",
        "-p", f"store.options.keyspace={keyspace}",
        "-p", "agents.heartbeat_timeout=30",  # three JVMs on two cores stall now and then
        *extra,
    )  # fmt: skip


def action(row: dict, name: str) -> dict:
    return next((a for a in row["actions"] if a["action"] == name), {"p95_ms": 0.0})


def report(tables: dict[str, dict]) -> None:
    names = list(tables)
    short = {n: n.split(",")[0] + ("*" if "," in n else "") for n in names}
    print("throughput (actions/s, mean of the repeats) and p95 latency (ms, mean of the repeats)")
    head = f"{'T':>5}"
    for n in names:
        head += f" | {short[n]:>10} {'READ p95':>9} {'WRITE p95':>9}"
    print(head + f" | {'strong vs eventual':>18}")
    rows = {n: {r["threads"]: r for r in tables[n]["rows"]} for n in names}
    for t in sorted(set().union(*(r.keys() for r in rows.values()))):
        line = f"{t:>5}"
        for n in names:
            r = rows[n].get(t)
            if r is None:
                line += f" | {'-':>10} {'-':>9} {'-':>9}"
                continue
            line += (
                f" | {r['actions_per_s']:>10,.0f} {action(r, 'READ')['p95_ms']:>9.1f} "
                f"{action(r, 'WRITE')['p95_ms']:>9.1f}"
            )
        strong, eventual = rows["strong"].get(t), rows["eventual"].get(t)
        if strong and eventual and eventual["actions_per_s"]:
            change = 100 * (strong["actions_per_s"] / eventual["actions_per_s"] - 1)
            line += f" | {change:>+17.1f}%"
        print(line)
    print("* every node coordinates (requests spread over all three data centres)")
    print()
    print(f"{'setting':>34} {'reads':>9} {'unpredictable':>13} {'%':>8}")
    for n in names:
        reads = sum(r["reads"] for r in tables[n]["rows"])
        bad = sum(r["unpredictable_reads"] for r in tables[n]["rows"])
        pct = 100 * bad / reads if reads else 0.0
        print(f"{n:>34} {reads:>9,} {bad:>13,} {pct:>8.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", default="1,2,5,10,25,50,100,200,500,1000")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--delta", type=float, default=5)
    parser.add_argument("--warmup", type=float, default=5)
    parser.add_argument("--patients", type=int, default=10_000)
    parser.add_argument("--port", type=int, help="a running cassandra-dcs cluster's CQL port")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp) / "cassandra"
        if args.port:
            cluster = {"hosts": ["127.0.0.1", "127.0.0.2", "127.0.0.3"], "port": args.port,
                       "datacenters": ["dc1", "dc2", "dc3"]}  # fmt: skip
        else:
            directory.mkdir()
            cluster = servers.start("cassandra-dcs", directory)
        try:
            print(f"EHR sweep on 3-node Cassandra (3 data centres, one replica each), "
                  f"{args.patients:,} patients, readwrite 80/20, Zipfian; each T run "
                  f"{args.repeats} times for {args.delta:g} s, averaged", flush=True)  # fmt: skip
            tables = {}
            for k, (name, extra) in enumerate(SETTINGS.items()):
                summary = sweep(cluster, f"ehr_bench{k}", args, str(Path(tmp) / "results"), extra)
                tables[name] = summary["sweep"]
                for line in summary["sweep"]["clipped"]:
                    print(line)
            report(tables)
        finally:
            if not args.port:
                servers.stop(directory)


if __name__ == "__main__":
    main()
