"""Human-readable output of experiments and ratings (rich); the live progress view is
coordinator/reports/live.py."""

import json
from collections.abc import Mapping
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from bgbench.coordinator.configuration.config import Settings
from bgbench.coordinator.rating.bottleneck_of import bottleneck_of
from bgbench.coordinator.records.sweep import ALL_ACTIONS, SweepTable
from bgbench.coordinator.reports.live import LiveProgress as LiveProgress
from bgbench.coordinator.reports.report_scenario import render_scenario
from bgbench.coordinator.reports.report_transactions import of_result, transactions_table
from bgbench.coordinator.reports.report_visibility import visibility_table
from bgbench.resources.model import Bottleneck
from bgbench.run_result import ExperimentResult
from bgbench.sdk import StudyTable
from bgbench.workloads import registry

if TYPE_CHECKING:
    from bgbench.coordinator.rating.ratings import RatingSummary


def action_titles(settings: Settings) -> dict[str, str]:
    """Short action name -> its title, as the workload names them (VP -> View Profile)."""
    workload = registry.get(settings.workload.name)
    return {name: workload.action_titles.get(code, name) for code, name in workload.actions.items()}


def _ms(v: float) -> str:
    return f"{v:.2f}" if v < 100 else f"{v:.0f}"


def render(result: ExperimentResult, settings: Settings) -> Group:
    units = _units_table(result)
    transactions = transactions_table(of_result(result), action_titles(settings))
    return Group(
        _head(result, settings),
        _actions_table(result, settings),
        *([transactions] if transactions is not None else []),
        *([units] if units.row_count else []),
        _agents_table(result),
        *visibility_table([asdict(v) for v in result.visibility]),
        *([render_scenario(result.scenario)] if result.scenario is not None else []),
        _notes(result),
    )


def _head(result: ExperimentResult, settings: Settings) -> Text:
    sla = settings.sla
    head = Text()
    head.append(f"Experiment {result.experiment_id}", style="bold")
    head.append(f" on {result.store}\n")
    head.append(
        f"T={result.threads} threads over {len(result.agents)} agents, "
        f"{result.elapsed_s:.1f} s (asked {result.duration_s:g} s)\n"
    )
    if result.fault:
        head.append(f"INFRASTRUCTURE FAILURE (not an SLA verdict): {result.fault}\n", style="red")
    head.append(
        f"actions/s {result.actions_per_s:,.1f}   sessions/s {result.sessions_per_s:,.1f}   "
    )
    head.append(f"actions {result.actions:,}   sessions {result.sessions:,}   ")
    head.append(f"errors {result.errors:,}\n", style="red" if result.errors else "")
    head.append(
        f"latency: p50 {_ms(result.overall.p50_ms)} ms, p95 {_ms(result.overall.p95_ms)} ms, "
        f"p99 {_ms(result.overall.p99_ms)} ms, max {_ms(result.overall.max_ms)} ms; "
        f"{result.within_percent:.2f}% within {sla.beta_ms:g} ms\n"
    )
    head.append(
        f"unpredictable reads {result.unpredictable_percent:.3f}% "
        f"({result.unpredictable_reads:,} of {result.reads:,} reads)"
    )
    if result.unpredictable_reads:
        lag = result.lag
        head.append(
            f"; staleness lag p50 {_ms(lag.p50_ms)} ms, p95 {_ms(lag.p95_ms)} ms, "
            f"p99 {_ms(lag.p99_ms)} ms, max {_ms(lag.max_ms)} ms; "
            f"{result.never_valid:,} of a value never held"
        )
    head.append("\n")
    verdict = "PASS" if result.passed else "FAIL"
    head.append(
        f"SLA ({sla.alpha:g}% within {sla.beta_ms:g} ms, at most {sla.tau:g}% unpredictable, "
        f"judged per agent): ",
    )
    head.append(verdict, style="bold green" if result.passed else "bold red")
    return head


def bottleneck_said(b: Bottleneck) -> tuple[str, str]:
    """The bottleneck's line and its style: a client-bound experiment said loudly."""
    if b.client_bound:
        return f"CLIENT-BOUND: {b.text}", "bold red"
    return f"bottleneck: {b.text}", ""


def _actions_table(result: ExperimentResult, settings: Settings) -> Table:
    actions = Table(title="per action (response time = end - intended start)", title_justify="left")
    for col in ("action", "count", "errors", "p50 ms", "p95 ms", "p99 ms", "max ms", "≤ β %"):
        actions.add_column(col, justify="left" if col == "action" else "right")
    titles = action_titles(settings)
    for a in result.per_action:
        actions.add_row(
            f"{a.action} {titles.get(a.action, '')}".rstrip(),
            f"{a.count:,}",
            f"{a.errors:,}",
            _ms(a.response.p50_ms),
            _ms(a.response.p95_ms),
            _ms(a.response.p99_ms),
            _ms(a.response.max_ms),
            f"{a.within_percent:.2f}",
        )
    return actions


def _units_table(result: ExperimentResult) -> Table:
    units = Table(title="units of the mix played (actions and sessions)", title_justify="left")
    units.add_column("unit", justify="left")
    units.add_column("played", justify="right")
    for unit, n in sorted(getattr(result, "per_unit", {}).items(), key=lambda kv: -kv[1]):
        units.add_row(unit, f"{n:,}")
    return units


def _agents_table(result: ExperimentResult) -> Table:
    agents = Table(title="per agent (the SLA is judged on each)", title_justify="left")
    for col in (
        "agent", "T", "procs", "actions/s", "CPU %", "≤ β %", "unpredictable", "log records",
        "verdict",
    ):  # fmt: skip
        agents.add_column(col, justify="left" if col in ("agent", "verdict") else "right")
    for o in result.agents:
        cpu = f"{o.cpu_percent:.0f}" + ("*" if o.embedded_store else "")
        agents.add_row(
            o.address,
            str(o.threads),
            str(o.load_processes),
            f"{o.actions / o.elapsed_s:,.1f}" if o.elapsed_s else "-",
            cpu,
            f"{o.within_percent:.2f}",
            f"{o.unpredictable_reads:,}/{o.reads:,}",
            f"{o.log_records_written:,}",
            "pass" if o.passed else "fail: " + "; ".join(o.reasons or [o.aborted or "fault"]),
        )
    return agents


def _notes(result: ExperimentResult) -> Text:
    notes = Text()
    if any(o.embedded_store for o in result.agents):
        notes.append("* embedded store: the load processes' CPU includes the store's own work\n")
    for o in result.agents:
        for e in o.error_counts[:5]:
            notes.append(
                f"{o.address}: {e['count']} x {e['action']} {e['type']}: {e['sample']}\n",
                style="red",
            )
    return notes


# -- ratings ------------------------------------------------------------------------------


def experiment_line(phase: str, r: ExperimentResult, beta_ms: float) -> str:
    verdict = "pass" if r.passed else "FAIL"
    why = ""
    if r.fault:
        verdict, why = "FAULT", f" ({r.fault})"
    elif not r.passed:
        reasons = sorted({x.split(":")[0] for a in r.agents for x in a.reasons})
        why = f" ({', '.join(reasons)})"
    steady = ""
    if r.steady is not None and r.steady.cut:
        steady = f"  (warm-up {r.steady.warmup_s:.1f} s cut)"
    rate = f" R={r.target_rate:,.0f}/s" if r.target_rate else ""
    bound = r.bottleneck
    said = "" if bound is None else f"\n{'':>6} {bottleneck_said(bound)[0]}"
    return (
        f"{phase:>6} T={r.threads:<6}{rate} {r.duration_s:>5g} s  "
        f"{r.actions_per_s:>14,.1f} actions/s  "
        f"{r.within_percent:6.2f}% <= {beta_ms:g} ms  "
        f"{r.unpredictable_percent:.3f}% unpredictable  {verdict}{why}{steady}{said}"
    )


def _experiments_table(experiments: list[dict[str, Any]], settings: Settings) -> Table:
    t = Table(title="experiments, in the order they ran", title_justify="left")
    bounds = [_stored_bottleneck(e) for e in experiments]
    columns = ["#", "phase", "T", "s", "actions/s", "≤ β %", "unpredictable %", "verdict"]
    for col in [*columns, *(["bottleneck"] if any(bounds) else [])]:
        t.add_column(col, justify="left" if col in ("phase", "verdict", "bottleneck") else "right")
    for e, bound in zip(experiments, bounds, strict=True):
        verdict = e["status"] if e["status"] == "passed" else f"{e['status']}: {e['reasons']}"
        t.add_row(
            str(e["seq"]),
            e["phase"],
            str(e["threads"]),
            f"{e['duration_s']:g}",
            f"{e['actions_per_s']:,.1f}",
            f"{e['within_percent']:.2f}",
            f"{e['unpredictable_percent']:.3f}",
            verdict,
            *([bound] if any(bounds) else []),
        )
    return t


def _stored_bottleneck(e: Mapping[str, Any]) -> str:
    """A recorded experiment's bottleneck line ("" : none recorded, or a result that does
    not hold what bgbench writes)."""
    try:
        found = json.loads(e.get("result_json") or "{}").get("resources", {}).get("bottleneck")
        return bottleneck_said(bottleneck_of(found))[0] if isinstance(found, dict) else ""
    except (ValueError, TypeError, LookupError, AttributeError):
        return ""


def sweep_table(table: SweepTable, settings: Settings) -> Table:
    """One block of rows per thread count: its throughput over the repeats (mean, spread)
    and pooled unpredictable reads, then per action the mean of the repeats' average and
    95th-percentile latency (response time), the last row all actions together."""
    t = Table(
        title=f"thread sweep: each T run {table.repeats} times for {table.duration_s:g} s, "
        "averaged",
        title_justify="left",
    )
    for col in ("T", "actions/s", "min", "max", "stdev", "unpredictable %", "action", "count",
                "avg ms", "p95 ms"):  # fmt: skip
        t.add_column(col, justify="left" if col == "action" else "right")
    titles = action_titles(settings)
    for row in table.rows:
        head = [
            str(row.threads),
            f"{row.actions_per_s:,.1f}",
            f"{row.actions_per_s_min:,.1f}",
            f"{row.actions_per_s_max:,.1f}",
            f"{row.actions_per_s_stdev:,.1f}",
            f"{row.unpredictable_percent:.3f}",
        ]
        for i, a in enumerate(row.actions):
            name = a.action if a.action == ALL_ACTIONS else f"{a.action} {titles.get(a.action, '')}"
            t.add_row(
                *(head if i == 0 else [""] * len(head)),
                name.rstrip(),
                f"{a.count:,}",
                _ms(a.mean_ms),
                _ms(a.p95_ms),
                end_section=i == len(row.actions) - 1,
            )
    return t


def _sweep_head(summary: "RatingSummary", table: SweepTable) -> Text:
    head = Text()
    head.append(f"Thread sweep {summary.rating_id}", style="bold")
    head.append(f" of {summary.store}\n")
    ran = ", ".join(str(r.threads) for r in table.rows)
    head.append(
        f"T = {ran}, each {table.repeats} times for {table.duration_s:g} s (Klein et al.: "
        "averaged over the repeats; unpredictable reads pooled); no SLA search, each "
        "experiment's verdict is recorded\n"
    )
    head.append(
        f"experiments: {summary.experiments_unique} unique of {summary.experiments_requested} "
        f"requested; {summary.experiments_run_now} run in this session\n"
    )
    for note in summary.notes:
        head.append(note + "\n")
    return head


def render_sweep(table: SweepTable, settings: Settings, title: str = "") -> Group:
    """A recorded sweep's table alone (bgbench results sweep)."""
    head = Text(title + "\n" if title else "")
    for line in table.clipped:
        head.append(line + "\n")
    return Group(head, sweep_table(table, settings))


def render_rating(
    summary: "RatingSummary", experiments: list[dict[str, Any]], settings: Settings
) -> Group:
    sla = settings.sla
    if summary.sweep is not None:
        table = summary.sweep
        return Group(
            _sweep_head(summary, table),
            sweep_table(table, settings),
            _experiments_table(experiments, settings),
        )
    head = Text()
    head.append(f"Rating {summary.rating_id}", style="bold")
    head.append(f" of {summary.store} ({summary.objective})\n")
    head.append(
        f"SLA: {sla.alpha:g}% of {sla.latency_scope}s within {sla.beta_ms:g} ms, at most "
        f"{sla.tau:g}% unpredictable reads, per worker; searched at "
        f"{summary.search_duration_s:g} s, final at {summary.final_duration_s:g} s\n"
    )
    if summary.soar is not None:
        head.append(
            f"SoAR {summary.soar:,.1f}{soar_interval(summary)} actions/s", style="bold green"
        )
        if summary.over == "rate":
            head.append(f" at {summary.soar_rate or 0:,.0f} arrivals/s, T={summary.soar_threads}")
        else:
            head.append(f" at T={summary.soar_threads}")
        if summary.final_soar:
            head.append(f"  ({summary.final_soar.note})")
        head.append("\n")
    if summary.socialites is not None:
        head.append(f"Socialites {summary.socialites}", style="bold green")
        low, high = summary.socialites_low, summary.socialites_high
        if low is not None and high is not None and (low, high) != (summary.socialites,) * 2:
            head.append(
                f" (uncertain between {low} and {high}: verdicts at T="
                f"{', '.join(map(str, summary.uncertain_threads))} stayed unclear)"
            )
        if summary.final_socialites:
            head.append(f"  ({summary.final_socialites.note})")
        head.append("\n")
    head.append(
        f"experiments: {summary.experiments_unique} unique of {summary.experiments_requested} "
        f"requested, {summary.experiments_repeated} repeated runs (for clear verdicts, and "
        "the finals' own runs); "
        f"{summary.experiments_run_now} run in this session\n"
    )
    for note in summary.notes:
        head.append(note + "\n")
    transactions = transactions_table(summary.transactions, action_titles(settings))
    shown = [transactions] if transactions is not None else []
    return Group(head, *shown, _experiments_table(experiments, settings))


def soar_interval(summary: "RatingSummary") -> str:
    """' ± h (c% CI low..high)' when the rating has an interval for SoAR."""
    low, high, c = summary.soar_low, summary.soar_high, summary.confidence
    if summary.soar is None or c is None:
        return ""
    if low is None or high is None:
        return f" (no {100 * c:g}% interval: too few samples)"
    return f" ± {(high - low) / 2:,.1f} ({100 * c:g}% CI {low:,.1f}..{high:,.1f})"


def render_ratings(rows: list[dict[str, Any]]) -> Table:
    t = Table(title="ratings", title_justify="left")
    for col in ("id", "created", "status", "store", "SoAR", "at T", "Socialites", "experiments"):
        t.add_column(col)
    for r in rows:
        t.add_row(
            r["id"],
            r["created"],
            r["status"],
            r["store"],
            f"{r['soar']:,.1f}" if r["soar"] is not None else "-",
            str(r["soar_threads"]) if r["soar_threads"] is not None else "-",
            str(r["socialites"]) if r["socialites"] is not None else "-",
            str(r["runs"]),
        )
    return t


def render_record(
    record: dict[str, Any], experiments: list[dict[str, Any]], settings: Settings
) -> Group:
    head = Text()
    head.append(f"Rating {record['id']}", style="bold")
    head.append(f" ({record['status']}) of {record['store']}, created {record['created']}\n")
    if record["soar"] is not None:
        head.append(f"SoAR {record['soar']:,.1f} actions/s at T={record['soar_threads']}\n")
    if record["socialites"] is not None:
        head.append(f"Socialites {record['socialites']}\n")
    if record["message"]:
        head.append(f"{record['message']}\n", style="red")
    summary = json.loads(record["summary_json"] or "null")
    if summary and summary.get("tables"):
        return Group(head, *study_tables([StudyTable(**t) for t in summary["tables"]]))
    if summary and summary.get("sweep"):
        table = sweep_table(SweepTable.from_dict(summary["sweep"]), settings)
        return Group(head, table, _experiments_table(experiments, settings))
    return Group(head, _experiments_table(experiments, settings))


def render_validation(d: dict[str, Any]) -> Group:
    head = Text()
    head.append(f"Validation of {d['directory']}", style="bold")
    head.append(f" ({d['source']} logs, {d['logs']} files")
    if d.get("experiments_validated"):
        head.append(f", {d['experiments_validated']} experiments")
    head.append(")\n")
    for u in d.get("unfinished", []):
        head.append(f"skipped, never closed: {u['log']}\n", style="yellow")
    head.append(
        f"{d['records']:,} records in {d['seconds']:.2f} s "
        f"({(d['records_per_s'] or 0):,.0f} records/s) in {d['engine']}, "
        f"{d['parts']} parts on {d['workers']} workers\n"
    )
    head.append(
        f"unpredictable reads {d['unpredictable_percent']:.3f}% "
        f"({d['unpredictable_reads']:,} of {d['reads']:,}; {d['writes']:,} writes); "
        f"sessions {d['unpredictable_sessions']:,} of {d['sessions']:,}\n"
    )
    lag = d["lag"]
    if lag["max_ms"] is not None:
        head.append(
            f"staleness lag p50 {lag['p50_ms']:.3f} ms, p95 {lag['p95_ms']:.3f} ms, "
            f"p99 {lag['p99_ms']:.3f} ms, max {lag['max_ms']:.3f} ms; "
        )
    head.append(f"{d['never_valid']:,} reads of a value the item never held\n")
    if d["malformed_lines"]:
        head.append(f"{d['malformed_lines']} malformed lines, not validated:\n", style="red")
        for line in d["malformed"][:20]:
            head.append(f"  {line}\n", style="red")
    table = Table(title="per item kind and action", title_justify="left")
    for col in ("", "name", "reads", "unpredictable"):
        table.add_column(col, justify="right" if col in ("reads", "unpredictable") else "left")
    for group in ("by_item", "by_action"):
        for name, v in d[group].items():
            table.add_row(group[3:], name, f"{v['reads']:,}", f"{v['unpredictable']:,}")
    return Group(head, table, *visibility_table(d.get("visibility", [])))


def _cell(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return "" if value is None else str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if value == 0:
            return "0"
        if abs(value) >= 1000 or value.is_integer():
            return f"{value:,.0f}"
        return f"{value:.4f}" if abs(value) < 1 else f"{value:.2f}"
    return str(value)


def study_tables(tables: list[StudyTable]) -> list[Any]:
    """A study's tables (workloads/api.StudyTable) as rich tables, their notes below."""
    out: list[Any] = []
    for t in tables:
        table = Table(title=t.title, title_justify="left")
        for col in t.columns:
            table.add_column(col, justify="left" if col in ("plan", "notes") else "right")
        for row in t.rows:
            table.add_row(*(_cell(row.get(col)) for col in t.columns))
        out.append(table)
        for note in t.notes:
            out.append(Text(note))
    return out
