"""Klein et al.'s thread sweep: a fixed list of thread counts, each run N times, averaged.

Pure parts of the `sweep` rating objective: the list clipped to what can run here (a
reason for every value left out), the figures a sweep reads from one experiment's
result (live, or recorded in the results store), and the table their averages make.
The paper reports each configuration as the average of its runs, so the table does the
same: mean throughput (with its spread), and per action the mean of the runs' average
latencies and of their 95th percentiles. Unpredictable reads are pooled over the runs
(a percentage of few reads is noise; their sum is not).
"""

import csv
import json
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bgbench.errors import UserError

PHASE = "sweep"  # what a sweep's experiments are recorded as
ALL_ACTIONS = "all"  # the row of every action pooled (the experiment's overall latency)


@dataclass(frozen=True)
class Limits:
    """What bounds T here: one thread per fragment at least, one socialite per entity at
    most (None: no such bound, the model store), and rating.max_threads if set."""

    floor: int
    fit: int | None
    setting: int | None
    scale: str  # the workload's size setting, named in the reason


@dataclass(frozen=True)
class Plan:
    threads: list[int]  # to run, in the order listed
    clipped: list[str]  # one line per value left out, with its reason


def clip(requested: list[int], limits: Limits) -> Plan:
    threads: list[int] = []
    clipped: list[str] = []
    for t in requested:
        if t < limits.floor:
            clipped.append(
                f"sweep: T={t} not run: fewer threads than the {limits.floor} fragments (one "
                "thread each at least); fewer agents or load processes (--agents, "
                "--processes) let it run"
            )
        elif limits.fit is not None and t > limits.fit:
            clipped.append(
                f"sweep: T={t} not run: at most {limits.fit} threads fit in this database (one "
                f"socialite per entity of a fragment); raise {limits.scale} (--users) to run it"
            )
        elif limits.setting is not None and t > limits.setting:
            clipped.append(f"sweep: T={t} not run: above rating.max_threads={limits.setting}")
        else:
            threads.append(t)
    if not threads:
        tops = [x for x in (limits.fit, limits.setting) if x is not None]
        span = f"from {limits.floor}" + (f" to {min(tops)}" if tops else "")
        raise UserError(
            f"invalid config: rating.sweep_threads: none of {requested} can run here; "
            f"list thread counts {span}"
        )
    return Plan(threads, clipped)


@dataclass(frozen=True)
class ActionSample:
    count: int
    mean_ms: float
    p95_ms: float


@dataclass(frozen=True)
class Sample:
    """What the sweep reads from one experiment's result."""

    threads: int
    actions_per_s: float
    passed: bool
    reads: int
    unpredictable_reads: int
    actions: dict[str, ActionSample]  # by action name, and ALL_ACTIONS


def _action(latency: Mapping[str, Any]) -> ActionSample:
    return ActionSample(int(latency["count"]), latency["mean_ms"], latency["p95_ms"])


def sample_of(result: Mapping[str, Any]) -> Sample:
    """A result as ExperimentResult serialises (asdict, or the store's result_json).
    Latency is the response time (end - intended start), as the SLA judges it."""
    actions = {a["action"]: _action(a["response"]) for a in result["per_action"]}
    actions[ALL_ACTIONS] = _action(result["overall"])
    return Sample(
        threads=int(result["threads"]),
        actions_per_s=float(result["actions_per_s"]),
        passed=bool(result["passed"]),
        reads=int(result["reads"]),
        unpredictable_reads=int(result["unpredictable_reads"]),
        actions=actions,
    )


def recorded(
    experiments: Iterable[Mapping[str, Any]], duration_s: float
) -> dict[int, list[Sample]]:
    """A rating's finished sweep experiments at `duration_s`, by T in the order they ran:
    the k-th of T is its repeat k (a fault is not a repeat: it runs again)."""
    out: dict[int, list[Sample]] = {}
    for e in experiments:
        if e["phase"] != PHASE or e["status"] == "fault" or e["duration_s"] != duration_s:
            continue
        out.setdefault(int(e["threads"]), []).append(sample_of(json.loads(e["result_json"])))
    return out


@dataclass
class ActionRow:
    action: str
    runs: int  # repeats in which it ran
    count: int  # actions over those repeats
    mean_ms: float  # mean of the repeats' average latency
    p95_ms: float  # mean of the repeats' 95th percentile


@dataclass
class SweepRow:
    threads: int
    repeats: int
    passed: int  # repeats that met the SLA (recorded; the sweep does not judge)
    actions_per_s: float  # mean over the repeats
    actions_per_s_min: float
    actions_per_s_max: float
    actions_per_s_stdev: float  # sample standard deviation (0 for one repeat)
    reads: int
    unpredictable_reads: int
    unpredictable_percent: float  # pooled: all repeats' unpredictable reads over their reads
    actions: list[ActionRow] = field(default_factory=list)


@dataclass
class SweepTable:
    duration_s: float
    repeats: int
    requested: list[int]
    clipped: list[str]
    rows: list[SweepRow] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "SweepTable":
        rows = [
            SweepRow(**{**r, "actions": [ActionRow(**a) for a in r["actions"]]})
            for r in data["rows"]
        ]
        return cls(
            duration_s=data["duration_s"],
            repeats=data["repeats"],
            requested=list(data["requested"]),
            clipped=list(data["clipped"]),
            rows=rows,
        )


def _mean(values: list[float]) -> float:
    return statistics.fmean(values) if values else 0.0


def row_of(threads: int, samples: list[Sample]) -> SweepRow:
    """The averages of one thread count's repeats."""
    rates = [s.actions_per_s for s in samples]
    reads = sum(s.reads for s in samples)
    bad = sum(s.unpredictable_reads for s in samples)
    names = [n for s in samples for n in s.actions if n != ALL_ACTIONS]
    ordered = [*dict.fromkeys(names), ALL_ACTIONS]  # first seen first, the pooled row last
    actions = []
    for name in ordered:
        # An action a repeat never ran has no latency there: averaged over those it ran in.
        ran = [s.actions[name] for s in samples if name in s.actions and s.actions[name].count]
        actions.append(
            ActionRow(
                action=name,
                runs=len(ran),
                count=sum(a.count for a in ran),
                mean_ms=_mean([a.mean_ms for a in ran]),
                p95_ms=_mean([a.p95_ms for a in ran]),
            )
        )
    return SweepRow(
        threads=threads,
        repeats=len(samples),
        passed=sum(s.passed for s in samples),
        actions_per_s=_mean(rates),
        actions_per_s_min=min(rates, default=0.0),
        actions_per_s_max=max(rates, default=0.0),
        actions_per_s_stdev=statistics.stdev(rates) if len(rates) > 1 else 0.0,
        reads=reads,
        unpredictable_reads=bad,
        unpredictable_percent=100.0 * bad / reads if reads else 0.0,
        actions=actions,
    )


def tabulate(
    plan: Plan,
    requested: list[int],
    repeats: int,
    duration_s: float,
    samples: Mapping[int, list[Sample]],
) -> SweepTable:
    rows = [row_of(t, list(samples.get(t, []))) for t in plan.threads]
    return SweepTable(duration_s, repeats, list(requested), list(plan.clipped), rows)


CSV_COLUMNS = (
    "threads", "repeats", "passed", "actions_per_s", "actions_per_s_min", "actions_per_s_max",
    "actions_per_s_stdev", "reads", "unpredictable_reads", "unpredictable_percent", "action",
    "runs", "count", "mean_ms", "p95_ms",
)  # fmt: skip


def csv_rows(table: SweepTable) -> list[dict[str, Any]]:
    """One row per thread count and action (the thread count's figures repeated)."""
    out = []
    for row in table.rows:
        head = {k: v for k, v in asdict(row).items() if k != "actions"}
        out += [{**head, **asdict(a)} for a in row.actions]
    return out


def write_csv(table: SweepTable, path: Path) -> int:
    rows = csv_rows(table)
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    return len(rows)
