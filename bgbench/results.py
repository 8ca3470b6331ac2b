"""Recorded results as pandas DataFrames, for notebooks and your own plots.

    from bgbench import results
    r = results.load("results")          # a results directory, or its bgbench.sqlite
    r = results.load("postgresql://bench@db:5432/bgbench")  # or a shared PostgreSQL store
    r.experiments.plot.scatter("threads", "actions_per_s")

`load` returns a ResultFrames: ratings, experiments, per_agent, per_action, validation,
sweep, measurements, campaigns, campaign_jobs and resources (each experiment's
hosts), each a DataFrame whose columns bgbench.coordinator.storage.frames documents;
r.resource_series(rating_id, seq) is
the time series of one experiment's hosts (CPU, memory, disk, network, the store's and
the load processes' CPU).
"""

from bgbench.coordinator.storage.frames import ResultFrames, load

__all__ = ["ResultFrames", "load"]
