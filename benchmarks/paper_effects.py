"""The BG paper's effects on real PostgreSQL and memcached, scaled down to this machine.

    .venv/bin/python benchmarks/paper_effects.py              # all three
    .venv/bin/python benchmarks/paper_effects.py figure11

- figure11: CASQL with a TTL hands out unpredictable reads that grow with the TTL;
  invalidation (with leases) stays at 0. 10%-write mix, one 20 s experiment per setting.
- figure6: SoAR of PostgreSQL and CASQL on the 0.1% and 10% write mixes.
- figure3: View Profile SoAR of PostgreSQL with no image, 2 KB, 12 KB and 500 KB images.
- stores: SoAR of SQLite, PostgreSQL, CASQL and MongoDB (on SecantusDB) at one setting.

Servers are started on loopback by deploy/local/servers.py in temporary directories and
stopped at the end. Ratings search at 3 s per experiment with a 6 s final one: the trends,
not the paper's hour-long figures.
"""

import sys
import tempfile
from pathlib import Path

from harness import bgbench, new_database, servers


def figure11(pg: dict, mc: dict, results: str) -> None:
    print("Figure 11: CASQL staleness vs TTL (10% writes, 2 agents, T=8, 20 s, 1,000 members)")
    print(f"{'consistency':>14} {'actions/s':>10} {'unpredictable %':>16} {'lag p50 ms':>11} "
          f"{'lag max ms':>11} {'cache hits':>10}")  # fmt: skip
    for mode, ttl in (("invalidation", 0), ("ttl", 5), ("ttl", 10), ("ttl", 20)):
        r = bgbench(
            "run", "--store", "casql", "--mix", "high", "--threads", "8", "--duration", "20",
            "--results", results, "-p", f"store.options.dsn={new_database(pg)}",
            "-p", f"store.options.memcached=127.0.0.1:{mc['port']}",
            "-p", f"store.options.consistency={mode}", "-p", f"store.options.ttl_s={max(ttl, 1)}",
        )  # fmt: skip
        hits = sum(a["store_counters"].get("hits", 0) for a in r["agents"])
        label = mode if mode == "invalidation" else f"TTL {ttl} s"
        lag = r["lag"]
        print(
            f"{label:>14} {r['actions_per_s']:>10,.0f} {r['unpredictable_percent']:>16.3f} "
            f"{lag['p50_ms']:>11.1f} {lag['max_ms']:>11.1f} {hits:>10,}",
            flush=True,
        )


def rate(store: str, mix: str, pg: dict, mc: dict, results: str, *extra: str) -> dict:
    opts = ["-p", f"store.options.dsn={new_database(pg)}"]
    if store == "casql":
        opts += ["-p", f"store.options.memcached=127.0.0.1:{mc['port']}"]
    return bgbench(
        "rate", "--store", store, "--mix", mix, "--objective", "soar", "--delta-search", "3",
        "--delta", "6", "--results", results, *opts, *extra,
    )  # fmt: skip


def figure6(pg: dict, mc: dict, results: str) -> None:
    print("Figure 6: SoAR (actions/s) by write mix, 2 agents, 1,000 members, images 12 KB")
    print(f"{'mix':>10} {'PostgreSQL':>12} {'CASQL':>12}")
    for mix in ("verylow", "high"):
        row = [
            rate(s, mix, pg, mc, results, "-p", "insertimage=true", "-p", "imagesize=12")
            for s in ("postgres", "casql")
        ]
        print(f"{mix:>10} {row[0]['soar']:>12,.0f} {row[1]['soar']:>12,.0f}", flush=True)


def figure3(pg: dict, mc: dict, results: str) -> None:
    print("Figure 3: View Profile SoAR of PostgreSQL by profile image size, 2 agents")
    print(f"{'image':>10} {'SoAR':>10} {'at T':>6}")
    for label, extra in (
        ("none", ["-p", "insertimage=false"]),
        ("2 KB", ["-p", "insertimage=true", "-p", "imagesize=2"]),
        ("12 KB", ["-p", "insertimage=true", "-p", "imagesize=12"]),
        ("500 KB", ["-p", "insertimage=true", "-p", "imagesize=500"]),
    ):
        s = rate("postgres", "VP", pg, mc, results, *extra)
        print(f"{label:>10} {s['soar']:>10,.0f} {s['soar_threads']:>6}", flush=True)


def stores(pg: dict, mc: dict, results: str) -> None:
    """SoAR of every store at the same settings: low mix, 1,000 members, no images."""
    mongo_dir = Path(results).parent / "mongo"
    mongo = servers.start("mongo-wire", mongo_dir)
    try:
        print("SoAR of each store, `low` mix, 1,000 members, 2 agents, SoAR search 3 s / 6 s")
        print(f"{'store':>28} {'SoAR':>10} {'at T':>6} {'unique exp.':>11}")
        runs = {
            "sqlite": ["-p", f"store.options.path={results}/bg.sqlite"],
            "postgres": ["-p", f"store.options.dsn={new_database(pg)}"],
            "casql": ["-p", f"store.options.dsn={new_database(pg)}",
                      "-p", f"store.options.memcached=127.0.0.1:{mc['port']}"],
            "mongodb": ["-p", f"store.options.uri=mongodb://127.0.0.1:{mongo['port']}",
                        "-p", f"store.options.server_name={mongo['name']}"],
        }  # fmt: skip
        for store, opts in runs.items():
            s = bgbench(
                "rate", "--store", store, "--mix", "low", "--objective", "soar",
                "--delta-search", "3", "--delta", "6", "--results", results, *opts,
            )  # fmt: skip
            label = store if store != "mongodb" else f"mongodb ({mongo['name']})"
            print(f"{label:>28} {s['soar']:>10,.0f} {s['soar_threads']:>6} "
                  f"{s['experiments_unique']:>11}", flush=True)  # fmt: skip
    finally:
        servers.stop(mongo_dir)


def main() -> None:
    wanted = sys.argv[1:] or ["figure11", "figure6", "figure3", "stores"]
    with tempfile.TemporaryDirectory() as tmp:
        pg_dir, mc_dir = Path(tmp) / "pg", Path(tmp) / "mc"
        pg, mc = servers.start("postgres", pg_dir), servers.start("memcached", mc_dir)
        try:
            for name in wanted:
                globals()[name](pg, mc, str(Path(tmp) / "results"))
                print()
        finally:
            servers.stop(mc_dir)
            servers.stop(pg_dir)


if __name__ == "__main__":
    main()
