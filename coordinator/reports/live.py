"""The live per-agent progress view of the console while an experiment runs (stderr)."""

import time

from hdrh.histogram import HdrHistogram
from rich.console import Console
from rich.live import Live
from rich.table import Table

from bgbench.coordinator.records.metrics import decode, percentile
from bgbench.protos import new_histogram
from bgbench.protos import worker_pb2 as pb


class LiveProgress:
    """Live per-agent view while an experiment runs (stderr, refreshed by rich).

    Agents ship each interval's latencies as an HDR histogram; merging them is exact, so
    the cumulative p95 shown equals the p95 of every sample pooled so far."""

    def __init__(self, addresses: list[str], duration_s: float, console: Console) -> None:
        self.addresses = addresses
        self.duration_s = duration_s
        self.latest: dict[int, pb.Progress] = {}
        self.previous: dict[int, tuple[float, int]] = {}
        self.rates: dict[int, float] = {}
        self.interval_p95: dict[int, float] = {}
        self.cumulative = [new_histogram() for _ in addresses]
        self.started = time.monotonic()
        self.live = Live(self._table(), console=console, refresh_per_second=2, transient=True)

    def update(self, i: int, progress: pb.Progress) -> None:
        prev = self.previous.get(i)
        if prev and progress.elapsed_seconds > prev[0]:
            self.rates[i] = (progress.actions - prev[1]) / (progress.elapsed_seconds - prev[0])
        self.previous[i] = (progress.elapsed_seconds, progress.actions)
        self.latest[i] = progress
        if progress.response_hist_delta:
            delta = decode(progress.response_hist_delta)
            self.cumulative[i].add(delta)
            self.interval_p95[i] = percentile(delta, 95) / 1000
        self.live.update(self._table())

    def pooled(self) -> HdrHistogram:
        h = new_histogram()
        for c in self.cumulative:
            h.add(c)
        return h

    def _table(self) -> Table:
        elapsed = time.monotonic() - self.started
        t = Table(title=f"running: {elapsed:.0f} / {self.duration_s:g} s", title_justify="left")
        for col in ("agent", "actions", "actions/s", "p95 ms (0.5 s)", "p95 ms (all)", "errors",
                    "CPU %", "health"):  # fmt: skip
            t.add_column(col, justify="left" if col in ("agent", "health") else "right")
        now = time.monotonic()
        for i, addr in enumerate(self.addresses):
            p = self.latest.get(i)
            if p is None:
                t.add_row(addr, "-", "-", "-", "-", "-", "-", "waiting")
                continue
            seen = self.started + p.elapsed_seconds
            health = "ok" if now - seen < 2.5 else f"silent {now - seen:.0f} s"
            t.add_row(
                addr,
                f"{p.actions:,}",
                f"{self.rates.get(i, 0):,.0f}",
                f"{self.interval_p95.get(i, 0):.2f}",
                f"{percentile(self.cumulative[i], 95) / 1000:.2f}",
                f"{p.errors:,}",
                f"{p.cpu_percent:.0f}",
                health,
            )
        pooled = self.pooled()
        if pooled.get_total_count():
            t.add_row("all", f"{pooled.get_total_count():,}", f"{sum(self.rates.values()):,.0f}",
                      "", f"{percentile(pooled, 95) / 1000:.2f}", "", "", "")  # fmt: skip
        return t

    def __enter__(self) -> "LiveProgress":
        self.live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.live.__exit__(*exc)  # type: ignore[arg-type]
