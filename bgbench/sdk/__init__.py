"""bgbench's SDK: everything a workload author imports, as `from bgbench import sdk`.

A workload (see docs/guide/workloads.md) is a `Workload[Config, Binding]`: its pydantic
settings model, its store bindings' protocol, its units. The engine makes one `Player`
per socialite runner through the workload's `Fragment` and plays each unit as
`await unit(ctx, socialite)` with the runner's `UnitContext`: `ctx.sid`, `ctx.intended`,
`ctx.rng`, `ctx.conn`, and the timed calls `ctx.read`, `ctx.write` (deltas),
`ctx.write_absolute` (new values), `ctx.write_from_answer` (the change the store's
answer says it made), `ctx.transaction` (attempts of a transaction retried under a
`RetryPolicy` when the store raises `Abort`; transactions.py) and `ctx.pause` (a think
time inside a session).

Bindings over drivers that only block: `connection_for(binding, conn, AsyncProtocol)` in
`Fragment.player` gives the units an asynchronous view that never suspends. The `--mix`
option needs an alias named `mix` in `Workload.aliases` (workload.py).

Errors: raise `UserError` for settings the workload refuses (exit 2), `StoreError` for a
store that failed (exit 3); both are re-exported here.

This package imports nothing of the worker, the coordinator, the drivers or any workload.
"""

from bgbench.errors import StoreError, SystemFault, UserError
from bgbench.sdk.blocking import (
    LoopBridge,
    blocking,
    blocking_connection,
    connection_for,
    run_blocking,
)
from bgbench.sdk.recording import ACTION_FIELDS, ERROR, OK, RECORD_FIELDS, Recorder
from bgbench.sdk.stores import BlockingBinding, StoreSpec
from bgbench.sdk.studies import (
    AnyStudy,
    Bindings,
    Record,
    Say,
    Study,
    StudyTable,
    WithStudies,
)
from bgbench.sdk.timing import Item, Think, Timer, UnitContext
from bgbench.sdk.transactions import (
    ABORT_CAUSES,
    Abort,
    AbortCause,
    ConcurrencyControl,
    ConcurrencyControlOptions,
    RetryPolicy,
    TxOutcome,
)
from bgbench.sdk.workload import (
    AnyWorkload,
    Concurrency,
    Fragment,
    Player,
    Progress,
    StoreBinding,
    Unit,
    Workload,
)
from bgbench.validation.checker import InitialValues
from bgbench.validation.logformat import NEVER, READ, WRITE, WRITE_ABS

__all__ = [
    "ABORT_CAUSES",
    "ACTION_FIELDS",
    "ERROR",
    "NEVER",
    "OK",
    "READ",
    "RECORD_FIELDS",
    "WRITE",
    "WRITE_ABS",
    "Abort",
    "AbortCause",
    "AnyStudy",
    "AnyWorkload",
    "Bindings",
    "BlockingBinding",
    "Concurrency",
    "ConcurrencyControl",
    "ConcurrencyControlOptions",
    "Fragment",
    "InitialValues",
    "Item",
    "LoopBridge",
    "Player",
    "Progress",
    "Record",
    "Recorder",
    "RetryPolicy",
    "Say",
    "StoreBinding",
    "StoreError",
    "StoreSpec",
    "Study",
    "StudyTable",
    "SystemFault",
    "Think",
    "Timer",
    "TxOutcome",
    "Unit",
    "UnitContext",
    "UserError",
    "WithStudies",
    "Workload",
    "blocking",
    "blocking_connection",
    "connection_for",
    "run_blocking",
]
