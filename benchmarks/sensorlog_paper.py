"""Mahmood, Risch and Zhu's sensor-log experiments at this machine's scale: bulk loading
by size, index timing and consistency (Figures 3 and 4), and Q1-Q3 by selectivity with
each store's plan (Figures 5-9, Table 2), on SQLite, PostgreSQL, the MongoDB-wire server
(SecantusDB: its figures are that server's, not MongoDB's) and Cassandra.

    .venv/bin/python benchmarks/sensorlog_paper.py [--stores sqlite,postgres,mongodb,cassandra]
        [--sizes 10000,20000,40000,60000] [--runs 3] [--query-rows 60000]

Each store runs `bgbench study load` and `bgbench study queries` (--json) against a
server started on loopback by deploy/local/servers.py and stopped at the end. Cassandra's
strong setting needs its commit log synced per write, a server setting: its strong loads
run on a second server started with `commitlog_sync: batch` (servers.py cassandra-batch).
"""

import argparse
import tempfile
import uuid
from pathlib import Path
from typing import Any

from harness import bgbench, new_database, servers

SELECTIVITIES = (0.002, 0.02, 0.2, 0.25, 1.0, 2.0, 5.0)


def study(name: str, store: str, results: str, options: list[str], extra: list[str]) -> dict:
    return bgbench(
        "study", name, "--workload", "sensorlog", "--store", store, "--results", results,
        *options, *extra,
    )  # fmt: skip


def table(record: dict, name: str) -> list[dict[str, Any]]:
    return next(t["rows"] for t in record["tables"] if t["name"] == name)


class Runner:
    def __init__(self, args: argparse.Namespace, tmp: Path) -> None:
        self.args = args
        self.tmp = tmp
        self.results = str(tmp / "results")
        self.started: list[Path] = []

    def server(self, kind: str) -> dict:
        directory = self.tmp / f"{kind}-{uuid.uuid4().hex[:6]}"
        directory.mkdir()
        self.started.append(directory)
        return servers.start(kind, directory)

    def stop_all(self) -> None:
        for directory in reversed(self.started):
            servers.stop(directory)

    def common(self, store: str) -> list[str]:
        a = self.args
        slow = store == "mongodb"  # SecantusDB, a Python server, takes ~1,500 rows/s here
        sizes, rows = (a.mongodb_sizes, a.mongodb_query_rows) if slow else (a.sizes, a.query_rows)
        return [
            "-p", f"sensorlog.study.sizes=[{sizes}]", "-p", f"sensorlog.study.runs={a.runs}",
            "-p", f"sensorlog.study.query_rows={rows}",
        ]  # fmt: skip

    def options(self, store: str, strong: bool) -> list[str]:
        """-p options reaching a fresh database of the store's server."""
        if store == "sqlite":
            return [
                "-p",
                f"store.options.path={self.tmp / f'sensorlog-{uuid.uuid4().hex[:6]}.sqlite'}",
            ]
        if store == "postgres":
            pg = getattr(self, "_pg", None) or self.server("postgres")
            self._pg = pg
            return ["-p", f"store.options.dsn={new_database(pg)}"]
        if store == "mongodb":
            mongo = getattr(self, "_mongo", None) or self.server("mongo-wire")
            self._mongo = mongo
            return [
                "-p", f"store.options.uri=mongodb://127.0.0.1:{mongo['port']}",
                "-p", f"store.options.database=sensorlog_{uuid.uuid4().hex[:6]}",
                "-p", f"store.options.server_name={mongo['name']}",
            ]  # fmt: skip
        kind = "cassandra-batch" if strong else "cassandra"
        attr = "_cass_batch" if strong else "_cass"
        node = getattr(self, attr, None) or self.server(kind)
        setattr(self, attr, node)
        return [
            "-p", f"store.options.hosts={node['hosts'][0]}",
            "-p", f"store.options.port={node['port']}",
            "-p", f"store.options.keyspace=sensorlog_{uuid.uuid4().hex[:6]}",
        ]  # fmt: skip

    def load(self, store: str) -> list[dict[str, Any]]:
        rows = []
        if store == "cassandra":  # one server per commit-log mode
            for consistency in ("strong", "weak"):
                r = study(
                    "load",
                    store,
                    self.results,
                    self.options(store, consistency == "strong"),
                    [*self.common(store), "-p", f'sensorlog.study.consistency=["{consistency}"]'],
                )
                rows += table(r, "load")
            return rows
        r = study("load", store, self.results, self.options(store, False), self.common(store))
        return table(r, "load")

    def queries(self, store: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        r = study("queries", store, self.results, self.options(store, False), self.common(store))
        return table(r, "queries"), table(r, "thresholds")


def print_load(loads: dict[str, list[dict[str, Any]]]) -> None:
    print("Figure 3: bulk loading with indexes defined before, seconds (mean ± sd of the runs)")
    for store, rows in loads.items():
        sizes = sorted({r["rows"] for r in rows})
        print(f"{'store':>10} {'setting':>7}" + "".join(f" {n:>16,}" for n in sizes))
        for consistency in ("strong", "weak"):
            cells = ""
            for n in sizes:
                r = next((x for x in rows if x["consistency"] == consistency
                          and x["indexes"] == "before" and x["rows"] == n), None)  # fmt: skip
                cells += f" {r['total s']:>8.2f} ± {r['total s sd']:<5.2f}" if r else f" {'-':>16}"
            print(f"{store:>10} {consistency:>7}{cells}")
    print("\nFigure 4: indexes before vs after at the largest size, weak: seconds (load + index)")
    print(f"{'store':>10} {'rows':>8} {'before':>9} {'after':>9} {'load':>9} {'index':>9} "
          f"{'rows/s before':>14} {'rows/s after':>13}")  # fmt: skip
    for store, rows in loads.items():
        top = max(r["rows"] for r in rows)
        b = next((x for x in rows if x["consistency"] == "weak" and x["indexes"] == "before"
                  and x["rows"] == top), None)  # fmt: skip
        a = next((x for x in rows if x["consistency"] == "weak" and x["indexes"] == "after"
                  and x["rows"] == top), None)  # fmt: skip
        if a and b:
            print(f"{store:>10} {top:>8,} {b['total s']:>9.2f} {a['total s']:>9.2f} "
                  f"{a['load s']:>9.2f} {a['index s']:>9.2f} {b['rows/s']:>14,.0f} "
                  f"{a['rows/s']:>13,.0f}")  # fmt: skip
    print("\nStrong vs weak (indexes before, largest size): time strong / weak")
    for store, rows in loads.items():
        top = max(r["rows"] for r in rows)
        s = next((x for x in rows if x["consistency"] == "strong" and x["indexes"] == "before"
                  and x["rows"] == top), None)  # fmt: skip
        w = next((x for x in rows if x["consistency"] == "weak" and x["indexes"] == "before"
                  and x["rows"] == top), None)  # fmt: skip
        if s and w:
            print(f"{store:>10} {s['total s'] / w['total s']:>6.2f}x")


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
    parser.add_argument("--stores", default="sqlite,postgres,mongodb,cassandra")
    parser.add_argument("--sizes", default="10000,20000,40000,60000")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--query-rows", type=int, default=60000)
    parser.add_argument("--mongodb-sizes", default="2500,5000,10000,15000")
    parser.add_argument("--mongodb-query-rows", type=int, default=15000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        runner = Runner(args, Path(tmp))
        try:
            loads, queries = {}, {}
            for store in args.stores.split(","):
                print(f"-- {store}", flush=True)
                loads[store] = runner.load(store)
                queries[store] = runner.queries(store)
            print()
            print_load(loads)
            print()
            print_queries(queries)
        finally:
            runner.stop_all()


if __name__ == "__main__":
    main()
