"""The store seam of the sensor-log workload: what a binding implements, as Protocols.

One table (or collection), measures(m, s, bt, et, mv), keyed by (m, s, bt), with a
secondary index on mv. A binding serves two users:

- **The studies** (study.py, the paper's measurements): `reset` empties the store and
  defines the table under the binding's `consistency` (strong or weak, the paper's
  Table 1), with its indexes when they are to be defined before loading;
  `bulk_load` sends rows by the store's own bulk path; `build_indexes` builds them
  after; `q1`, `q2`, `q3` are the paper's three queries, `plan` the store's plan for one.
- **The continuous-ingest rating** (workload.py): `create_schema`/`use_schema`,
  `load_fragment` (the fragment's machines replaced by their generated rows), and per
  socialite loop a connection that `insert`s one reading, looks one up by key
  (`newest`) and counts a machine range's readings above a threshold (`count_above`).

Q3 in the rating counts one fragment's machines (m in [lo, hi)) so that each fragment's
count is an item of its own for the validator; the study's Q3 counts the whole table,
as the paper's.

Bindings never time themselves and never retry. One binding per file under `stores/`,
registered as an entry point of the group `bgbench.sensorlog_stores`.
"""

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, ClassVar, Literal, NamedTuple, Protocol

from pydantic import BaseModel

if TYPE_CHECKING:
    from bgbench.workloads.sensorlog.config import SensorLogDatabaseConfig
    from bgbench.workloads.sensorlog.generator import Rows

ENTRY_POINT_GROUP = "bgbench.sensorlog_stores"

Concurrency = Literal["threads", "asyncio"]
Consistency = Literal["strong", "weak"]
Query = Literal["Q1", "Q2", "Q3"]


class Unsupported(Exception):
    """The store cannot answer this query (say why): the study reports it as such."""


class Reading(NamedTuple):
    m: int
    s: int
    bt: int
    et: int
    mv: float


class FragmentLog(Protocol):
    """What `load_fragment` gets: one fragment's machines and their generated rows."""

    index: int
    machines: range

    def batches(self) -> Iterable["Rows"]: ...


class SensorLogConnection(Protocol):
    """One socialite thread's handle on the store. Calls may raise; never retried."""

    def insert(self, row: Reading) -> None: ...
    def newest(self, m: int, s: int, bt: int) -> bool:
        """Whether the reading keyed (m, s, bt) is there (the paper's Q1)."""
        ...

    def count_above(self, x: float, m_lo: int, m_hi: int) -> int:
        """count(*) of readings with mv > x and m_lo <= m < m_hi (Q3 over one fragment)."""
        ...

    def close(self) -> None: ...


class AsyncSensorLogConnection(Protocol):
    async def insert(self, row: Reading) -> None: ...
    async def newest(self, m: int, s: int, bt: int) -> bool: ...
    async def count_above(self, x: float, m_lo: int, m_hi: int) -> int: ...
    async def close(self) -> None: ...


class SensorLogBinding(Protocol):
    """A store for the sensor-log workload. Constructed with its options, which include
    `consistency` (strong or weak)."""

    name: ClassVar[str]
    concurrency: ClassVar[Concurrency]
    suspends: ClassVar[bool]
    embedded: ClassVar[bool]
    Options: ClassVar[type[BaseModel]]
    file_options: ClassVar[tuple[str, ...]]
    # The paper's Table 1 for this store: what strong and weak mean here.
    consistency_settings: ClassVar[dict[str, str]]

    # -- studies ---------------------------------------------------------------------
    def reset(self, indexes: bool) -> None:
        """Drop the table if it exists and create it empty, under the binding's
        consistency, with the key and mv indexes when `indexes` (else none that can be
        built later: Cassandra's key is its table's)."""
        ...

    def bulk_load(self, batches: Iterable["Rows"], progress: Callable[[], None]) -> int:
        """Send the rows by the store's bulk path (at least one progress call per batch);
        the rows loaded."""
        ...

    def build_indexes(self) -> None:
        """Build the indexes `reset(indexes=False)` left out, on the loaded rows."""
        ...

    def q1(self, m: int, s: int, bt: int) -> Reading | None: ...
    def q2(self, x: float) -> int:
        """Fetch every reading with mv > x (rows transferred to the client); how many."""
        ...

    def q3(self, x: float) -> int:
        """count(*) of readings with mv > x, counted by the store."""
        ...

    def plan(self, query: Query, x: float = 0.0, key: tuple[int, int, int] = (0, 0, 0)) -> str:
        """The store's plan for the query (EXPLAIN or its equivalent), one line per step."""
        ...

    # -- the rating ------------------------------------------------------------------
    def create_schema(self, db: "SensorLogDatabaseConfig") -> None:
        """The table and both indexes if missing (never dropping data), then as
        use_schema. Runs once per database, in one load process."""
        ...

    def use_schema(self, db: "SensorLogDatabaseConfig") -> None: ...

    def load_fragment(self, fragment: FragmentLog, progress: Callable[[], None]) -> None:
        """Delete every reading of the fragment's machines (those ingest added too), then
        bulk-load its generated rows."""
        ...

    def connect(self) -> SensorLogConnection: ...
    async def connect_async(self) -> AsyncSensorLogConnection: ...
    async def aclose(self) -> None: ...
    def describe(self) -> str: ...
    def counters(self) -> dict[str, int]: ...
    def close(self) -> None: ...
