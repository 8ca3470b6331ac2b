"""Klein et al.'s consistency comparison on 3-node Cassandra: the EHR thread sweep under
strong (Table 1) and eventual (Table 2) settings, side by side, with the unpredictable
reads each handed out. Runs examples/campaigns/ehr_consistency.yaml and prints its tables.

    .venv/bin/python benchmarks/ehr_consistency.py                  # starts the cluster
    .venv/bin/python benchmarks/ehr_consistency.py --threads 1,2,5,10,25,50,100,200,500,1000 \
        --repeats 3 --delta 5 --warmup 5 --patients 10000 [--port P] [--results DIR]

The cluster is three nodes on 127.0.0.1, .2 and .3, each its own data centre (dc1, dc2,
dc3; deploy/local/servers.py start cassandra-dcs, started and stopped by the campaign),
the keyspace replicated once in each (NetworkTopologyStrategy), so EACH_QUORUM waits for
all three. Settings:

- strong    writes EACH_QUORUM, reads LOCAL_QUORUM, requests coordinated in dc1 (Table 1,
            clients on one sub-cluster as the paper's)
- eventual  writes ONE, reads ONE, coordinated in dc1 (Table 2)
- eventual, every node coordinates: ONE/ONE with requests spread over all three data
            centres, where a read can reach a replica a write has not yet (bgbench's
            addition: the staleness the paper did not measure)

Each setting is one job of the campaign, a `--objective sweep` rating of the ehr workload
with one agent and one load process (so T=1 runs), its own keyspace, loaded once, then
warmed up unrated (the JVMs' compilers and caches) before its first experiment. The
options patch a copy of the campaign file (recorded with the campaign); --port P points
it at a running cassandra-dcs cluster instead of starting one.
"""

import argparse
import tempfile
from pathlib import Path
from typing import Any

from harness import Patch, campaign_jobs

DEFAULTS = {"threads": "1,2,5,10,25,50,100,200,500,1000", "repeats": 3, "delta": 5.0,
            "warmup": 5.0, "patients": 10_000}  # fmt: skip


def patches(args: argparse.Namespace) -> list[Patch]:
    """The `ehr` template with the options that differ from the file's."""
    if all(getattr(args, k) == v for k, v in DEFAULTS.items()) and not args.port:
        return []

    def patch(data: dict[str, Any]) -> None:
        ehr = data["templates"]["ehr"]
        ehr["rating"].update(sweep_threads=[int(t) for t in args.threads.split(",")],
                             sweep_repeats=args.repeats, warmup_s=args.warmup)  # fmt: skip
        ehr["sla"]["delta_s"] = args.delta
        ehr["params"]["workload.scale"] = args.patients
        if args.port:  # a running cluster: no server, its address instead
            del ehr["server"]
            ehr["store"]["options"].update(
                hosts=["127.0.0.1", "127.0.0.2", "127.0.0.3"], port=args.port,
                keyspace="ehr_${consistency}_${coordinators}",
            )  # fmt: skip

    return [patch]


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
        strong, eventual = rows.get("strong", {}).get(t), rows.get("eventual", {}).get(t)
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
    parser.add_argument("--threads", default=DEFAULTS["threads"])
    parser.add_argument("--repeats", type=int, default=DEFAULTS["repeats"])
    parser.add_argument("--delta", type=float, default=DEFAULTS["delta"])
    parser.add_argument("--warmup", type=float, default=DEFAULTS["warmup"])
    parser.add_argument("--patients", type=int, default=DEFAULTS["patients"])
    parser.add_argument("--port", type=int, help="a running cassandra-dcs cluster's CQL port")
    parser.add_argument("--results", type=Path, help="results directory (default: a temporary)")
    parser.add_argument("--show", metavar="CAMPAIGN_ID", help="print a recorded run's tables")
    args = parser.parse_args()
    print(f"EHR sweep on 3-node Cassandra (3 data centres, one replica each), "
          f"{args.patients:,} patients, readwrite 80/20, Zipfian; each T run "
          f"{args.repeats} times for {args.delta:g} s, averaged", flush=True)  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        jobs = campaign_jobs("ehr_consistency", args.results, args.show, patches(args), tmp)
    tables = {}
    for job in jobs:
        if job["status"] == "done":
            tables[job["vars"]["setting"]] = job["record"]["sweep"]
            for line in job["record"]["sweep"]["clipped"]:
                print(line)
    report(tables)


if __name__ == "__main__":
    main()
