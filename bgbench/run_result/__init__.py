"""The run result, in one family from the load process to the results store.

- ActionStats, ErrorCount, RunResult (run.py): one run's figures, a load process's or
  an agent's, merged exactly (`RunResult.merge`) and carried as the proto's RunResult
  (`to_proto`, `from_proto`).
- AgentOutcome, ActionFigures, ReadFigures, Steadiness, ExperimentResult (experiment.py):
  an experiment's figures per agent and over all, as the results store keeps them
  (`to_record`, `from_record`).
- StepRecord, PhaseFigures, Timeline, ScenarioFigures (scenario.py): a scenario's steps,
  its phases' figures and its timeline, kept in the experiment's result.
- TransactionFigures (transactions.py): an interaction's transactions (commits, aborts
  by cause, retries and back-off per commit) derived from its tallies (ActionStats.counts).
- WriteVisibility (visibility.py): when acknowledged writes became visible, per action
  and item kind, merged over agents (`merge_visibility`).
- rows.py: a stored result as rows of the DataFrames; histograms.py: the HDR figures.
"""

from bgbench.run_result.experiment import (
    ActionFigures,
    AgentOutcome,
    ExperimentResult,
    ReadFigures,
    Steadiness,
)
from bgbench.run_result.histograms import LatencySummary
from bgbench.run_result.run import ActionStats, ErrorCount, RunResult, sum_counts
from bgbench.run_result.scenario import PhaseFigures, ScenarioFigures, StepRecord, Timeline
from bgbench.run_result.transactions import TransactionFigures
from bgbench.run_result.visibility import WriteVisibility, merge_visibility, visibility_totals

__all__ = [
    "ActionFigures",
    "ActionStats",
    "AgentOutcome",
    "ErrorCount",
    "ExperimentResult",
    "LatencySummary",
    "PhaseFigures",
    "ReadFigures",
    "RunResult",
    "ScenarioFigures",
    "Steadiness",
    "StepRecord",
    "Timeline",
    "TransactionFigures",
    "WriteVisibility",
    "merge_visibility",
    "sum_counts",
    "visibility_totals",
]
