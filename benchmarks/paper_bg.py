"""The BG paper's Figures 2, 3, 6, 8 and 13 as recorded campaigns
(examples/campaigns/bg_fig*.yaml), their tables printed from the results store.

    .venv/bin/python benchmarks/paper_bg.py figure6 --here   # run bg_fig06_write_mix_here.yaml
    .venv/bin/python benchmarks/paper_bg.py figure6           # the full-size file
    .venv/bin/python benchmarks/paper_bg.py figure6 --show CAMPAIGN_ID --results DIR

- figure2: throughput and the share within beta by T (PostgreSQL, View Profile, 12 KB).
- figure3: View Profile SoAR by profile image size (PostgreSQL, CASQL, MongoDB-wire).
- figure6: SoAR by write mix (Table 3's 0.1%, 1%, 10%), 12 KB images.
- figure8: throughput by T with 1, 2, 4 and 8 agents (D-Zipfian), View Profile.
- figure13: experiments of the SoAR search by the SoAR found (the model store).

Beside each figure: per action the mean service time at the rating's SoAR (what a mix
costs), the bottleneck the rating's resource figures name, and the host's CPU split
(load processes, the store's processes, everything else: other work on the machine).
"""

import argparse
import statistics
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

from harness import campaign_jobs, done

FILES = {
    "figure2": "bg_fig02_threads",
    "figure3": "bg_fig03_image_size",
    "figure6": "bg_fig06_write_mix",
    "figure8": "bg_fig08_dzipfian_agents",
    "figure13": "bg_fig13_search_experiments",
}
READS = ["VP", "LF", "VFR", "VTR"]
WRITES = ["IF", "AFR", "RFR", "TF"]


def cpu_split(experiments: list[dict]) -> str:
    """The host's busy cores over `experiments`, split into the load processes, the
    store's processes and the rest (other work sharing the machine)."""
    hosts = [h for e in experiments for h in (e.get("resources") or {}).get("hosts", [])]
    hosts = [h for h in hosts if h.get("cpu_cores") is not None]
    if not hosts:
        return "unmeasured"
    busy = statistics.fmean(h["cpu_cores"] for h in hosts)
    load = statistics.fmean(h.get("load_cpu_cores") or 0 for h in hosts)
    store = statistics.fmean(h.get("store_cpu_cores") or 0 for h in hosts)
    return f"{busy:.2f}/{hosts[0]['cores']} busy: load {load:.2f} store {store:.2f} " \
        f"other {max(busy - load - store, 0):.2f}"  # fmt: skip


def cpu_per_action(experiments: list[dict]) -> str:
    """CPU ms per action of the load processes and of the store's processes (what an
    action costs, whatever other work takes of the machine; wall times are not)."""
    load, store, n = 0.0, 0.0, 0
    for e in experiments:
        hosts = [h for h in (e.get("resources") or {}).get("hosts", []) if h.get("cpu_cores")]
        if hosts and e["actions_per_s"] > 0:
            load += sum(h.get("load_cpu_cores") or 0 for h in hosts) / e["actions_per_s"]
            store += sum(h.get("store_cpu_cores") or 0 for h in hosts) / e["actions_per_s"]
            n += 1
    return f"{1000 * load / n:.3f}+{1000 * store / n:.3f}" if n else "-"


def service_means(experiments: list[dict]) -> dict[str, float]:
    """Each action's mean service time (ms) pooled over `experiments` (weighted by count)."""
    total: dict[str, float] = defaultdict(float)
    count: dict[str, int] = defaultdict(int)
    for e in experiments:
        for a in e.get("per_action", []):
            n = a["service"]["count"]
            total[a["action"]] += a["service"]["mean_ms"] * n
            count[a["action"]] += n
    return {k: total[k] / count[k] for k in total if count[k]}


def final_experiments(job: dict) -> list[dict]:
    """The experiments of the rating's final runs at its SoAR's T (the search's at that T
    when the final ones are missing; every experiment of a rating that found no SoAR)."""
    record, experiments = job["record"], job["experiments"]
    at = [e for e in experiments if e["threads"] == record["soar_threads"]]
    final = [e for e in at if e["duration_s"] == record["final_duration_s"]]
    return final or at or experiments


def cache_hits(experiments: list[dict]) -> str:
    hits = sum(a["store_counters"].get("hits", 0) for e in experiments for a in e["agents"])
    misses = sum(a["store_counters"].get("misses", 0) for e in experiments for a in e["agents"])
    return f"{100 * hits / (hits + misses):.1f}%" if hits + misses else "-"


def bottleneck(experiments: list[dict]) -> str:
    texts = [((e.get("resources") or {}).get("bottleneck") or {}).get("kind") for e in experiments]
    kinds = sorted({t for t in texts if t})
    return ",".join(kinds) or "-"


def by_threads(job: dict) -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = defaultdict(list)
    for e in job["experiments"]:
        out[e["threads"]].append(e)
    return dict(sorted(out.items()))


def sweep_rows(job: dict) -> list[tuple[int, float, float, float, str, str]]:
    """Per T of a sweep: mean actions/s, within %, p95 ms, the bottleneck, CPU ms per
    action (load+store) and the host's CPU split."""
    rows = []
    for t, es in by_threads(job).items():
        rows.append((
            t, statistics.fmean(e["actions_per_s"] for e in es),
            statistics.fmean(e["within_percent"] for e in es),
            statistics.fmean(e["overall"]["p95_ms"] for e in es),
            bottleneck(es), f"{cpu_per_action(es):>11}  {cpu_split(es)}",
        ))  # fmt: skip
    return rows


def figure2(jobs: list[dict]) -> None:
    print("Figure 2: PostgreSQL, View Profile, 12 KB images, 10,000 members: by T")
    print(f"{'T':>5} {'actions/s':>10} {'within %':>9} {'p95 ms':>8} {'VP svc ms':>9} "
          f"{'bottleneck':>12}  CPU ms/act  host CPU")  # fmt: skip
    for job in done(jobs, "figure2"):
        groups = by_threads(job)
        for t, rate, within, p95, neck, cpu in sweep_rows(job):
            vp = service_means(groups[t]).get("VP", 0.0)
            print(f"{t:>5} {rate:>10,.0f} {within:>9.2f} {p95:>8.1f} {vp:>9.3f} {neck:>12}  {cpu}")


def soar_table(jobs: list[dict], name: str, column: str) -> None:
    performed = {a["action"] for j in done(jobs, name) for e in j["experiments"]
                 for a in e.get("per_action", [])}  # fmt: skip
    actions = [a for a in READS + WRITES if a in performed]
    print(f"{'store':>9} {column:>8} {'SoAR':>8} {'at T':>5} {'unpred %':>8} {'hits':>6} "
          + "".join(f"{a + ' ms':>8}" for a in actions)
          + f" {'mix ms':>7} {'CPU ms/act':>11} {'bottleneck':>12}  host CPU at SoAR")  # fmt: skip
    for job in done(jobs, name):
        record = job["record"]
        final = final_experiments(job)
        svc = service_means(final)
        counts: dict[str, int] = defaultdict(int)
        for e in final:
            for a in e.get("per_action", []):
                counts[a["action"]] += a["count"]
        n = sum(counts.values()) or 1
        mix_ms = sum(svc.get(a, 0) * counts[a] / n for a in counts)
        unpred = statistics.fmean(e["unpredictable_percent"] for e in final) if final else 0
        value = job["vars"].get("mix", job["vars"].get("image_kb"))
        cells = "".join(f"{svc[a]:>8.3f}" if a in svc else f"{'-':>8}" for a in actions)
        print(f"{job['vars']['store']:>9} {value!s:>8} {record['soar']:>8,.0f} "
              f"{record['soar_threads']:>5} {unpred:>8.3f} {cache_hits(final):>6} {cells} "
              f"{mix_ms:>7.3f} {cpu_per_action(final):>11} {bottleneck(final):>12}  "
              f"{cpu_split(final)}")  # fmt: skip


def figure3(jobs: list[dict]) -> None:
    print("Figure 3: View Profile SoAR by profile image size (KB; 0: none), tau 0")
    soar_table(jobs, "figure3", "image KB")


def figure6(jobs: list[dict]) -> None:
    print("Figure 6: SoAR by write mix, 12 KB images, 10,000 members x 100 friends, tau 0.01%")
    soar_table(jobs, "figure6", "mix")
    same_t(jobs)


def same_t(jobs: list[dict]) -> None:
    """Each store's mixes at the T every one of them ran in its search: the mix's cost
    with the load held equal."""
    per_store: dict[str, list[dict]] = defaultdict(list)
    for job in done(jobs, "figure6"):
        per_store[job["vars"]["store"]].append(job)
    for store, store_jobs in per_store.items():
        common = set.intersection(*(set(by_threads(j)) for j in store_jobs))
        for t in sorted(common):
            cells = []
            for j in store_jobs:
                es = by_threads(j)[t]
                rate = statistics.fmean(e["actions_per_s"] for e in es)
                within = statistics.fmean(e["within_percent"] for e in es)
                cells.append(f"{j['vars']['mix']} {rate:,.0f}/s {within:.1f}%")
            print(f"  {store} at T={t}: " + "; ".join(cells))


def figure8(jobs: list[dict]) -> None:
    print("Figure 8: View Profile, no images, D-Zipfian 0.27: throughput by T and agents")
    for job in done(jobs, "figure8"):
        rows = sweep_rows(job)
        passing = [r for r in rows if r[2] >= 95]
        socialites = max((r[0] for r in passing), default=0)
        soar = max(passing, key=lambda r: r[1], default=None)
        best = f"{soar[1]:,.0f} at T={soar[0]}" if soar else "0"
        print(f" {job['vars'].get('store', 'postgres')}, {job['vars']['agents']} agent(s): "
              f"Socialites {socialites}, SoAR {best}")  # fmt: skip
        print(
            f"{'T':>6} {'actions/s':>10} {'within %':>9} {'p95 ms':>8} {'bottleneck':>12}"
            "  CPU ms/act  host CPU"
        )
        for t, rate, within, p95, neck, cpu in rows:
            print(f"{t:>6} {rate:>10,.0f} {within:>9.2f} {p95:>8.1f} {neck:>12}  {cpu}")


def figure13(jobs: list[dict]) -> None:
    print("Figure 13: experiments of the SoAR search on the model store (a*T - T^2)")
    print(f"{'peak':>12} {'search':>8} {'SoAR found':>14} {'at T':>6} {'requested':>9} "
          f"{'unique':>6}")  # fmt: skip
    for job in done(jobs, "figure13"):
        r = job["record"]
        print(f"{job['vars']['peak']:>12,} {job['vars']['search']:>8} {r['soar']:>14,.1f} "
              f"{r['soar_threads']:>6} {r['experiments_requested']:>9} "
              f"{r['experiments_unique']:>6}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("figure", choices=sorted(FILES))
    parser.add_argument("--here", action="store_true", help="run the *_here.yaml variant")
    parser.add_argument("--results", type=Path, help="results directory (default: a temporary)")
    parser.add_argument("--show", metavar="CAMPAIGN_ID", help="print a recorded run's tables")
    args = parser.parse_args()
    name = FILES[args.figure] + ("_here" if args.here and args.figure != "figure13" else "")
    with tempfile.TemporaryDirectory() as tmp:
        jobs: list[dict[str, Any]] = campaign_jobs(name, args.results, args.show, [], tmp)
        globals()[args.figure](jobs)


if __name__ == "__main__":
    main()
