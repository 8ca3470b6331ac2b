"""SLA verdicts; the histogram figures they judge come from bgbench.run_result.histograms."""

from dataclasses import dataclass

import numpy as np
from hdrh.histogram import HdrHistogram

from bgbench.coordinator.configuration.config import SLAConfig
from bgbench.protos import new_histogram as new_histogram
from bgbench.resources.model import ResourceFigures
from bgbench.run_result.histograms import LatencySummary as LatencySummary
from bgbench.run_result.histograms import counts_of, medians
from bgbench.run_result.histograms import decode as decode
from bgbench.run_result.histograms import mean as mean
from bgbench.run_result.histograms import percentile as percentile
from bgbench.run_result.histograms import share_within as share_within


@dataclass
class Verdict:
    passed: bool
    reasons: list[str]


def judge(
    within_percent: float,
    unpredictable_percent: float,
    errors: int,
    saturated: bool,
    sla: SLAConfig,
) -> Verdict:
    """One worker's verdict (paper section G): latency and staleness, plus honest failures."""
    reasons = []
    if within_percent < sla.alpha:
        what = "actions" if sla.latency_scope == "action" else "sessions"
        reasons.append(
            f"latency: {within_percent:.2f}% of {what} within {sla.beta_ms:g} ms < {sla.alpha:g}%"
        )
    if unpredictable_percent > sla.tau:
        reasons.append(
            f"staleness: {unpredictable_percent:.3f}% unpredictable reads > {sla.tau:g}%"
        )
    if errors:
        reasons.append(f"errors: {errors} actions failed")
    if saturated:
        reasons.append("saturated client: a load process used its whole core")
    return Verdict(not reasons, reasons)


def client_bound_reason(resources: ResourceFigures | None, sla: SLAConfig) -> str:
    """Why an experiment bound by the client fails under sla.client_bound = "fail" ("":
    it does not fail for it; "warn" flags it in the result and the headline only)."""
    if sla.client_bound != "fail" or resources is None:
        return ""
    bottleneck = resources.bottleneck
    return f"client-bound: {bottleneck.text}" if bottleneck.client_bound else ""


def distribution(h: HdrHistogram) -> tuple[np.ndarray, np.ndarray]:
    """The recorded values' distribution: each non-empty bucket's median value and its
    count (for plotting a histogram)."""
    if h.get_total_count() == 0:
        return np.zeros(0), np.zeros(0)
    middle = medians(h.counts_len)
    counts = counts_of(h)
    used = counts > 0
    return middle[used], counts[used]
