"""The figures derived from a transaction's tallies (run_result/transactions.py) and where
they are shown: the experiment's JSON, the per_action frame's columns, the rating's
summary, the console and the comparison; an agent's tallies are bounded like its other
counts."""

import json

import pytest
from rich.console import Console

from bgbench.coordinator.execution.agent_checks import AgentFault, check_result
from bgbench.coordinator.rating.ratings import RatingSummary
from bgbench.coordinator.rating.transactions_of import final_transactions
from bgbench.coordinator.reports.compare import transaction_rows
from bgbench.coordinator.reports.report_transactions import transactions_table
from bgbench.protos import new_histogram
from bgbench.run_result import ActionFigures, ActionStats, RunResult, TransactionFigures
from bgbench.run_result.experiment import _action_figures
from bgbench.run_result.rows import ACTION_COLUMNS, TRANSACTION_COLUMNS, action_row
from bgbench.run_result.transactions import TALLIES
from bgbench.sdk import transactions as tx

EMPTY = new_histogram().encode()
COUNTS = {"commits": 8, "retries": 4, "aborts_conflict": 5, "gave_up": 1, "backoff_us": 2000}


def test_the_tallies_named_here_are_the_sdks():
    assert TALLIES == tx.TALLIES


def test_retries_and_back_off_are_per_commit():
    f = TransactionFigures.of(COUNTS)
    assert f is not None
    assert (f.commits, f.aborts, f.gave_up, f.unknown) == (8, 5, 1, 0)
    assert (f.retries_per_commit, f.backoff_ms, f.backoff_ms_per_commit) == (0.5, 2.0, 0.25)
    none_committed = TransactionFigures.of({"aborts_deadlock": 3, "gave_up": 3})
    assert none_committed is not None and none_committed.retries_per_commit is None
    assert TransactionFigures.of({}) is None  # an action that is no transaction


def test_an_experiments_action_keeps_its_counts_and_reads_them_back():
    figures = _action_figures("TXN", ActionStats(9, 1, EMPTY, EMPTY, COUNTS), 100_000)
    record = json.loads(json.dumps(figures.__dict__, default=lambda o: o.__dict__))
    back = ActionFigures.from_record(record)
    assert back.counts == COUNTS and back.transactions == TransactionFigures.of(COUNTS)
    older = {k: v for k, v in record.items() if k not in ("counts", "transactions")}
    assert ActionFigures.from_record(older).transactions is None  # before transactions


def test_the_per_action_frame_has_the_transaction_columns():
    assert set(TRANSACTION_COLUMNS) <= set(ACTION_COLUMNS)
    latency = {k: 1.0 for k in ("p50_ms", "p95_ms", "p99_ms", "max_ms", "mean_ms")}
    stored = {"action": "TXN", "count": 9, "errors": 1, "within_percent": 100.0,
              "response": latency, "service": latency, "counts": COUNTS}  # fmt: skip
    row = action_row({"seq": 1}, stored, {})
    assert (row["commits"], row["retries_per_commit"], row["backoff_ms"]) == (8, 0.5, 2.0)
    plain = action_row({"seq": 1}, {**stored, "counts": {}}, {})
    assert all(plain[c] is None for c in TRANSACTION_COLUMNS)


def experiment(seq: int, phase: str, threads: int, commits: int) -> dict[str, object]:
    actions = [{"action": "TXN", "counts": {"commits": commits}}, {"action": "GET"}]
    return {"seq": seq, "phase": phase, "threads": threads, "status": "passed",
            "result_json": json.dumps({"per_action": actions})}  # fmt: skip


def test_a_rating_shows_its_final_experiments_transactions():
    faulted = {**experiment(4, "final", 4, 40), "status": "fault"}
    rows = [experiment(1, "search", 4, 10), experiment(2, "final", 4, 20),
            experiment(3, "search", 8, 30), faulted]  # fmt: skip
    shown = final_transactions(rows, 4)
    assert list(shown) == ["TXN"] and shown["TXN"].commits == 20
    pooled = final_transactions([*rows, experiment(5, "final", 4, 5)], 4)
    assert pooled["TXN"].commits == 25  # a final's runs pooled
    assert final_transactions(rows[:1] + rows[2:3], 4)["TXN"].commits == 10  # the last at T
    assert final_transactions([], 4) == {}
    damaged = {**experiment(5, "final", 4, 1), "result_json": '{"per_action": [{"counts": 1}]}'}
    assert final_transactions([damaged], 4) == {}
    summary = RatingSummary("r", "soar", "sqlite", 1.0, 2.0, transactions=shown)
    again = RatingSummary.from_dict(json.loads(json.dumps(summary.to_dict())))
    assert again.transactions == shown


def test_the_console_table_shows_only_transactions():
    figures = {"TXN": TransactionFigures.of(COUNTS)}
    assert transactions_table({}, {}) is None
    table = transactions_table(figures, {"TXN": "Add one"})
    console = Console(width=200, record=True)
    console.print(table)
    text = console.export_text()
    assert "TXN Add one" in text and "0.500" in text and "0.25" in text


def test_a_comparison_has_a_row_per_transaction_figure():
    first = {"transactions": {"TXN": {"commits": 8, "retries_per_commit": 0.5, "gave_up": 0}}}
    rows = transaction_rows([first, {"transactions": {}}])
    assert ("TXN commits", ["8", "-"]) in rows
    assert ("TXN retries per commit", ["0.5", "-"]) in rows
    assert transaction_rows([{"transactions": {}}]) == []


def test_an_agents_tallies_are_bounded():
    stats = ActionStats(1, 0, EMPTY, EMPTY, {"commits": 1})
    result = RunResult(per_action={"TXN": stats}, load_processes=1).to_proto()
    check_result("a:1", result, 1)
    result.per_action[0].counts["x" * 5000] = 1
    with pytest.raises(AgentFault, match="counts"):
        check_result("a:1", result, 1)
    for name in list(result.per_action[0].counts):
        del result.per_action[0].counts[name]
    result.per_action[0].counts.update({str(i): 1 for i in range(5000)})
    with pytest.raises(AgentFault, match="5000 entries"):
        check_result("a:1", result, 1)
