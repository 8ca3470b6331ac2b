"""The generated sensor logs: machines x sensors series of readings (m, s, bt, et, mv).

Every quantity of a series comes from its own random stream, seeded by (seed, m, s,
quantity), so a series' first n readings are the same whatever n is (a smaller load is a
prefix of a larger one, as the paper loaded "increasing sections of the data logs") and
whatever fragment holds it. A series:

- times: the first reading at start_ms plus a per-series offset, then gaps drawn
  uniformly in [period/2, 3 period/2); a reading is valid over [bt, et) with et the next
  reading's bt (the paper's intervals derived from consecutive timestamps);
- values: a random walk of normal steps reflected into [low, high] (continuous: no two
  readings share a value, so a threshold selects an exact number of rows), plus rare
  spikes above it, so high thresholds select few rows.
"""

import csv
import itertools
from collections.abc import Iterator, Sequence
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

import numpy as np

from bgbench.workloads.sensorlog.config import SensorLogDatabaseConfig, SignalConfig

GAPS, OFFSET, START, STEPS, SPIKES, SPIKE_SIZE = range(6)  # a series' random streams
CSV_HEADER = ("m", "s", "bt", "et", "mv")


class Rows(NamedTuple):
    """A batch of readings as columns (equal lengths), in key order (m, s, bt)."""

    m: np.ndarray  # int64
    s: np.ndarray  # int64
    bt: np.ndarray  # int64, ms since the epoch
    et: np.ndarray  # int64
    mv: np.ndarray  # float64

    def __len__(self) -> int:
        return len(self.m)

    def tuples(self) -> list[tuple[int, int, int, int, float]]:
        return list(
            zip(
                self.m.tolist(), self.s.tolist(), self.bt.tolist(), self.et.tolist(),
                self.mv.tolist(), strict=True,
            )
        )  # fmt: skip


def _rng(db: SensorLogDatabaseConfig, m: int, s: int, stream: int) -> np.random.Generator:
    return np.random.default_rng([db.seed, m, s, stream])


def reflect(walk: np.ndarray, signal: SignalConfig) -> np.ndarray:
    """A walk folded into [low, high] as if it bounced off both bounds."""
    width = signal.high - signal.low
    y = np.mod(walk - signal.low, 2 * width)
    return signal.low + np.where(y > width, 2 * width - y, y)


def reflect_value(value: float, signal: SignalConfig) -> float:
    """`reflect` of one value, without numpy's per-call cost (ingest, once an action)."""
    width = signal.high - signal.low
    y = (value - signal.low) % (2 * width)
    return signal.low + (2 * width - y if y > width else y)


def series_values(db: SensorLogDatabaseConfig, m: int, s: int, n: int) -> np.ndarray:
    """The first n values of series (m, s): the reflected walk plus its spikes."""
    sig = db.signal
    start = _rng(db, m, s, START).uniform(sig.low, sig.high)
    steps = _rng(db, m, s, STEPS).normal(0.0, sig.step, n)
    walk = reflect(start + np.cumsum(steps), sig)
    spiking = _rng(db, m, s, SPIKES).random(n) < sig.spike_probability
    size = _rng(db, m, s, SPIKE_SIZE).uniform(sig.spike_min, sig.spike_max, n)
    return walk + np.where(spiking, size, 0.0)


def series_walk_end(db: SensorLogDatabaseConfig, m: int, s: int, n: int) -> float:
    """The walk's value (without spikes) at reading n - 1: where ingest continues it."""
    sig = db.signal
    start = _rng(db, m, s, START).uniform(sig.low, sig.high)
    steps = _rng(db, m, s, STEPS).normal(0.0, sig.step, n)
    return float(reflect(np.array([start + steps.sum()]), sig)[0])


def series_times(db: SensorLogDatabaseConfig, m: int, s: int, n: int) -> np.ndarray:
    """The first n + 1 reading times of series (m, s): bt of reading k is times[k], et
    times[k + 1]."""
    half = db.period_ms // 2
    gaps = _rng(db, m, s, GAPS).integers(half, half + db.period_ms, n + 1)
    offset = int(_rng(db, m, s, OFFSET).integers(0, db.period_ms))
    gaps[0] = 0
    return db.start_ms + offset + np.cumsum(gaps)


def series_rows(db: SensorLogDatabaseConfig, m: int, s: int, n: int) -> Rows:
    times = series_times(db, m, s, n)
    return Rows(
        np.full(n, m, dtype=np.int64),
        np.full(n, s, dtype=np.int64),
        times[:n].astype(np.int64),
        times[1:].astype(np.int64),
        series_values(db, m, s, n),
    )


def machine_rows(db: SensorLogDatabaseConfig, m: int, n: int) -> Rows:
    """Every series of machine m, its first n readings each."""
    parts = [series_rows(db, m, s, n) for s in range(db.sensors)]
    return Rows(*(np.concatenate(col) for col in zip(*parts, strict=True)))


def rows_of(db: SensorLogDatabaseConfig, machines: Sequence[int], n: int) -> Iterator[Rows]:
    """The machines' readings, one machine per batch."""
    for m in machines:
        yield machine_rows(db, m, n)


def readings_for(db: SensorLogDatabaseConfig, rows: int) -> int:
    """Readings per series that make about `rows` rows (at least one each)."""
    return max(1, rows // db.series)


def all_values(db: SensorLogDatabaseConfig, n: int) -> np.ndarray:
    """mv of every row of a database of n readings per series."""
    return np.concatenate(
        [series_values(db, m, s, n) for m in range(db.machines) for s in range(db.sensors)]
    )


class Threshold(NamedTuple):
    percent: float  # the selectivity asked for
    x: float  # mv > x selects exactly `rows` rows
    rows: int
    total: int

    @property
    def selected_percent(self) -> float:
        return 100.0 * self.rows / self.total if self.total else 0.0


def thresholds(values: np.ndarray, percents: Sequence[float]) -> list[Threshold]:
    """For each selectivity p, the threshold x with count(mv > x) = round(p% of rows):
    halfway between the n-th and (n+1)-th largest values (values are distinct)."""
    desc = np.sort(values)[::-1]
    total = len(desc)
    out = []
    for p in percents:
        n = min(total, round(p / 100.0 * total))
        if n == 0:
            x = float(desc[0]) + 1.0
        elif n == total:
            x = float(desc[-1]) - 1.0
        else:
            x = float((desc[n - 1] + desc[n]) / 2.0)
        out.append(Threshold(p, x, n, total))
    return out


def database_threshold(db: SensorLogDatabaseConfig, percent: float) -> Threshold:
    """The threshold of the loaded database (every series' `readings` values)."""
    return _database_threshold(db.model_dump_json(), percent)


@lru_cache(maxsize=8)
def _database_threshold(db_json: str, percent: float) -> Threshold:
    db = SensorLogDatabaseConfig.model_validate_json(db_json)
    return thresholds(all_values(db, db.readings), [percent])[0]


def split_machines(machines: int, capacities: Sequence[float]) -> list[range]:
    """Contiguous machine ranges, one per fragment, sized by capacity (largest remainder;
    each fragment one machine at least when there are enough)."""
    weights = np.asarray(capacities, dtype=float)
    share = weights / weights.sum() * machines
    sizes = np.floor(share).astype(int)
    for i in np.argsort(-(share - sizes), kind="stable")[: machines - int(sizes.sum())]:
        sizes[i] += 1
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    return [range(int(lo), int(hi)) for lo, hi in itertools.pairwise(bounds.tolist())]


def write_csv(db: SensorLogDatabaseConfig, path: Path, n: int | None = None) -> int:
    """The database (n readings per series) as one CSV file with a header; rows written."""
    n = db.readings if n is None else n
    written = 0
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(CSV_HEADER)
        for rows in rows_of(db, range(db.machines), n):
            out.writerows(rows.tuples())
            written += len(rows)
    return written
