"""How many experiments the SoAR search needs, on the model store (paper Figure 13).

The model store's throughput is the paper's parabola a*T - T^2 (vertex worth the
peak at T = sqrt(peak)); the search runs on a virtual clock, so each row takes
well under a second.

    .venv/bin/python benchmarks/model_rating.py
"""

import json
import subprocess
import sys
import tempfile
import time

PEAKS = [500, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8]


def main() -> None:
    print(f"{'peak (SoAR)':>12} {'SoAR found':>14} {'error %':>8} {'at T':>6} "
          f"{'requested':>9} {'unique':>6} {'seconds':>7}")  # fmt: skip
    for peak in PEAKS:
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            proc = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "bgbench",
                    "rate",
                    "--store",
                    "model",
                    "--objective",
                    "soar",
                    "-p",
                    f"model.peak={peak:g}",
                    "--results",
                    tmp,
                    "--json",
                ],
                capture_output=True,
                text=True,
                check=True,
            )
            seconds = time.perf_counter() - t0
        s = json.loads(proc.stdout)
        error = 100 * abs(s["soar"] - peak) / peak
        print(
            f"{peak:>12,.0f} {s['soar']:>14,.1f} {error:>8.3f} {s['soar_threads']:>6} "
            f"{s['experiments_requested']:>9} {s['experiments_unique']:>6} {seconds:>7.2f}"
        )


if __name__ == "__main__":
    main()
