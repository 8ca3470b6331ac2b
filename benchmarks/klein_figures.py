"""Klein et al.'s Figures 2, 3 and 4: the EHR thread sweep of the read-only, write-only
and 80/20 read/write mixes on Cassandra, one node against three (one per data centre,
Table 1's strong consistency). Runs examples/campaigns/klein_fig0N_*.yaml one after the
other and prints, per figure, the two sweeps side by side with what bound each T.

    .venv/bin/python benchmarks/klein_figures.py [--here] [--figures 2,3,4] [--results DIR]
    .venv/bin/python benchmarks/klein_figures.py --show ID[,ID...] --results DIR

--here runs the *_here.yaml variants (each T twice for 5 s, not three times for 10 s).
--show prints recorded campaigns (one id per figure) without running anything.

Per T and job: the mean throughput of the repeats, each action's mean latency (avg and
p95, ms), and from the experiments' resource figures (bgbench/resources/, averaged over
the repeats' rated windows): the host's busy cores, the store's processes' CPU and their
run-queue wait (cores), the load process's, the other processes' (the host's busy cores
less both: other tenants of a shared machine), the store's CPU per action (ms of CPU the
Cassandra JVMs spent per action: the service demand that sets the ceiling when CPU is the
bottleneck), and the bottleneck each repeat named (the most frequent kind).
"""

import argparse
import json
import statistics
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from ehr_consistency import action
from harness import campaign_jobs

from bgbench.coordinator.storage.results import ResultsStore

FIGURES = {2: "klein_fig02_readonly", 3: "klein_fig03_writeonly", 4: "klein_fig04_readwrite"}


def resources_by_threads(results: Path, rating_id: str) -> dict[int, dict[str, Any]]:
    """Per T, the sweep repeats' host figures averaged, and their bottleneck kinds."""
    store = ResultsStore.existing(results)
    by_t: dict[int, list[dict[str, Any]]] = {}
    for row in store.experiments(rating_id):
        if row["phase"] != "sweep" or row["status"] == "fault":
            continue
        result = json.loads(row["result_json"])
        figures = result.get("resources") or {}
        hosts = figures.get("hosts") or []
        if not hosts:
            continue
        host, bound = hosts[0], figures.get("bottleneck", {})
        by_t.setdefault(int(row["threads"]), []).append({
            "rate": float(result["actions_per_s"]),
            "run_rate": float((result.get("steady") or {}).get("run_actions_per_s", 0.0)),
            "host": host["cpu_cores"],
            "store": host["store_cpu_cores"],
            "store_wait": host["store_runqueue_cores"],
            "store_procs": host["store_processes"],
            "load": host["load_cpu_cores"],
            "load_busiest": host["load_busiest_cores"],
            "disk": host["disk_busy"],
            "other": max(0.0, host["cpu_cores"] - host["store_cpu_cores"]
                         - host["load_cpu_cores"]),
            "kind": bound.get("kind", "unmeasured"),
        })  # fmt: skip
    out = {}
    for t, reps in by_t.items():
        mean = {k: statistics.fmean(r[k] for r in reps) for k in reps[0] if k != "kind"}
        runs = [r["run_rate"] for r in reps]
        mean["run_spread"] = max(runs) - min(runs)
        mean["store_ms_per_action"] = 1000 * mean["store"] / (mean["run_rate"] or 1.0)
        mean["kinds"] = "/".join(f"{k}" for k, _ in Counter(r["kind"] for r in reps).most_common())
        out[t] = mean
    return out


def latency(row: dict[str, Any] | None, name: str) -> str:
    if row is None:
        return f"{'-':>13}"
    a = action(row, name)
    if not a.get("count"):
        return f"{'-':>13}"
    return f"{a['mean_ms']:>6.1f}/{a['p95_ms']:<6.1f}"


def print_figure(number: int, jobs: list[dict], results: Path) -> None:
    done = [j for j in jobs if j["status"] == "done" and j["record"]]
    names = [j["vars"]["nodes"] for j in done]
    rows = {j["vars"]["nodes"]: {r["threads"]: r for r in j["record"]["sweep"]["rows"]}
            for j in done}  # fmt: skip
    used = {j["vars"]["nodes"]: resources_by_threads(results, j["rating_id"]) for j in done}
    for j in jobs:
        if j["status"] != "done":
            print(f"figure {number}: job {j['label']} {j['status']}: {j['message']}")
    print(
        f"\nFigure {number}: throughput, actions/s over each run (the paper's measure: "
        "the actions over the run's time), mean of the repeats ± half their range, and "
        "(in brackets) the sweep's steady-window figure; latency avg/p95 ms per action"
    )
    head = f"{'T':>5}"
    for n in names:
        head += f" | {n:>21} {'READ':>13} {'WRITE':>13}"
    print(head + (" | 3/1" if len(names) == 2 else ""))
    threads = sorted(set().union(*(r.keys() for r in rows.values()))) if rows else []
    for t in threads:
        line = f"{t:>5}"
        for n in names:
            r, u = rows[n].get(t), used[n].get(t)
            rate = f"{'-':>21}"
            if r and u:
                run = f"{u['run_rate']:,.0f}±{u['run_spread'] / 2:,.0f}"
                rate = f"{run:>12} [{r['actions_per_s']:>6,.0f}]"
            line += f" | {rate} {latency(r, 'READ')} {latency(r, 'WRITE')}"
        if len(names) == 2:
            one, three = (used[n].get(t) for n in names)
            if one and three and one["run_rate"]:
                line += f" | {three['run_rate'] / one['run_rate']:.2f}"
        print(line)
    print(
        "\nwhat each T used (cores, mean of the repeats' rated windows): host busy; the "
        "store's JVMs' CPU + run-queue wait [processes]; the load process's CPU; other "
        "processes; the busiest disk's busy share; the JVMs' CPU ms per action; the "
        "bottleneck named"
    )
    for n in names:
        print(f"  {n}")
        print(f"  {'T':>5} {'run/s':>7} {'host':>5} {'store cpu+wait':>17} {'load':>5} "
              f"{'other':>5} {'disk':>5} {'ms/action':>9}  bottleneck")  # fmt: skip
        for t in threads:
            u = used[n].get(t)
            if u is None:
                continue
            print(f"  {t:>5} {u['run_rate']:>7,.0f} {u['host']:>5.2f} {u['store']:>6.2f}+"
                  f"{u['store_wait']:<6.2f}[{u['store_procs']:.0f}] {u['load']:>5.2f} "
                  f"{u['other']:>5.2f} {u['disk']:>5.0%} {u['store_ms_per_action']:>9.3f}  "
                  f"{u['kinds']}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--here", action="store_true", help="the *_here.yaml variants")
    parser.add_argument("--figures", default="2,3,4", help="which of 2, 3, 4 (default all)")
    parser.add_argument("--results", type=Path, help="results directory (default: a temporary)")
    parser.add_argument("--show", metavar="IDS", help="recorded campaigns, one per figure")
    args = parser.parse_args()
    figures = [int(f) for f in args.figures.split(",")]
    if any(f not in FIGURES for f in figures):
        raise SystemExit(f"--figures: each of {sorted(FIGURES)}")
    shown = args.show.split(",") if args.show else [None] * len(figures)
    if len(shown) != len(figures):
        raise SystemExit("--show: one campaign id per figure of --figures")
    with tempfile.TemporaryDirectory() as tmp:
        results = args.results or Path(tmp) / "results"
        for number, campaign_id in zip(figures, shown, strict=True):
            name = FIGURES[number] + ("_here" if args.here else "")
            jobs = campaign_jobs(name, results, campaign_id, [], tmp)
            print_figure(number, jobs, results)


if __name__ == "__main__":
    main()
