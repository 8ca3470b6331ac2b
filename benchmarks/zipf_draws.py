"""D-Zipfian draw speed: members drawn per second from one fragment's local distribution.

.venv/bin/python benchmarks/zipf_draws.py
"""

import time

import numpy as np

from bgbench.workloads.zipf import LocalZipf, assign_fragments, fragment_members


def main() -> None:
    print(f"{'members':>10} {'fragments':>9} {'batch':>7} {'draws/s':>14}")
    for members, fragments in ((10_000, 1), (10_000, 8), (1_000_000, 4)):
        owner = assign_fragments(members, 0.27, [1.0] * fragments)
        local = LocalZipf(fragment_members(owner, 0), 0.27, members)
        rng = np.random.default_rng(1)
        for batch in (1024, 1_000_000):
            rounds = max(1, 5_000_000 // batch)
            t0 = time.perf_counter()
            for _ in range(rounds):
                local.draw(rng, batch)
            rate = rounds * batch / (time.perf_counter() - t0)
            print(f"{members:>10,} {fragments:>9} {batch:>7,} {rate:>14,.0f}")


if __name__ == "__main__":
    main()
