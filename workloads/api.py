"""The workload seam: what a workload declares so the generic layers can run it.

A workload is one package under `workloads/`, registered once as an entry point of the
group `bgbench.workloads` (see registry.py) whose object satisfies `Workload`. Its store
bindings are entry points of its own group (`Workload.store_group`), each satisfying
`StoreBinding` plus whatever the workload's own loading needs. The agent, load process,
engine, calibration, coordinator, results, report and validator only ever see these
Protocols: they know no workload by name.

Per rating the coordinator asks the workload (pure functions of its settings) how the
database splits into fragments for given capacities; each load process then builds the
workload's `FragmentWorkload` for its fragment, which loads the store, says the initial
value of every tracked item, and makes one `Player` per socialite loop. The engine paces
the loops, picks units of the mix, times nothing itself (the workload's calls go
through worker.timing.Timer) and counts.
"""

import random
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Protocol

from pydantic import BaseModel

from bgbench.validation.checker import InitialValues
from bgbench.worker.measurement import Recorder
from bgbench.worker.timing import Timer

Concurrency = Literal["threads", "asyncio"]
Progress = Callable[[], None]  # called as loading makes progress: the agent's liveness check
Think = Callable[[float], Awaitable[bool]]  # sleeps; False when the experiment is stopping


class StoreBinding(Protocol):
    """What the engine needs of any store binding; the workload needs more of its own."""

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
    """One socialite loop's view of the workload: picks who acts and plays units.

    The engine sets `sid` (the unit's session id) and `intended` (its scheduled start, ns)
    before each unit; `units[i]` plays unit i of the mix for the socialite `acquire` gave.
    """

    timer: Timer
    sid: int
    intended: int
    rng: random.Random  # the runner's stream: the engine draws units of the mix from it
    think: Think  # sleeps; False when the experiment is stopping
    units: Sequence[Callable[[int], Awaitable[object]]]

    def acquire(self) -> int | None:
        """A socialite for the next unit (D-Zipfian, exclusive), None when all drawn are busy."""
        ...

    def release(self, socialite: int) -> None: ...


class FragmentWorkload(Protocol):
    """One fragment of the workload's database, in the load process that owns it."""

    index: int
    size: int  # entities a socialite can be (BG: members): at most one loop per entity
    binding: StoreBinding
    # True when a write's outcome is unknown: the picture of the fragment may be wrong.
    uncertain: bool

    def load(self, create_schema: bool, progress: Progress) -> dict[str, float]:
        """Create the schema (or use the one another process created), then load the
        fragment; the seconds of each named phase."""
        ...

    def ready(self, policy: str, progress: Progress) -> str:
        """Make the picture of the fragment exact before a run (carry, reload or readback);
        say what was done."""
        ...

    def initial_values(self) -> InitialValues:
        """The value of every tracked item now, for the validator."""
        ...

    def player(
        self,
        conn: Any,
        recorder: Recorder,
        runner: int,
        seed: Sequence[int],
        think: Think,
        units: Sequence[str],
    ) -> Player:
        """A player over a connection as the binding made it (asynchronous, or blocking: then
        the workload wraps it so its coroutines never suspend), logging to `recorder`,
        seeded for this runner; its `units` are the named units, in this order."""
        ...

    def summary_payload(self) -> str:
        """Workload-specific figures of the run as JSON ("" for none)."""
        ...


class Workload(Protocol):
    """A workload: its settings, names, database split and per-fragment behaviour."""

    name: str
    description: str
    config_model: type[BaseModel]  # its settings section, under its name in settings files
    aliases: Mapping[str, str]  # its paper's parameter names -> paths in its section
    scale_parameter: str  # the path in its section of the database size (`--users`)
    store_group: str  # the entry-point group of its store bindings
    actions: Mapping[int, str]  # action code -> short name (VP)
    action_titles: Mapping[int, str]  # action code -> title for reports (View Profile)
    items: Mapping[int, str]  # tracked-item kind -> name for reports

    def mix(self, config: BaseModel) -> dict[str, float]:
        """The mix as unit name -> probability (single actions and sessions)."""
        ...

    def interarrival_ms(self, config: BaseModel) -> float:
        """Milliseconds a socialite loop sleeps between one unit's end and its next start, as
        BG's ClientThread (0: back to back)."""
        ...

    def fragment_sizes(self, config: BaseModel, capacities: Sequence[float]) -> list[int]:
        """Entities per fragment for these capacity weights: pure, no store."""
        ...

    def check_fragments(self, config: BaseModel, sizes: Sequence[int]) -> None:
        """Raise UserError when fragments this size cannot hold the database's structure."""
        ...

    def memory_bytes(self, config: BaseModel) -> tuple[int, int]:
        """About how much (the coordinator, all load processes together) the database needs."""
        ...

    def create_schema(self, config: BaseModel, binding: Any) -> None:
        """DDL, once per database, in one load process, before any fragment loads."""
        ...

    def fragment(
        self, config: BaseModel, capacities: Sequence[float], index: int, binding: Any
    ) -> FragmentWorkload:
        """The fragment's workload over a binding made for it (nothing loaded yet)."""
        ...


# -- studies: a workload's own measurements beyond ratings -------------------------------


@dataclass
class StudyTable:
    """One table a study reports: rows of named columns (numbers, strings)."""

    name: str  # short, for files and JSON (load, queries)
    title: str
    columns: list[str]
    rows: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


Record = Callable[[str, dict[str, Any]], None]  # (table name, row), recorded at once
Say = Callable[[str], None]  # a line of progress for the user


class Study(Protocol):
    """A measurement a workload's paper made that is not a rating (bulk-load times, query
    times by selectivity): run in the coordinator's process against one store binding.
    `bgbench study NAME --workload W` runs it, records each measurement as it is made
    (nothing is lost to a fault) and the tables it returns."""

    name: str
    description: str

    def run(
        self, config: BaseModel, store: str, options: Mapping[str, Any], record: Record, say: Say
    ) -> list[StudyTable]:
        """Measure, calling `record` with every raw measurement as it is made; the tables
        to show (summaries first). A store that fails raises SystemFault (StoreError)."""
        ...


class WithStudies(Protocol):
    """A workload that has studies (optional: a workload without has none)."""

    studies: Mapping[str, Study]
