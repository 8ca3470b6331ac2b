"""The workload seam: what a workload declares so the generic layers can run it.

A workload is one package, registered as an entry point of the group `bgbench.workloads`
whose object satisfies `Workload[ConfigT, BindingT]`: ConfigT is its own pydantic
settings model, BindingT the protocol its store bindings satisfy (the engine's
`StoreBinding` plus whatever the workload's loading needs), so its methods take both
typed, with no casts. Its bindings are entry points of its own group
(`Workload.store_group`). The engine, coordinator, results and validator only see these
Protocols: they know no workload by name.

Per rating the coordinator asks the workload (pure functions of its settings) how the
database splits into fragments for given capacities; each load process then builds the
workload's `Fragment` for its own, which loads the store, says the initial value of
every tracked item, and makes one `Player` per socialite runner. The engine paces the
runners, draws units of the mix, gives each unit its `UnitContext`, and counts.

Settings. `bgbench ... -p W.PATH=VALUE` sets any field of the workload's section; its
`aliases` map its paper's parameter names (flat, as `--users` or `-p usercount=...`) to
paths in the section. The `--mix NAME` option works only if the workload declares an
alias named `mix` (the path of its mix field); `--users` sets `scale_parameter`.
"""

from collections.abc import Awaitable, Callable, Mapping, Sequence
from random import Random
from typing import Any, ClassVar, Literal, Protocol, TypeVar

from pydantic import BaseModel

from bgbench.sdk.recording import Recorder
from bgbench.sdk.timing import Timer, UnitContext
from bgbench.validation.checker import InitialValues

Concurrency = Literal["threads", "asyncio"]
Progress = Callable[[], None]  # call it as loading makes progress: the agent's liveness check
# A unit of a mix (an action or a session): played with its context for one socialite.
Unit = Callable[[UnitContext[Any], int], Awaitable[object]]

ConfigT = TypeVar("ConfigT", bound=BaseModel)
BindingT = TypeVar("BindingT", contravariant=True)


class StoreBinding(Protocol):
    """What the engine needs of any store binding; the workload needs more of its own.

    Constructed once per load process with its validated `Options`. Connection
    lifecycle: with concurrency "asyncio" every socialite task gets `connect_async()` on
    the load process's event loop (keep pools per loop: tests use several loops) and the
    engine calls `aclose()` on that loop before it closes; with "threads" each socialite
    thread gets `connect()` and closes it at its end. `close()` releases the rest, last.
    """

    name: ClassVar[str]
    # "asyncio": socialites are tasks on one event loop per load process (connect_async);
    # "threads": one OS thread per socialite (connect), for drivers that only block.
    concurrency: ClassVar[Concurrency]
    # False when calls return without ever suspending the task (the null store): the
    # engine then yields to the loop between units itself.
    suspends: ClassVar[bool]
    # True when the store runs inside the load process (SQLite): its CPU is the client's.
    embedded: ClassVar[bool]
    Options: ClassVar[type[BaseModel]]
    # Options that name files (SQLite's "path"): a remote agent keeps them in its work dir.
    file_options: ClassVar[tuple[str, ...]]

    def connect(self) -> Any: ...
    async def connect_async(self) -> Any: ...
    async def aclose(self) -> None: ...
    def describe(self) -> str: ...
    def counters(self) -> dict[str, int]: ...
    def close(self) -> None: ...


class Player(Protocol):
    """One socialite runner's view of the workload: who acts, and the units it plays.

    `units[i]` plays unit i of the mix (in the order `Fragment.player` was given) as
    `await units[i](ctx, socialite)` for the socialite `acquire` gave; the engine then
    calls `release(socialite)` whatever happened. The engine builds the runner's
    `UnitContext` from `timer` and `rng` (it draws units from `rng`).
    """

    @property
    def timer(self) -> Timer[Any]: ...
    @property
    def rng(self) -> Random: ...
    @property
    def units(self) -> Sequence[Unit]: ...

    def acquire(self) -> int | None:
        """A socialite for the next unit, None when all drawn are busy (the engine then lets
        other runners go and asks again)."""
        ...

    def release(self, socialite: int) -> None: ...


class Fragment(Protocol):
    """One fragment of the workload's database, in the load process that owns it."""

    @property
    def index(self) -> int: ...
    @property
    def size(self) -> int:
        """Entities a socialite can be: at most one runner per entity."""
        ...

    # True when a write's outcome is unknown: the picture of the fragment may be wrong.
    uncertain: bool

    def load(self, create_schema: bool, progress: Progress) -> dict[str, float]:
        """Create the schema (or use the one another process created), then load the
        fragment; the seconds of each named phase."""
        ...

    def ready(self, policy: str, progress: Progress) -> str:
        """Make the picture of the fragment exact before a run and say what was done:
        "carry" keeps the workload's own picture (the initial values it generated plus
        the writes that succeeded since: never read back from the store), "reload" loads
        again, "readback" reads the store. After a write of unknown outcome, carry must
        reload."""
        ...

    def initial_values(self) -> InitialValues:
        """The value of every tracked item now, for the validator."""
        ...

    def player(
        self, conn: Any, recorder: Recorder, runner: int, seed: Sequence[int], units: Sequence[str]
    ) -> Player:
        """A player over a connection as the binding made it (asynchronous, or blocking:
        wrap it with `sdk.connection_for` so its units never suspend), logging to
        `recorder`, seeded for this runner; its `units` are the named units, in order."""
        ...

    def summary_payload(self) -> str:
        """Workload-specific figures of the run as JSON ("" for none)."""
        ...


class Workload(Protocol[ConfigT, BindingT]):
    """A workload: its settings, names, database split and per-fragment behaviour."""

    # Read-only members: plain attributes (a dict for a Mapping) satisfy them.
    @property
    def name(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def config_model(self) -> type[ConfigT]:
        """Its settings section, under its name in settings files."""
        ...

    @property
    def aliases(self) -> Mapping[str, str]:
        """Its paper's parameter names -> paths in its section (`mix` for --mix)."""
        ...

    @property
    def scale_parameter(self) -> str:
        """The path in its section of the database size (`--users`)."""
        ...

    @property
    def store_group(self) -> str:
        """The entry-point group of its store bindings."""
        ...

    @property
    def actions(self) -> Mapping[int, str]:
        """Action code -> short name (VP)."""
        ...

    @property
    def action_titles(self) -> Mapping[int, str]:
        """Action code -> title for reports (View Profile)."""
        ...

    @property
    def items(self) -> Mapping[int, str]:
        """Tracked-item kind -> name for reports."""
        ...

    def mix(self, config: ConfigT) -> dict[str, float]:
        """The mix as unit name -> probability (single actions and sessions)."""
        ...

    def interarrival_ms(self, config: ConfigT) -> float:
        """Milliseconds a socialite runner sleeps between one unit's end and its next start
        (0: back to back)."""
        ...

    def fragment_sizes(self, config: ConfigT, capacities: Sequence[float]) -> list[int]:
        """Entities per fragment for these capacity weights: pure, no store."""
        ...

    def check_fragments(self, config: ConfigT, sizes: Sequence[int]) -> None:
        """Raise UserError when fragments this size cannot hold the database's structure."""
        ...

    def memory_bytes(self, config: ConfigT) -> tuple[int, int]:
        """About how much (the coordinator, all load processes together) the database needs."""
        ...

    def create_schema(self, config: ConfigT, binding: BindingT) -> None:
        """DDL, once per database, in one load process, before any fragment loads."""
        ...

    def fragment(
        self, config: ConfigT, capacities: Sequence[float], index: int, binding: BindingT
    ) -> Fragment:
        """The fragment's workload over a binding made for it (nothing loaded yet)."""
        ...


AnyWorkload = Workload[Any, Any]  # what the generic layers hold
