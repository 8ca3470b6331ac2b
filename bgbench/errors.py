"""One root exception; subclasses say whose fault it is.

A UserError is printed as one line with no traceback; a SystemFault is an
infrastructure problem (an agent died, a store stopped) that ends an experiment
and is recorded as such, never as an SLA verdict.
"""


class BGBenchError(Exception):
    """Root of every error bgbench raises on purpose."""


class UserError(BGBenchError):
    """Bad input: a config value, a flag, a file. Fix the input and retry."""


class SystemFault(BGBenchError):
    """Infrastructure failure: a worker, a store or the network failed."""


class StoreError(SystemFault):
    """A store binding failed to perform an action."""
