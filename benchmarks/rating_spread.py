"""How much two ratings of the same store differ, before and after ratings had intervals.

Five independent ratings of SQLite and of PostgreSQL (BG's `low` mix, the same settings
each time) with the search as it was (`rating.search=classic`, one number per T, no
steady-state cut, no repeats) and as it is now (the fitted search, steady-state cuts,
repeats near the SLA's edge, SoAR with its 95% interval), interleaved so that drift of
the machine hits both alike. Prints each rating's SoAR (and interval), the spread of the
point estimates, and whether every interval covers every other rating's SoAR.

    .venv/bin/python benchmarks/rating_spread.py [--ratings 5] [--stores sqlite,postgres]

PostgreSQL is started on loopback by deploy/local/servers.py in a temporary directory,
each rating on a fresh database.
"""

import argparse
import statistics
import tempfile
from pathlib import Path

from harness import bgbench, new_database, servers

CLASSIC = ["-p", "rating.search=classic", "-p", "rating.steady_state=false",
           "-p", "rating.repeats=1"]  # fmt: skip
SEARCHES = {"before": CLASSIC, "after": []}


def common(users: int, results: str) -> list[str]:
    return ["rate", "--objective", "soar", "--mix", "low", "--users", str(users),
            "--delta-search", "3", "--delta", "6", "--max-threads", "64",
            "--results", results]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ratings", type=int, default=5)
    parser.add_argument("--stores", default="sqlite,postgres")
    parser.add_argument("--users", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        pg = servers.start("postgres", tmp / "pg") if "postgres" in args.stores else None
        try:
            for store in args.stores.split(","):
                table: dict[str, list[dict]] = {"before": [], "after": []}
                for i in range(args.ratings):
                    for name, extra in SEARCHES.items():
                        where = ["--store", store]
                        if store == "sqlite":
                            where += ["-p", f"store.options.path={tmp}/{name}{i}.sqlite"]
                        else:
                            assert pg is not None
                            where += ["-p", f"store.options.dsn={new_database(pg)}"]
                        s = bgbench(*common(args.users, str(tmp / "results")), *where, *extra)
                        table[name].append(s)
                        print(f"{store} {name} #{i + 1}: {line(s)}", flush=True)
                for name, rows in table.items():
                    summarise(store, name, rows)
        finally:
            if pg is not None:
                servers.stop(tmp / "pg")


def line(s: dict) -> str:
    ci = ""
    if s.get("soar_low") is not None and s.get("soar_high") is not None:
        ci = f" [{s['soar_low']:,.0f} .. {s['soar_high']:,.0f}]"
    return (
        f"SoAR {s['soar']:,.0f}{ci} at T={s['soar_threads']}, "
        f"{s['experiments_unique']} unique experiments ({s['experiments_repeated']} repeats)"
    )


def summarise(store: str, name: str, rows: list[dict]) -> None:
    soars = [r["soar"] for r in rows]
    mean = statistics.fmean(soars)
    sd = statistics.stdev(soars) if len(soars) > 1 else 0.0
    print(
        f"== {store} {name}: SoAR mean {mean:,.0f}, min {min(soars):,.0f}, max {max(soars):,.0f}, "
        f"spread (max-min)/mean {100 * (max(soars) - min(soars)) / mean:.1f}%, "
        f"CV {100 * sd / mean:.1f}%"
    )
    intervals = [(r.get("soar_low"), r.get("soar_high")) for r in rows]
    if all(lo is not None and hi is not None for lo, hi in intervals):
        overlap = all(a[0] <= b[1] and b[0] <= a[1] for a in intervals for b in intervals)
        covers = sum(
            intervals[i][0] <= soars[j] <= intervals[i][1]
            for i in range(len(soars)) for j in range(len(soars)) if i != j
        )  # fmt: skip
        pairs = len(soars) * (len(soars) - 1)
        print(
            f"   every interval overlaps every other: {overlap}; an interval covers another "
            f"rating's SoAR in {covers} of {pairs} pairs"
        )
    else:
        print("   (no intervals: the classic search reports points)")


if __name__ == "__main__":
    main()
