"""The BG paper's effects on real PostgreSQL and memcached, scaled down to this machine:
examples/campaigns/paper_effects.yaml, run as a campaign, and its figures as tables.

    .venv/bin/python benchmarks/paper_effects.py              # all
    .venv/bin/python benchmarks/paper_effects.py figure11     # or some of them
    .venv/bin/python benchmarks/paper_effects.py --quick      # a check: 200 members, 1 s / 2 s
    .venv/bin/python benchmarks/paper_effects.py --results DIR  # keep the results store

- figure11: CASQL with a TTL hands out unpredictable reads that grow with the TTL;
  invalidation (with leases) stays at 0. 10%-write mix, one 20 s experiment per setting.
- figure6: SoAR of PostgreSQL and CASQL on the 0.1% and 10% write mixes.
- figure3: View Profile SoAR of PostgreSQL with no image, 2 KB, 12 KB and 500 KB images.
- stores: SoAR of SQLite, PostgreSQL, CASQL and MongoDB (on SecantusDB) at one setting.

The campaign starts its servers on loopback (deploy/local/servers.py) and stops them at
its end. Ratings search at 3 s per experiment with a 6 s final one: the trends, not the
paper's hour-long figures. Names choose job entries of the campaign (a patched copy of
the file, recorded with the campaign); --quick merges QUICK into every job.
"""

import argparse
import tempfile
from pathlib import Path

from harness import Patch, campaign_jobs, done, every_job, only

FIGURES = ["figure11", "figure6", "figure3", "stores"]
QUICK = {
    "sla": {"delta_search_s": 1, "delta_s": 2},
    "rating": {"final_runs": 1, "repeats": 1, "max_threads": 8},
    "params": {"usercount": 200},
}


def figure11(jobs: list[dict]) -> None:
    print("Figure 11: CASQL staleness vs TTL (10% writes, 2 agents, T=8, 20 s, 1,000 members)")
    print(f"{'consistency':>14} {'actions/s':>10} {'unpredictable %':>16} {'lag p50 ms':>11} "
          f"{'lag max ms':>11} {'cache hits':>10}")  # fmt: skip
    for job in done(jobs, "figure11"):
        r = job["experiments"][-1]  # the one sweep experiment
        hits = sum(a["store_counters"].get("hits", 0) for a in r["agents"])
        ttl = job["vars"]["ttl"]
        label = "invalidation" if job["vars"]["consistency"] == "invalidation" else f"TTL {ttl} s"
        lag = r["lag"]
        print(
            f"{label:>14} {r['actions_per_s']:>10,.0f} {r['unpredictable_percent']:>16.3f} "
            f"{lag['p50_ms']:>11.1f} {lag['max_ms']:>11.1f} {hits:>10,}"
        )


def figure6(jobs: list[dict]) -> None:
    print("Figure 6: SoAR (actions/s) by write mix, 2 agents, 1,000 members, images 12 KB")
    print(f"{'mix':>10} {'PostgreSQL':>12} {'CASQL':>12}")
    soar = {(j["vars"]["mix"], j["vars"]["store"]): j["soar"] for j in done(jobs, "figure6")}
    for mix in ("verylow", "high"):
        cells = [soar.get((mix, s)) for s in ("postgres", "casql")]
        print(f"{mix:>10}" + "".join(f" {c:>12,.0f}" if c is not None else f" {'-':>12}"
                                     for c in cells))  # fmt: skip


def figure3(jobs: list[dict]) -> None:
    print("Figure 3: View Profile SoAR of PostgreSQL by profile image size, 2 agents")
    print(f"{'image':>10} {'SoAR':>10} {'at T':>6}")
    for job in done(jobs, "figure3"):
        kb = job["vars"]["image_kb"]
        s = job["record"]
        print(f"{f'{kb} KB' if kb else 'none':>10} {s['soar']:>10,.0f} {s['soar_threads']:>6}")


def stores(jobs: list[dict]) -> None:
    print("SoAR of each store, `low` mix, 1,000 members, 2 agents, SoAR search 3 s / 6 s")
    print(f"{'store':>28} {'SoAR':>10} {'at T':>6} {'unique exp.':>11}")
    for job in done(jobs, "stores"):
        s, store = job["record"], job["vars"]["store"]
        if store == "mongodb":
            store = f"mongodb ({job['experiments'][-1]['store'].split(' (')[0]})"
        print(f"{store:>28} {s['soar']:>10,.0f} {s['soar_threads']:>6} "
              f"{s['experiments_unique']:>11}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("figures", nargs="*", help=f"some of {', '.join(FIGURES)} (default all)")
    parser.add_argument("--quick", action="store_true", help="a short check, not the figures")
    parser.add_argument("--results", type=Path, help="results directory (default: a temporary)")
    parser.add_argument("--show", metavar="CAMPAIGN_ID", help="print a recorded run's tables")
    args = parser.parse_args()
    if set(args.figures) - set(FIGURES):
        parser.error(f"figures are {', '.join(FIGURES)}")
    wanted = args.figures or FIGURES
    patches: list[Patch] = [only(wanted)] if args.figures else []
    if args.quick:
        patches.append(every_job(QUICK))
    with tempfile.TemporaryDirectory() as tmp:
        jobs = campaign_jobs("paper_effects", args.results, args.show, patches, tmp)
        for name in wanted:
            globals()[name](jobs)
            print()


if __name__ == "__main__":
    main()
