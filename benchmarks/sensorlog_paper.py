"""Mahmood, Risch and Zhu's sensor-log experiments at this machine's scale: bulk loading
by size, index timing and consistency (Figures 3 and 4), and Q1-Q3 by selectivity with
each store's plan (Figures 5-9, Table 2), on SQLite, PostgreSQL, the MongoDB-wire server
(SecantusDB: its figures are that server's, not MongoDB's) and Cassandra. Runs
examples/campaigns/sensorlog_paper.yaml and prints its tables.

    .venv/bin/python benchmarks/sensorlog_paper.py [--stores sqlite,postgres,mongodb,cassandra]
        [--sizes 10000,20000,40000,60000] [--runs 3] [--query-rows 60000] [--results DIR]

Each store runs the studies `load` and `queries` (`bgbench study`) as jobs of the
campaign, against a server it starts on loopback (deploy/local/servers.py) and stops at
its end; SQLite's files are bgbench-data/sensorlog-{load,queries}.sqlite. Cassandra's
strong setting needs its commit log synced per write, a server setting: its strong loads
run on a second server started with `commitlog_sync: batch` (servers.py cassandra-batch).
The options patch a copy of the campaign file (recorded with the campaign).
"""

import argparse
import tempfile
from pathlib import Path
from typing import Any

from harness import Patch, campaign_jobs, only

SELECTIVITIES = (0.002, 0.02, 0.2, 0.25, 1.0, 2.0, 5.0)
STORES = "sqlite,postgres,mongodb,cassandra"
DEFAULTS = {"sizes": "10000,20000,40000,60000", "runs": 3, "query_rows": 60000,
            "mongodb_sizes": "2500,5000,10000,15000", "mongodb_query_rows": 15000}  # fmt: skip


def table(record: dict, name: str) -> list[dict[str, Any]]:
    return next(t["rows"] for t in record["tables"] if t["name"] == name)


def patches(args: argparse.Namespace) -> list[Patch]:
    """The stores' job entries, and the templates with the options that differ."""
    out = [] if args.stores == STORES else [only(args.stores.split(","))]
    if any(getattr(args, k) != v for k, v in DEFAULTS.items()):

        def patch(data: dict[str, Any]) -> None:
            def sizes(text: str) -> list[int]:
                return [int(n) for n in text.split(",")]

            data["templates"]["sensorlog"]["params"] = {
                "sensorlog.study.sizes": sizes(args.sizes), "sensorlog.study.runs": args.runs,
                "sensorlog.study.query_rows": args.query_rows,
            }  # fmt: skip
            data["templates"]["slow"]["params"] = {
                "sensorlog.study.sizes": sizes(args.mongodb_sizes),
                "sensorlog.study.query_rows": args.mongodb_query_rows,
            }

        out.append(patch)
    return out


def _row(
    rows: list[dict[str, Any]], consistency: str, indexes: str, n: int
) -> dict[str, Any] | None:
    return next(
        (x for x in rows
         if x["consistency"] == consistency and x["indexes"] == indexes and x["rows"] == n),
        None,
    )  # fmt: skip


def print_figure_3(loads: dict[str, list[dict[str, Any]]]) -> None:
    print("Figure 3: bulk loading with indexes defined before, seconds (mean ± sd of the runs)")
    for store, rows in loads.items():
        sizes = sorted({r["rows"] for r in rows})
        print(f"{'store':>10} {'setting':>7}" + "".join(f" {n:>16,}" for n in sizes))
        for consistency in ("strong", "weak"):
            cells = ""
            for n in sizes:
                r = _row(rows, consistency, "before", n)
                cells += f" {r['total s']:>8.2f} ± {r['total s sd']:<5.2f}" if r else f" {'-':>16}"
            print(f"{store:>10} {consistency:>7}{cells}")


def print_figure_4(loads: dict[str, list[dict[str, Any]]]) -> None:
    print("\nFigure 4: indexes before vs after at the largest size, weak: seconds (load + index)")
    print(f"{'store':>10} {'rows':>8} {'before':>9} {'after':>9} {'load':>9} {'index':>9} "
          f"{'rows/s before':>14} {'rows/s after':>13}")  # fmt: skip
    for store, rows in loads.items():
        top = max(r["rows"] for r in rows)
        b, a = _row(rows, "weak", "before", top), _row(rows, "weak", "after", top)
        if a and b:
            print(f"{store:>10} {top:>8,} {b['total s']:>9.2f} {a['total s']:>9.2f} "
                  f"{a['load s']:>9.2f} {a['index s']:>9.2f} {b['rows/s']:>14,.0f} "
                  f"{a['rows/s']:>13,.0f}")  # fmt: skip


def print_strong_vs_weak(loads: dict[str, list[dict[str, Any]]]) -> None:
    print("\nStrong vs weak (indexes before, largest size): time strong / weak")
    for store, rows in loads.items():
        top = max(r["rows"] for r in rows)
        s, w = _row(rows, "strong", "before", top), _row(rows, "weak", "before", top)
        if s and w:
            print(f"{store:>10} {s['total s'] / w['total s']:>6.2f}x")


def print_load(loads: dict[str, list[dict[str, Any]]]) -> None:
    print_figure_3(loads)
    print_figure_4(loads)
    print_strong_vs_weak(loads)


def print_queries(results: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]]) -> None:
    first_store, (_, first) = next(iter(results.items()))
    print(f"Figure 2: mv threshold per selectivity (exact for the generated data, {first_store}'s)")
    for t in first:
        print(
            f"  {t['selectivity %']:>6g}%  mv > {t['mv >']:>10.4f}  "
            f"{t['rows']:>7,} of {t['of']:,} rows"
        )
    print("\nFigure 5: Q1 key lookup, ms per lookup (mean ± sd of the runs)")
    for store, (rows, _) in results.items():
        q1 = next(r for r in rows if r["query"] == "Q1")
        print(f"{store:>10} {q1['mean ms']:>8.3f} ± {q1['sd ms']:.3f}   {q1['plan']}")
    for query, figure in (("Q2", "Figures 6-7 and Table 2"), ("Q3", "Figures 8-9")):
        print(f"\n{figure}: {query} by selectivity, ms (mean of the runs)")
        print(f"{'store':>10}" + "".join(f" {s:>9g}%" for s in SELECTIVITIES))
        for store, (rows, _) in results.items():
            cells = ""
            for s in SELECTIVITIES:
                r = next((x for x in rows if x["query"] == query and x["selectivity %"] == s), None)
                cells += (
                    f" {r['mean ms']:>10.2f}"
                    if r and r.get("mean ms") is not None
                    else f" {'n/a':>10}"
                )
            print(f"{store:>10}{cells}")
        print("  plans (lowest and highest selectivity):")
        for store, (rows, _) in results.items():
            mine = [x for x in rows if x["query"] == query]
            if mine:
                print(f"  {store:>10} {mine[0]['selectivity %']:g}%: {mine[0]['plan']}")
                print(f"  {'':>10} {mine[-1]['selectivity %']:g}%: {mine[-1]['plan']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stores", default=STORES)
    parser.add_argument("--sizes", default=DEFAULTS["sizes"])
    parser.add_argument("--runs", type=int, default=DEFAULTS["runs"])
    parser.add_argument("--query-rows", type=int, default=DEFAULTS["query_rows"])
    parser.add_argument("--mongodb-sizes", default=DEFAULTS["mongodb_sizes"])
    parser.add_argument("--mongodb-query-rows", type=int, default=DEFAULTS["mongodb_query_rows"])
    parser.add_argument("--results", type=Path, help="results directory (default: a temporary)")
    parser.add_argument("--show", metavar="CAMPAIGN_ID", help="print a recorded run's tables")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        jobs = campaign_jobs("sensorlog_paper", args.results, args.show, patches(args), tmp)
    loads: dict[str, list[dict[str, Any]]] = {}
    queries: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {}
    for job in jobs:
        if job["status"] != "done":
            continue
        store, record = job["label"].split(" ")[0], job["record"]
        if any(t["name"] == "load" for t in record["tables"]):
            loads.setdefault(store, []).extend(table(record, "load"))
        else:
            queries[store] = (table(record, "queries"), table(record, "thresholds"))
    print()
    print_load(loads)
    print()
    if queries:
        print_queries(queries)


if __name__ == "__main__":
    main()
