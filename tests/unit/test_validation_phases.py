"""Reads per phase and per time bin (validation/phases.py), on logs with known answers: each
read counts in the phase its start falls in, its lag in that phase, its start's bin in the
series; the phases add up to the whole run however the validation is split."""

import numpy as np
import pytest

from bgbench.coordinator.execution.agent_checks import AgentFault, check_validation
from bgbench.protos import worker_pb2 as pb
from bgbench.validation import runner as validation_runner
from bgbench.validation.checker import InitialValues, validate
from bgbench.validation.logformat import READ, RECORD_DTYPE, WRITE_ABS
from bgbench.validation.phases import (
    MAX_BINS,
    PhaseClock,
    PhaseCounts,
    PhaseRequestError,
    count_reads,
)
from bgbench.validation.synthetic import synthetic_logs
from bgbench.worker.contracts import PhaseReadCounts, ValidateSummary
from bgbench.worker.measurement import is_timeout
from bgbench.worker.validation_reply import merge_validations

S = 1_000_000_000  # ns
ORIGIN = 10 * S


def at(seconds: float) -> int:
    return round(seconds * S)


def log(rows: list[tuple[int, float, float, int]]) -> np.ndarray:
    """(kind, start s, end s, value) of item kind 0, id 1, one thread, in start order."""
    out = np.zeros(len(rows), dtype=RECORD_DTYPE)
    for i, (kind, start, end, value) in enumerate(rows):
        out[i] = (kind, 0, 0, 0, 1, at(start), at(end), value, i)
    return out


INITIAL = InitialValues({0: (np.array([1], dtype=np.int64), np.array([0], dtype=np.int64))})
# Phases begin 2 s and 4 s after the run's start (10 s on the log's clock); 1 s bins.
CLOCK = PhaseClock.of_offsets(ORIGIN, [2.0, 4.0], 1.0)
LOG = log(
    [
        (WRITE_ABS, 10.1, 10.2, 5),
        (READ, 10.5, 10.6, 5),  # phase 0, bin 0: valid
        (WRITE_ABS, 11.0, 11.1, 7),
        (READ, 11.9, 12.3, 7),  # begins in phase 0, ends in phase 1: phase 0; bin 1
        (READ, 12.5, 12.6, 5),  # phase 1, bin 2: stale, 5 stopped holding at 11.1: 1.4 s
        (READ, 13.0, 13.1, 5),  # phase 1, bin 3: stale by 1.9 s
        (READ, 14.0, 14.1, 7),  # at phase 2's very start: phase 2, bin 4
        (READ, 14.5, 14.6, 99),  # phase 2, bin 4: a value never held (no lag)
    ]
)


def test_each_read_counts_in_the_phase_and_bin_its_start_falls_in():
    result = validate(LOG, INITIAL, clock=CLOCK)
    assert (result.reads, result.unpredictable_reads, result.never_valid) == (6, 3, 1)
    phases = result.phases
    assert phases is not None
    assert phases.reads.tolist() == [2, 2, 2]
    assert phases.unpredictable.tolist() == [0, 2, 1]
    assert phases.lags_ms[0] == [] and phases.lags_ms[2] == []
    assert phases.lags_ms[1] == pytest.approx([1400.0, 1900.0])
    assert phases.series_reads.tolist() == [1, 1, 1, 1, 2]
    assert phases.series_unpredictable.tolist() == [0, 0, 1, 1, 1]


def test_without_a_clock_there_are_no_phases():
    assert validate(LOG, INITIAL).phases is None


def test_a_log_without_reads_has_empty_phases():
    writes_only = LOG[LOG["kind"] == WRITE_ABS]
    phases = validate(writes_only, INITIAL, clock=CLOCK).phases
    assert phases is not None
    assert phases.reads.tolist() == [0, 0, 0] and phases.unpredictable.tolist() == [0, 0, 0]
    assert len(phases.series_reads) == 0


def test_offsets_map_onto_the_logs_clock_from_the_run_start():
    assert CLOCK.phase_starts_ns == (12 * S, 14 * S)
    assert CLOCK.bin_ns == S and CLOCK.phases == 3
    starts = np.array([0, ORIGIN, 12 * S - 1, 12 * S, 14 * S - 1, 14 * S, 99 * S])
    assert CLOCK.phase_of(starts).tolist() == [0, 0, 0, 1, 1, 2, 2]
    # before the run's start: phase 0 and bin 0
    assert CLOCK.bin_of(starts).tolist() == [0, 0, 1, 2, 3, 4, 89]
    assert PhaseClock.of_offsets(ORIGIN, [], 0.0).bin_of(starts).tolist() == [-1] * 7


def test_count_reads_attributes_lags_to_the_unpredictable_reads_phases():
    clock = PhaseClock(origin_ns=0, phase_starts_ns=(100,), bin_ns=50)
    reads = np.array([10, 60, 99, 100, 140, 260])
    bad = np.array([60, 100, 260])
    counts = count_reads(clock, reads, bad, [5_000_000, None, 2_000_000])
    assert counts.reads.tolist() == [3, 3]
    assert counts.unpredictable.tolist() == [1, 2]
    assert counts.lags_ms == [[5.0], [2.0]]
    assert counts.series_reads.tolist() == [1, 2, 2, 0, 0, 1]
    assert counts.series_unpredictable.tolist() == [0, 1, 1, 0, 0, 1]


def test_reads_beyond_the_last_bin_count_in_their_phase_but_in_no_bin():
    clock = PhaseClock(origin_ns=0, phase_starts_ns=(), bin_ns=1)
    reads = np.array([0, MAX_BINS - 1, MAX_BINS, 10 * MAX_BINS])
    counts = count_reads(clock, reads, reads[2:], [None, None])
    assert counts.reads.tolist() == [4] and counts.unpredictable.tolist() == [2]
    assert len(counts.series_reads) == MAX_BINS
    assert int(counts.series_reads.sum()) == 2
    assert int(counts.series_unpredictable.sum()) == 0


def test_phase_counts_merge_padding_the_shorter_series():
    a = count_reads(PhaseClock(0, (100,), 10), np.array([5, 150]), np.array([150]), [1_000_000])
    b = count_reads(PhaseClock(0, (100,), 10), np.array([7, 8, 9]), np.array([8]), [None])
    merged = PhaseCounts.empty(2)
    merged.merge(a)
    merged.merge(b)
    assert merged.reads.tolist() == [4, 1] and merged.unpredictable.tolist() == [1, 1]
    assert merged.lags_ms == [[], [1.0]]
    assert merged.series_reads.tolist() == [4] + [0] * 14 + [1]
    assert merged.series_unpredictable.tolist() == [1] + [0] * 14 + [1]
    with pytest.raises(ValueError, match="3 phases merged into 2"):
        merged.merge(PhaseCounts.empty(3))


def test_phases_add_up_to_the_totals_however_the_validation_is_split(monkeypatch):
    records, initial = synthetic_logs(60_000, items=2_000, stale_share=0.05, seed=7)
    origin = int(records["start"].min())
    span_s = (int(records["start"].max()) - origin) / S
    clock = PhaseClock.of_offsets(origin, [span_s / 3, 2 * span_s / 3], span_s / 20)
    whole = validate(records, initial, clock=clock)
    monkeypatch.setattr(validation_runner, "PART_RECORDS", 7_000)  # split by item into parts
    split = validation_runner.validate_in_memory(records, initial, workers=1, clock=clock)
    for result in (whole, split):
        phases = result.phases
        assert phases is not None
        assert int(phases.reads.sum()) == result.reads > 0
        assert int(phases.unpredictable.sum()) == result.unpredictable_reads > 0
        assert sum(len(lags) for lags in phases.lags_ms) == len(result.lags_ms)
        assert int(phases.series_reads.sum()) == result.reads
        assert 19 <= len(phases.series_reads) <= 21
    assert whole.phases is not None and split.phases is not None
    assert whole.phases.reads.tolist() == split.phases.reads.tolist()
    assert whole.phases.unpredictable.tolist() == split.phases.unpredictable.tolist()
    assert whole.phases.series_reads.tolist() == split.phases.series_reads.tolist()
    assert sorted(x for lags in whole.phases.lags_ms for x in lags) == pytest.approx(
        sorted(x for lags in split.phases.lags_ms for x in lags)
    )
    # about a third of the reads in each phase: the run is cut where it was asked to be
    assert all(abs(n - result.reads / 3) < result.reads / 10 for n in whole.phases.reads)


@pytest.mark.parametrize(
    ("starts", "bin_s", "field", "why"),
    [
        ([1.0, float("nan")], 0.0, "phase_starts_s", r"phase_starts_s\[1\]: nan is not a finite"),
        ([-1.0], 0.0, "phase_starts_s", "is not a finite offset >= 0"),
        ([5.0, 2.0], 0.0, "phase_starts_s", "comes before the previous start"),
        ([0.5] * 1001, 0.0, "phase_starts_s", "1001 phase starts, at most 1000"),
        ([], 0.0001, "series_bin_s", "neither 0 .no series. nor a width >= 0.001 s"),
        ([], float("inf"), "series_bin_s", "series_bin_s: inf"),
    ],
)
def test_phase_starts_and_bins_that_cannot_cut_a_run_are_refused(starts, bin_s, field, why):
    with pytest.raises(PhaseRequestError, match=why) as caught:
        PhaseClock.of_offsets(ORIGIN, starts, bin_s)
    assert caught.value.field == field


def _summary(phases: list[PhaseReadCounts], series: list[int], bad: list[int]) -> ValidateSummary:
    return ValidateSummary(
        fragment=0,
        reads=sum(p.reads for p in phases),
        unpredictable_reads=sum(p.unpredictable for p in phases),
        writes=0,
        sessions=0,
        unpredictable_sessions=0,
        log_records=0,
        seconds=0.1,
        by_item={},
        by_action={},
        examples=[],
        never_valid=0,
        lag_hist=b"",
        phases=phases,
        series_reads=series,
        series_unpredictable=bad,
    )


def test_the_agent_adds_its_load_processes_phases_and_bins():
    reply = merge_validations(
        [
            _summary([PhaseReadCounts(3, 1, b""), PhaseReadCounts(2, 0, b"")], [5], [1]),
            _summary(
                [PhaseReadCounts(1, 0, b""), PhaseReadCounts(4, 2, b"")], [1, 2, 2], [0, 0, 2]
            ),
        ]
    )
    assert [(p.reads, p.unpredictable) for p in reply.phases] == [(4, 1), (6, 2)]
    assert list(reply.series_reads) == [6, 2, 2]
    assert list(reply.series_unpredictable) == [1, 0, 2]
    assert (reply.reads, reply.unpredictable_reads) == (10, 3)


@pytest.mark.parametrize(
    ("name", "timeout"),
    [
        ("TimeoutError", True),
        ("ReadTimeout", True),
        ("OperationTimedOut", True),
        ("WriteTimeoutException", True),
        ("ConnectionRefusedError", False),
        ("OperationalError", False),
    ],
)
def test_errors_count_as_timeouts_by_their_type_name(name, timeout):
    assert is_timeout(name) is timeout


def _reply(phases: list[tuple[int, int]], series: list[int], bad: list[int]) -> pb.ValidateReply:
    return pb.ValidateReply(
        reads=sum(n for n, _ in phases),
        unpredictable_reads=sum(u for _, u in phases),
        phases=[pb.PhaseReads(reads=n, unpredictable=u) for n, u in phases],
        series_reads=series,
        series_unpredictable=bad,
    )


def test_the_coordinator_takes_phases_that_add_up_and_refuses_the_rest():
    check_validation("a:1", _reply([(4, 1), (6, 2)], [6, 4], [1, 2]), 2)
    check_validation("a:1", _reply([], [], []), 0)
    broken = [
        (_reply([(4, 1), (6, 2)], [], []), 3, "validation phases: 2 for 3 asked"),
        (_reply([(4, 5)], [], []), 1, "validation phase unpredictable: 5, not 0 to 4"),
        (_reply([(4, 1)], [3, 1], [1]), 1, "series_unpredictable: 1 bins for 2 of reads"),
        (_reply([(4, 1)], [3, 9], [1, 0]), 1, "series_reads: 12, not 0 to 4"),
        (_reply([(4, 1)], [1] * (MAX_BINS + 1), [0] * (MAX_BINS + 1)), 1, "7201 entries"),
    ]
    for reply, asked, why in broken:
        with pytest.raises(AgentFault, match=why):
            check_validation("a:1", reply, asked)
    uneven = _reply([(4, 1), (6, 2)], [], [])
    uneven.reads = 11
    with pytest.raises(AgentFault, match="phases reads: 10 in all, where the run has 11"):
        check_validation("a:1", uneven, 2)
