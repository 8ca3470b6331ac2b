"""Reads per phase and per time bin of a run: where a scenario's faults show in staleness.

A run is cut into phases at offsets from its start (phase 0 from the start to the first
offset, phase k from offset k); each read counts in the phase its start falls in (a read
that began before a fault and ended after it is the earlier phase's), and in the bin of
`bin_ns` its start falls in. Times are the log's own: monotonic ns on the agent's host,
the run's start (`origin_ns`) on the same clock. A read that began before the origin
counts in phase 0 and bin 0; one that began after MAX_BINS bins is in no bin (it still
counts in its phase, so the phases add up to the whole run and the bins may not).

Pure functions over arrays; the checker (validation/checker.py) calls `count_reads` with
every read's start and the unpredictable reads' starts and lags.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

MAX_BINS = 7200  # a two-hour run in 1 s bins
MAX_PHASES = 1001  # phase starts (one per scenario step) at most 1000, plus phase 0
MIN_BIN_S = 0.001


class PhaseRequestError(ValueError):
    """Phase starts or a bin width that cannot cut a run; `field` is the request's field
    at fault, which the message names too."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class PhaseClock:
    """Where phases and bins begin, in the log's monotonic ns."""

    origin_ns: int  # the run's start
    phase_starts_ns: tuple[int, ...] = ()  # phase 1, 2, ... begin here (in order)
    bin_ns: int = 0  # 0: no series

    @classmethod
    def of_offsets(
        cls, origin_ns: int, phase_starts_s: Sequence[float], series_bin_s: float
    ) -> "PhaseClock":
        """From offsets in seconds from the run's start (as a ValidateRequest gives them);
        PhaseRequestError if they are not finite, >= 0, in order and bounded."""
        starts = list(phase_starts_s)
        if len(starts) >= MAX_PHASES:
            raise PhaseRequestError(
                "phase_starts_s",
                f"phase_starts_s: {len(starts)} phase starts, at most {MAX_PHASES - 1}",
            )
        for i, at in enumerate(starts):
            if not (math.isfinite(at) and at >= 0):
                raise PhaseRequestError(
                    "phase_starts_s", f"phase_starts_s[{i}]: {at!r} is not a finite offset >= 0"
                )
            if i and at < starts[i - 1]:
                raise PhaseRequestError(
                    "phase_starts_s",
                    f"phase_starts_s[{i}]: {at:g} s comes before the previous start "
                    f"({starts[i - 1]:g} s): phases are in order",
                )
        if not (math.isfinite(series_bin_s) and (series_bin_s == 0 or series_bin_s >= MIN_BIN_S)):
            raise PhaseRequestError(
                "series_bin_s",
                f"series_bin_s: {series_bin_s!r} is neither 0 (no series) nor a width >= "
                f"{MIN_BIN_S:g} s",
            )
        return cls(
            origin_ns=origin_ns,
            phase_starts_ns=tuple(origin_ns + round(at * 1e9) for at in starts),
            bin_ns=round(series_bin_s * 1e9),
        )

    @property
    def phases(self) -> int:
        return len(self.phase_starts_ns) + 1

    def phase_of(self, starts_ns: np.ndarray) -> np.ndarray:
        """Each start's phase: the last phase begun at or before it (0 before the first)."""
        bounds = np.asarray(self.phase_starts_ns, dtype=np.int64)
        return np.searchsorted(bounds, np.asarray(starts_ns, dtype=np.int64), side="right")

    def bin_of(self, starts_ns: np.ndarray) -> np.ndarray:
        """Each start's bin from the origin (0 for a start before it); -1 with no series."""
        starts = np.asarray(starts_ns, dtype=np.int64)
        if not self.bin_ns:
            return np.full(len(starts), -1, dtype=np.int64)
        return np.maximum(starts - self.origin_ns, 0) // self.bin_ns


def _empty() -> np.ndarray:
    return np.zeros(0, dtype=np.int64)


@dataclass
class PhaseCounts:
    """Reads and unpredictable reads per phase (with the lags of the unpredictable ones
    that have one, in ms) and per bin; mergeable across disjoint sets of reads."""

    reads: np.ndarray  # per phase
    unpredictable: np.ndarray  # per phase
    lags_ms: list[list[float]]  # per phase
    series_reads: np.ndarray = field(default_factory=_empty)  # per bin, trailing empties off
    series_unpredictable: np.ndarray = field(default_factory=_empty)

    @classmethod
    def empty(cls, phases: int) -> "PhaseCounts":
        return cls(
            np.zeros(phases, dtype=np.int64),
            np.zeros(phases, dtype=np.int64),
            [[] for _ in range(phases)],
        )

    def merge(self, other: "PhaseCounts") -> None:
        if len(other.reads) != len(self.reads):
            raise ValueError(f"{len(other.reads)} phases merged into {len(self.reads)}")
        self.reads = self.reads + other.reads
        self.unpredictable = self.unpredictable + other.unpredictable
        for mine, theirs in zip(self.lags_ms, other.lags_ms, strict=True):
            mine.extend(theirs)
        self.series_reads = _added(self.series_reads, other.series_reads)
        self.series_unpredictable = _added(self.series_unpredictable, other.series_unpredictable)
        self.series_unpredictable = _padded(self.series_unpredictable, len(self.series_reads))


def _padded(counts: np.ndarray, length: int) -> np.ndarray:
    if len(counts) >= length:
        return counts
    return np.concatenate([counts, np.zeros(length - len(counts), dtype=np.int64)])


def _added(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    n = max(len(a), len(b))
    total: np.ndarray = _padded(a, n) + _padded(b, n)
    return total


def _series(bins: np.ndarray) -> np.ndarray:
    kept = bins[(bins >= 0) & (bins < MAX_BINS)]
    return np.bincount(kept).astype(np.int64) if len(kept) else _empty()


def count_reads(
    clock: PhaseClock,
    read_starts_ns: np.ndarray,
    unpredictable_starts_ns: np.ndarray,
    lags_ns: Sequence[int | None],
) -> PhaseCounts:
    """Per phase and per bin: every read (its start), the unpredictable ones among them
    (their starts, and their lags in ns aligned with them: None for a value never held)."""
    if len(lags_ns) != len(unpredictable_starts_ns):
        raise ValueError(f"{len(lags_ns)} lags for {len(unpredictable_starts_ns)} reads")
    n = clock.phases
    read_phase = clock.phase_of(read_starts_ns)
    bad_phase = clock.phase_of(unpredictable_starts_ns)
    counts = PhaseCounts(
        np.bincount(read_phase, minlength=n).astype(np.int64),
        np.bincount(bad_phase, minlength=n).astype(np.int64),
        [[] for _ in range(n)],
    )
    for phase, lag in zip(bad_phase.tolist(), lags_ns, strict=True):
        if lag is not None:
            counts.lags_ms[phase].append(lag / 1e6)
    if clock.bin_ns:
        counts.series_reads = _series(clock.bin_of(read_starts_ns))
        counts.series_unpredictable = _padded(
            _series(clock.bin_of(unpredictable_starts_ns)), len(counts.series_reads)
        )
    return counts
