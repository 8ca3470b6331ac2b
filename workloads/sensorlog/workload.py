"""The sensor-log workload of Mahmood, Risch and Zhu as a workload of the seam: a rating
of continuous ingest (beyond the paper, whose setting is logs that keep arriving while
engineers query them), plus the paper's studies (study.py).

A socialite is a series (m, s) of the fragment, drawn uniformly (every sensor streams
alike), one loop at a time on a series. Its units:

- INGEST appends the series' next reading: bt is the newest reading's et, the value
  continues the series' reflected walk (with the generator's spikes);
- Q1 looks up the series' newest reading by its key (m, s, bt): the freshest reading an
  engineer asks for, and the one a stale store is likeliest to miss;
- Q3 counts the readings of the fragment's machines with mv above the threshold that
  selects `q3_selectivity` percent of the loaded database (generator.thresholds).

Tracked items, checked by the validator under BG's exact rule:

- SERIES_LENGTH of each series (id m * sensors + s): INGEST writes +1. Q1 reads it: the
  newest reading found means the series holds all n readings the fragment committed;
  not found means it shows at most n - 1, below what the validator allows once that
  INGEST completed before Q1 began: a Q1 that missed a committed reading.
- ABOVE of each fragment (id: the fragment's index): an INGEST whose value is above the
  threshold writes +1; Q3 reads the count the store returned. A count below the loaded
  rows above x plus every such INGEST completed before it began is an aggregate that
  missed committed rows; above, one that counted rows not (yet) written.

Registered as the entry point `sensorlog` of the group `bgbench.workloads`; bindings are
the group `bgbench.sensorlog_stores` (store.py); the studies are `WORKLOAD.studies`.
"""

import random
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from bgbench import sdk
from bgbench.errors import UserError
from bgbench.sdk import InitialValues, Progress, Recorder, Timer, UnitContext
from bgbench.workloads.sensorlog.config import SensorLogConfig, resolve_mix
from bgbench.workloads.sensorlog.generator import (
    Rows,
    database_threshold,
    reflect_value,
    rows_of,
    series_times,
    series_values,
    series_walk_end,
    split_machines,
)
from bgbench.workloads.sensorlog.store import (
    ENTRY_POINT_GROUP,
    AsyncSensorLogConnection,
    Reading,
    SensorLogBinding,
)

INGEST, Q1, Q3 = 0, 1, 2  # action codes
SERIES_LENGTH, ABOVE = 0, 1  # tracked item kinds
CLAIM_ATTEMPTS = 64
# Per series, the fragment keeps 5 numbers (plus a claim when busy); the coordinator
# only the machine split. Loading holds one machine's rows at a time.
SERIES_BYTES = 64


SensorLogContext = UnitContext[Timer[AsyncSensorLogConnection]]


class SensorLogPlayer:
    def __init__(
        self,
        fragment: "SensorLogFragment",
        timer: Timer[AsyncSensorLogConnection],
        seed: Sequence[int],
        units: Sequence[str],
    ) -> None:
        self.fragment = fragment
        self.timer = timer
        self.rng = random.Random(str(list(seed)))
        plays: dict[str, sdk.Unit] = {
            "INGEST": self.ingest,
            "Q1": self.q1,
            "Q3": self.q3,
        }
        self.units = [plays[u] for u in units]

    def acquire(self) -> int | None:
        f = self.fragment
        claim = object()
        for _ in range(CLAIM_ATTEMPTS):
            series = f.first_series + self.rng.randrange(f.size)
            if f.busy.setdefault(series, claim) is claim:
                return series
        return None

    def release(self, series: int) -> None:
        self.fragment.busy.pop(series, None)

    async def ingest(self, ctx: SensorLogContext, series: int) -> object:
        f = self.fragment
        row = f.next_reading(series, ctx.rng)
        deltas = [(SERIES_LENGTH, series, 1)]
        if row.mv > f.x:
            deltas.append((ABOVE, f.index, 1))
        ok = await ctx.write(INGEST, ctx.timer.conn.insert(row), deltas)
        f.finish_ingest(series, row, ok)
        return ok

    async def q1(self, ctx: SensorLogContext, series: int) -> object:
        f = self.fragment
        m, s = divmod(series, f.sensors)
        n = int(f.length[series - f.first_series])
        bt = int(f.newest_bt[series - f.first_series])

        def seen(found: bool) -> tuple[tuple[int, int, int]]:
            return ((SERIES_LENGTH, series, n if found else n - 1),)

        return await ctx.read(Q1, ctx.timer.conn.newest(m, s, bt), seen)

    async def q3(self, ctx: SensorLogContext, series: int) -> object:
        f = self.fragment

        def seen(count: int) -> tuple[tuple[int, int, int]]:
            return ((ABOVE, f.index, int(count)),)

        call = ctx.timer.conn.count_above(f.x, f.machines.start, f.machines.stop)
        return await ctx.read(Q3, call, seen)


class FragmentLogData:
    """store.FragmentLog: one fragment's machines and their generated rows."""

    def __init__(self, config: SensorLogConfig, machines: range, index: int) -> None:
        self.db = config.database
        self.machines = machines
        self.index = index

    def batches(self) -> Iterator[Rows]:
        return rows_of(self.db, self.machines, self.db.readings)


class SensorLogFragment:
    """One fragment (a range of machines) and the workload's picture of it: per series,
    the readings committed, the newest one's bt and et, and where its walk stands."""

    def __init__(
        self,
        config: SensorLogConfig,
        capacities: Sequence[float],
        index: int,
        binding: SensorLogBinding,
    ) -> None:
        db = config.database
        self.config = config
        self.index = index
        self.machines = split_machines(db.machines, capacities)[index]
        if not self.machines:
            raise UserError(
                f"invalid config: sensorlog.database.machines: fragment {index} got no "
                "machine; raise machines or use fewer agents or load processes"
            )
        self.sensors = db.sensors
        self.first_series = self.machines.start * db.sensors
        self.size = len(self.machines) * db.sensors
        self.binding = binding
        self.data = FragmentLogData(config, self.machines, index)
        self.x = database_threshold(db, config.workload.q3_selectivity).x
        self.uncertain = False
        self.busy: dict[int, object] = {}
        self._lock = threading.Lock()
        self._loaded = False
        self._initial()

    def _initial(self) -> None:
        """The picture of the freshly loaded fragment."""
        db = self.config.database
        n = db.readings
        self.length = np.full(self.size, n, dtype=np.int64)
        self.newest_bt = np.empty(self.size, dtype=np.int64)
        self.next_bt = np.empty(self.size, dtype=np.int64)
        self.walk = np.empty(self.size, dtype=np.float64)
        above = 0
        for i in range(self.size):
            m, s = divmod(self.first_series + i, db.sensors)
            times = series_times(db, m, s, n)
            self.newest_bt[i], self.next_bt[i] = times[n - 1], times[n]
            self.walk[i] = series_walk_end(db, m, s, n)
            above += int(np.count_nonzero(series_values(db, m, s, n) > self.x))
        self.above = above
        self.uncertain = False

    # -- loading ----------------------------------------------------------------------
    def load(self, create_schema: bool, progress: Progress) -> dict[str, float]:
        t0 = time.perf_counter()
        if create_schema:
            self.binding.create_schema(self.config.database)
        else:
            self.binding.use_schema(self.config.database)
        progress()
        t1 = time.perf_counter()
        self._reload(progress)
        return {"schema": t1 - t0, "rows": time.perf_counter() - t1}

    def _reload(self, progress: Progress) -> None:
        self.binding.load_fragment(self.data, progress)
        progress()
        with self._lock:
            self._initial()
        self._loaded = True

    def ready(self, policy: str, progress: Progress) -> str:
        if not self._loaded:
            raise UserError("the fragment is not loaded: prepare before running")
        if policy == "reload":
            self._reload(progress)
            return "reload"
        if policy == "readback":
            raise UserError(
                "the sensorlog workload cannot read its state back: use rating.state carry "
                "or reload"
            )
        if policy != "carry":
            raise UserError(f"unknown start state {policy!r}: use carry, reload or readback")
        if self.uncertain:
            self._reload(progress)
            return "reload (an insert failed in the previous experiment)"
        return "carry"

    def initial_values(self) -> InitialValues:
        with self._lock:
            series = np.arange(self.first_series, self.first_series + self.size, dtype=np.int64)
            return InitialValues(
                {
                    SERIES_LENGTH: (series, self.length.copy()),
                    ABOVE: (
                        np.array([self.index], dtype=np.int64),
                        np.array([self.above], dtype=np.int64),
                    ),
                }
            )

    # -- playing ----------------------------------------------------------------------
    def next_reading(self, series: int, rng: random.Random) -> Reading:
        """The series' next reading; its walk moves on even if the insert then fails (a
        failed insert's key is never reused)."""
        sig = self.config.database.signal
        i = series - self.first_series
        period = self.config.database.period_ms
        bt = int(self.next_bt[i])
        et = bt + period // 2 + rng.randrange(period)
        walk = reflect_value(float(self.walk[i]) + rng.gauss(0.0, sig.step), sig)
        spiking = rng.random() < sig.spike_probability
        spike = rng.uniform(sig.spike_min, sig.spike_max) if spiking else 0.0
        self.walk[i], self.next_bt[i] = walk, et
        m, s = divmod(series, self.sensors)
        return Reading(m, s, bt, et, walk + spike)

    def finish_ingest(self, series: int, row: Reading, ok: bool) -> None:
        if not ok:
            self.uncertain = True
            return
        i = series - self.first_series
        with self._lock:
            self.length[i] += 1
            self.newest_bt[i] = row.bt
            if row.mv > self.x:
                self.above += 1

    def player(
        self,
        conn: Any,
        recorder: Recorder,
        runner: int,
        seed: Sequence[int],
        units: Sequence[str],
    ) -> SensorLogPlayer:
        async_conn = sdk.connection_for(self.binding, conn, AsyncSensorLogConnection)
        return SensorLogPlayer(self, Timer(async_conn, recorder, runner), seed, units)

    def summary_payload(self) -> str:
        return ""


class SensorLogWorkload:
    def __init__(self) -> None:
        self.name = "sensorlog"
        self.description = (
            "Mahmood et al.'s sensor logs: measures(m, s, bt, et, mv), continuous ingest "
            "with key lookups and aggregates; studies of bulk loading and queries"
        )
        self.config_model = SensorLogConfig
        self.aliases = {
            "machines": "database.machines",
            "sensors": "database.sensors",
            "readings": "database.readings",
            "mix": "workload.mix",
            "selectivity": "workload.q3_selectivity",
            "interarrivaltime": "workload.interarrivaltime",
        }
        self.scale_parameter = "database.machines"
        self.store_group = ENTRY_POINT_GROUP
        self.actions = {INGEST: "INGEST", Q1: "Q1", Q3: "Q3"}
        self.action_titles = {
            INGEST: "Append a reading to a series",
            Q1: "Look up a series' newest reading by key",
            Q3: "Count a fragment's readings above the threshold",
        }
        self.items = {SERIES_LENGTH: "series length", ABOVE: "readings above threshold"}

    @property
    def studies(self) -> dict[str, Any]:
        from bgbench.workloads.sensorlog.study import STUDIES

        return STUDIES

    def mix(self, config: SensorLogConfig) -> dict[str, float]:
        return resolve_mix(config.workload.mix)

    def interarrival_ms(self, config: SensorLogConfig) -> float:
        return config.workload.interarrivaltime

    def fragment_sizes(self, config: SensorLogConfig, capacities: Sequence[float]) -> list[int]:
        db = config.database
        return [len(r) * db.sensors for r in split_machines(db.machines, capacities)]

    def check_fragments(self, config: SensorLogConfig, sizes: Sequence[int]) -> None:
        if min(sizes) < 1:
            raise UserError(
                f"invalid config: sensorlog.database.machines: {config.database.machines} "
                f"machines over {len(sizes)} fragments leaves one empty; raise machines or "
                "use fewer agents"
            )

    def memory_bytes(self, config: SensorLogConfig) -> tuple[int, int]:
        db = config.database
        # Thresholds need every value of the database once per process (8 B a row).
        return db.rows * 8 * 2, db.rows * 8 * 2 + db.series * SERIES_BYTES

    def create_schema(self, config: SensorLogConfig, binding: SensorLogBinding) -> None:
        binding.create_schema(config.database)

    def fragment(
        self,
        config: SensorLogConfig,
        capacities: Sequence[float],
        index: int,
        binding: SensorLogBinding,
    ) -> SensorLogFragment:
        return SensorLogFragment(config, capacities, index, binding)


WORKLOAD: sdk.Workload[SensorLogConfig, SensorLogBinding] = SensorLogWorkload()
