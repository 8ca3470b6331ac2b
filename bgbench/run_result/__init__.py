"""The run result, in one family from the load process to the results store.

- ActionStats, ErrorCount, RunResult (run.py): one run's figures, a load process's or
  an agent's, merged exactly (`RunResult.merge`) and carried as the proto's RunResult
  (`to_proto`, `from_proto`).
- AgentOutcome, ActionFigures, ReadFigures, Steadiness, ExperimentResult (experiment.py):
  an experiment's figures per agent and over all, as the results store keeps them
  (`to_record`, `from_record`).
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

__all__ = [
    "ActionFigures",
    "ActionStats",
    "AgentOutcome",
    "ErrorCount",
    "ExperimentResult",
    "LatencySummary",
    "ReadFigures",
    "RunResult",
    "Steadiness",
    "sum_counts",
]
