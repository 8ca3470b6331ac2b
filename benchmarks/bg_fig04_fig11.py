"""BG's Figure 4 (List Friends by friends per member) and Figure 11 (CASQL's unpredictable
reads against T per TTL): examples/campaigns/bg_fig04_*.yaml and bg_fig11_*.yaml, run as
campaigns, and their figures as tables with what explains them.

    .venv/bin/python benchmarks/bg_fig04_fig11.py fig04 fig11 [--full] --results DIR
    .venv/bin/python benchmarks/bg_fig04_fig11.py fig11 --show CAMPAIGN_ID --results DIR

- fig04: SoAR of List Friends alone by phi and store; per rating the List Friends mean
  service time at the lowest T it ran, its p95 at the SoAR, CASQL's cache hits over
  lookups and values too large for memcached (over the whole rating, warm-up included),
  and the bottleneck of the experiment that gave the SoAR (the last one run for SoAR 0).
- fig11: per way of keeping CASQL's cache fresh (invalidation, TTL 5, 10, 20 s) and per T,
  throughput, unpredictable %, cache hits and the host's CPU (busy cores: the load, the
  store, everything else on the machine).

Without --full each runs the `_here` variant (the sizes this 2-core machine finishes in
about 20 minutes); --full runs the paper-size file.
"""

import argparse
import tempfile
from pathlib import Path

from harness import campaign_jobs

from bgbench.coordinator.storage.results import ResultsStore

FIGURES = {"fig04": "bg_fig04_list_friends", "fig11": "bg_fig11_ttl_staleness"}
WRITES = {"IF", "AFR", "RFR", "TF", "PCR", "DCR"}


def phases(job: dict, results: Path) -> list[str]:
    """Each recorded experiment's phase (warmup, sweep, search, final ...), in order."""
    if not job["rating_id"]:
        return []
    return [row["phase"] for row in ResultsStore.existing(results).experiments(job["rating_id"])]


def writes_per_s(experiment: dict) -> float:
    n = sum(a["count"] for a in experiment["per_action"] if a["action"] in WRITES)
    return n / (experiment["elapsed_s"] or experiment["duration_s"])


def lf_service_ms(experiment: dict) -> float:
    row = next((a for a in experiment["per_action"] if a["action"] == "LF"), None)
    return float(row["service"]["mean_ms"]) if row else float("nan")


def lf_p95_ms(experiment: dict) -> float:
    row = next((a for a in experiment["per_action"] if a["action"] == "LF"), None)
    return float(row["response"]["p95_ms"]) if row else float("nan")


def host_load(experiment: dict) -> str:
    """Busy cores of the host: the load processes, the store, and everything else."""
    res = experiment.get("resources") or {}
    hosts = res.get("hosts") or []
    if not hosts:
        return "-"
    h = hosts[0]
    other = max(h["cpu_cores"] - h["load_cpu_cores"] - h["store_cpu_cores"], 0.0)
    return f"{h['cpu_cores']:.2f}={h['load_cpu_cores']:.2f}+{h['store_cpu_cores']:.2f}+{other:.2f}"


def hit_percent(counters: dict[str, int]) -> float:
    """memcached hits over lookups (CASQL's counters; 0 for the other stores)."""
    looked = counters.get("hits", 0) + counters.get("misses", 0)
    return 100 * counters.get("hits", 0) / looked if looked else 0.0


def counted_in(experiments: list[dict]) -> list[dict[str, int]]:
    """Each experiment's own store counters: a binding's counts run from the start of the
    rating (its agents live through it), so each is the difference from the one before,
    or the counts themselves where they fell (an agent started again)."""
    out, before = [], {}
    for e in experiments:
        now = e["store_counters"]
        fell = any(n < before.get(k, 0) for k, n in now.items())
        out.append(dict(now) if fell else {k: n - before.get(k, 0) for k, n in now.items()})
        before = now
    return out


def bottleneck(experiment: dict) -> str:
    b = (experiment.get("resources") or {}).get("bottleneck") or {}
    return f"{b.get('kind', '-')}: {b.get('resource', '')}".strip()


def graph(job: dict) -> str:
    """The job's graph: its `graph` foreach value, or the _here file's Zipfian entry
    (`warm`: the _here file's entry rated after a warm-up)."""
    if job["label"].startswith("list-friends-zipfian"):
        return "zipfian"
    if job["label"].startswith("list-friends-warm"):
        return "uni+warm"
    return str(job["vars"].get("graph", "uniform"))


def fig04(jobs: list[dict], results: Path) -> None:
    print("Figure 4: SoAR of List Friends by friends per member (phi)")
    print("host busy cores = load + store + other processes, at the SoAR's experiment")
    head = f"{'graph':>8} {'phi':>5} {'store':>9} {'SoAR':>8} {'at T':>5} {'LF ms lowT':>10} "
    print(head + f"{'LF p95':>8} {'hit %':>6} {'oversize':>8} {'host busy cores':>22}  bottleneck")
    for job in jobs:
        if job["status"] != "done" or not job["experiments"]:
            print(f"{job['label']}: {job['status']} {job.get('message', '')}")
            continue
        s, ex, v = job["record"], job["experiments"], job["vars"]
        at = s.get("soar_threads") or 0
        best = next((e for e in reversed(ex) if e["threads"] == at), ex[-1])
        lowest = min(ex, key=lambda e: e["threads"])
        counters = ex[-1]["store_counters"]  # the binding counts from the rating's start
        print(
            f"{graph(job):>8} {v['phi']:>5} {v['store']:>9} {s['soar']:>8,.0f} "
            f"{at:>5} {lf_service_ms(lowest):>10.1f} {lf_p95_ms(best):>8.1f} "
            f"{hit_percent(counters):>6.1f} {counters.get('oversized', 0):>8,} "
            f"{host_load(best):>22}  {bottleneck(best)}"
        )


def fig11(jobs: list[dict], results: Path) -> None:
    print("Figure 11: CASQL unpredictable reads against T, 10%-write mix, 12 KB images")
    print("host busy cores = load + store + other processes; the warm-up run is not shown")
    head = f"{'cache':>12} {'T':>4} {'actions/s':>10} {'writes/s':>8} {'within %':>8} "
    print(head + f"{'unpred. %':>9} {'lag p50 ms':>10} {'hit %':>6} {'host busy cores':>22}"
          "  bottleneck")  # fmt: skip
    for job in jobs:
        if job["status"] != "done":
            print(f"{job['label']}: {job['status']} {job.get('message', '')}")
            continue
        v = job["vars"]
        label = "invalidation" if v["consistency"] == "invalidation" else f"TTL {v['ttl']} s"
        ex = job["experiments"]
        for e, phase, counts in zip(ex, phases(job, results), counted_in(ex), strict=True):
            if e.get("fault") or phase == "warmup":
                continue
            hit = hit_percent(counts)
            print(
                f"{label:>12} {e['threads']:>4} {e['actions_per_s']:>10,.0f} "
                f"{writes_per_s(e):>8,.1f} {e['within_percent']:>8.2f} "
                f"{e['unpredictable_percent']:>9.3f} {e['lag']['p50_ms']:>10.1f} {hit:>6.1f} "
                f"{host_load(e):>22}  {bottleneck(e)}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("figures", nargs="*", help="fig04, fig11 (default both)")
    parser.add_argument("--full", action="store_true", help="the paper-size campaign files")
    parser.add_argument("--results", type=Path, help="results directory (default: a temporary)")
    parser.add_argument("--show", metavar="CAMPAIGN_ID", help="print a recorded run's table")
    args = parser.parse_args()
    if set(args.figures) - set(FIGURES):
        parser.error(f"figures are {', '.join(FIGURES)}")
    wanted = args.figures or list(FIGURES)
    if args.show and len(wanted) != 1:
        parser.error("--show prints one figure's campaign: name the figure")
    with tempfile.TemporaryDirectory() as tmp:
        results = args.results or Path(tmp) / "results"
        for name in wanted:
            campaign = FIGURES[name] + ("" if args.full else "_here")
            jobs = campaign_jobs(campaign, results, args.show, [], tmp)
            globals()[name](jobs, results)
            print()


if __name__ == "__main__":
    main()
