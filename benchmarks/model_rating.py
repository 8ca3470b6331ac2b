"""How many experiments the SoAR search needs, on the model store (paper Figure 13), and
whether its interval covers the true peak when the store is noisy.

The model store's throughput is the paper's parabola a*T - T^2 (vertex worth the
peak at T = sqrt(peak)); the search runs on a virtual clock, so each rating takes
about a second.

- counts: for each peak from 500 to 10^8, the classic search (the paper's doubling and
  slope bisection) and the fitted one, noise-free: SoAR found, its error, unique
  experiments.
- coverage: SEEDS seeded ratings per peak with noise (each 0.25 s interval's throughput
  varies with coefficient of variation NOISE): how often the reported 95% interval
  holds the true peak, the largest error of the point, and the unique experiments.

    .venv/bin/python benchmarks/model_rating.py [--seeds 20] [--noise 0.1]
"""

import argparse
import json
import math
import subprocess
import sys
import tempfile
import time

PEAKS = [500, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8]


def rate(peak: float, *extra: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run(
            [sys.executable, "-m", "bgbench", "rate", "--store", "model", "--objective", "soar",
             "-p", f"model.peak={peak:g}", "--results", tmp, "--json", *extra],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def true_peak(peak: float) -> float:
    """The best throughput at a whole T (the vertex sqrt(peak) is rarely whole)."""
    v = math.sqrt(peak)
    return max(peak * (2 * t / v - (t / v) ** 2) for t in (math.floor(v), math.ceil(v)))


def counts() -> None:
    print(f"{'peak':>12} {'search':>8} {'SoAR found':>14} {'error %':>8} {'at T':>6} "
          f"{'requested':>9} {'unique':>6} {'seconds':>7}")  # fmt: skip
    for peak in PEAKS:
        for search in ("classic", "fit"):
            t0 = time.perf_counter()
            s = rate(peak, "-p", f"rating.search={search}")
            seconds = time.perf_counter() - t0
            error = 100 * abs(s["soar"] - true_peak(peak)) / true_peak(peak)
            print(
                f"{peak:>12,.0f} {search:>8} {s['soar']:>14,.1f} {error:>8.3f} "
                f"{s['soar_threads']:>6} {s['experiments_requested']:>9} "
                f"{s['experiments_unique']:>6} {seconds:>7.2f}"
            )


def coverage(seeds: int, noise: float) -> None:
    print(f"\n{seeds} seeded ratings per peak, noise {noise:g} per 0.25 s interval:")
    print(f"{'peak':>12} {'covered':>8} {'max |error| %':>13} {'unique max':>10} "
          f"{'unique mean':>11} {'repeats':>7}")  # fmt: skip
    for peak in PEAKS:
        covered, errors, unique, repeats = 0, [], [], 0
        for seed in range(1, seeds + 1):
            s = rate(peak, "-p", f"model.noise={noise:g}", "-p", f"run.seed={seed}")
            true = true_peak(peak)
            covered += s["soar_low"] is not None and s["soar_low"] <= true <= s["soar_high"]
            errors.append(abs(s["soar"] - true) / true * 100)
            unique.append(s["experiments_unique"])
            repeats += s["experiments_repeated"]
        print(
            f"{peak:>12,.0f} {covered:>5}/{seeds:<2} {max(errors):>13.2f} {max(unique):>10} "
            f"{sum(unique) / len(unique):>11.1f} {repeats:>7}"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--noise", type=float, default=0.1)
    args = parser.parse_args()
    counts()
    coverage(args.seeds, args.noise)


if __name__ == "__main__":
    main()
