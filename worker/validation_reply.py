"""A Validate call's two ends on the agent: the phase clock its request asks for, on the
logs' clock, and the load processes' summaries merged into its reply."""

import json
from collections import OrderedDict
from typing import TYPE_CHECKING

from bgbench.protos import worker_pb2 as pb
from bgbench.worker.contracts import ReadCounts, ValidateSummary, WriteVisibilityCounts
from bgbench.worker.replies import error

if TYPE_CHECKING:  # the agent imports these with its first Validate, not at start-up
    from bgbench.validation.phases import PhaseClock

RUN_ORIGINS_KEPT = 64  # the latest runs whose start a Validate may still map phases onto


class RunOrigins:
    """The start (monotonic ns) of the agent's latest runs, by experiment id: the origin of
    their progress's elapsed_seconds, on the clock of their log records."""

    def __init__(self) -> None:
        self._origins: OrderedDict[str, int] = OrderedDict()

    def note(self, experiment_id: str, origin_ns: int) -> None:
        self._origins[experiment_id] = origin_ns
        self._origins.move_to_end(experiment_id)
        while len(self._origins) > RUN_ORIGINS_KEPT:
            self._origins.popitem(last=False)

    def clock(self, request: pb.ValidateRequest) -> "PhaseClock | pb.Error | None":
        """The phases and bins the request asks for on the logs' clock; None when it asks
        for neither; an Error naming the field when they cannot be had."""
        if not request.phase_starts_s and not request.series_bin_s:
            return None
        from bgbench.validation.phases import PhaseClock, PhaseRequestError

        origin = self._origins.get(request.experiment_id)
        if origin is None:
            return error(
                "user",
                f"no run of experiment {request.experiment_id[:80]!r} on this agent to cut "
                "into phases (its start is kept for the latest runs only)",
                "phase_starts_s",
            )
        try:
            return PhaseClock.of_offsets(origin, request.phase_starts_s, request.series_bin_s)
        except PhaseRequestError as exc:
            return error("user", str(exc), exc.field)


def _sum_reads(parts: list[dict[str, ReadCounts]]) -> list[pb.ReadCount]:
    total: dict[str, pb.ReadCount] = {}
    for part in parts:
        for name, counts in part.items():
            row = total.setdefault(name, pb.ReadCount(name=name))
            row.reads += counts.reads
            row.unpredictable += counts.unpredictable
    return list(total.values())


def _sum_series(parts: list[list[int]]) -> list[int]:
    total = [0] * max((len(p) for p in parts), default=0)
    for part in parts:
        for i, n in enumerate(part):
            total[i] += n
    return total


def _phases(results: list[ValidateSummary]) -> list[pb.PhaseReads]:
    from bgbench.run_result.histograms import merged_or_empty

    count = max((len(r.phases) for r in results), default=0)
    rows = []
    for k in range(count):
        parts = [r.phases[k] for r in results if k < len(r.phases)]
        rows.append(
            pb.PhaseReads(
                reads=sum(p.reads for p in parts),
                unpredictable=sum(p.unpredictable for p in parts),
                lag_hist=merged_or_empty([p.lag_hist for p in parts]),
            )
        )
    return rows


def _visibility(results: list[ValidateSummary]) -> list[pb.WriteVisibility]:
    from bgbench.run_result.histograms import merged_or_empty

    rows: dict[tuple[str, str], list[WriteVisibilityCounts]] = {}
    for r in results:
        for v in r.visibility:
            rows.setdefault((v.action, v.item), []).append(v)
    return [
        pb.WriteVisibility(
            action=action,
            item=item,
            writes=sum(p.writes for p in parts),
            never=sum(p.never for p in parts),
            unread=sum(p.unread for p in parts),
            hist=merged_or_empty([p.hist for p in parts]),
        )
        for (action, item), parts in rows.items()
    ]


def merge_validations(results: list[ValidateSummary]) -> pb.ValidateReply:
    from bgbench.run_result.histograms import merged_or_empty
    from bgbench.run_result.run import payloads

    """The load processes' validations as the agent's one reply."""
    examples = [e for r in results for e in r.examples]
    series_reads = _sum_series([r.series_reads for r in results])
    series_unpredictable = _sum_series([r.series_unpredictable for r in results])
    series_unpredictable += [0] * (len(series_reads) - len(series_unpredictable))
    return pb.ValidateReply(
        lag_hist=merged_or_empty([r.lag_hist for r in results]),
        never_valid=sum(r.never_valid for r in results),
        reads=sum(r.reads for r in results),
        unpredictable_reads=sum(r.unpredictable_reads for r in results),
        sessions=sum(r.sessions for r in results),
        unpredictable_sessions=sum(r.unpredictable_sessions for r in results),
        writes=sum(r.writes for r in results),
        log_records=sum(r.log_records for r in results),
        seconds=max(r.seconds for r in results),
        by_item=_sum_reads([r.by_item for r in results]),
        by_action=_sum_reads([r.by_action for r in results]),
        examples_json=json.dumps(examples) if examples else "",
        workload_payload=payloads([r.workload_payload for r in results]),
        phases=_phases(results),
        series_reads=series_reads,
        series_unpredictable=series_unpredictable,
        visibility=_visibility(results),
    )
