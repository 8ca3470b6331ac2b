"""The EHR workload of Klein et al. (2015) as a workload of the SDK (bgbench.sdk).

Patients and their lab results (paper section 3.2, generator.py); two operations
(section 3.4): READ returns one patient's `recent` (5) most recent lab results, WRITE
inserts one new lab result for one existing patient, keyed by an increasing sequence
number (or its hash). Mixes: readwrite (80/20), readonly, writeonly, or weights.

The socialite is a patient, drawn Zipfian (θ = zipfianmean) or uniformly from the
fragment. With `exclusive` (the default, as BG) one loop acts on a patient at a time:
loops work on different patients concurrently, but no loop reads a patient while another
is inserting one of its results, so every READ of a patient comes after the WRITEs to it
that other loops finished, and must see them. Without it, loops may read a patient while
others insert, and the validator allows such reads either answer.

The tracked item is each patient's lab-result count (item RESULT_COUNT, id = patient):
a WRITE logs +1 on it, a READ logs the count of results visible to that same read (the
binding returns it with the rows, from one snapshot; store.py). The paper's worry is a
clinician not seeing a result that was already written: that read returns a count below
the loaded count plus every insert completed before the read began, which no order of
the concurrent inserts explains, so the validator flags it as unpredictable, with its
lag. It catches as well a result seen twice or before its insert began (a count too
high) and a lost insert; it does not judge the rows' contents, which the count vouches
for only as far as the binding reads both at once. Initial values are the generated
counts plus the inserts that succeeded since (a failed insert has an unknown outcome:
the next run reloads), or what `readback` counted in the store.

Registered as the entry point `ehr` of the group `bgbench.workloads`; its bindings are
the group `bgbench.ehr_stores` (store.py).
"""

import random
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from itertools import count
from typing import Any

import numpy as np

from bgbench import sdk
from bgbench.errors import UserError
from bgbench.sdk import InitialValues, Progress, Recorder, Timer, UnitContext
from bgbench.workloads.ehr.config import EHRConfig, resolve_mix
from bgbench.workloads.ehr.generator import FragmentData, fragment_owner, new_result
from bgbench.workloads.ehr.store import (
    ENTRY_POINT_GROUP,
    AsyncEHRConnection,
    EHRBinding,
    LabResult,
)

READ, WRITE = 0, 1  # action codes
RESULT_COUNT = 0  # the tracked item kind: lab results of a patient
DRAW_BATCH = 1024
CLAIM_ATTEMPTS = 64

# What one patient costs (tracemalloc peaks, 10^6 patients in 2 fragments): the fragment
# layout is 16 B per patient of the whole database, in the coordinator and again in each
# load process; a fragment adds 16 B per own patient (counts, draws) and one batch of rows.
# The load figure covers all processes together for up to 5 of them.
COORDINATOR_PATIENT_BYTES = 24
LOAD_PATIENT_BYTES = 96


EHRContext = UnitContext[Timer[AsyncEHRConnection]]


class EHRPlayer:
    """One socialite loop: draws patients and plays READ and WRITE."""

    def __init__(
        self,
        fragment: "EHRFragment",
        timer: Timer[AsyncEHRConnection],
        seed: Sequence[int],
        units: Sequence[str],
    ) -> None:
        self.fragment = fragment
        self.timer = timer
        self.rng = random.Random(str(list(seed)))
        self.k = fragment.config.workload.recent
        self._draw = _drawer(fragment.data, seed)
        self._busy = fragment.busy
        self._exclusive = fragment.config.workload.exclusive
        plays: dict[str, sdk.Unit] = {
            "READ": self.read,
            "WRITE": self.write,
        }
        self.units = [plays[u] for u in units]

    def acquire(self) -> int | None:
        if not self._exclusive:
            return self._draw()
        claim = object()  # unique to this call; dict.setdefault claims atomically
        for _ in range(CLAIM_ATTEMPTS):
            patient = self._draw()
            if self._busy.setdefault(patient, claim) is claim:
                return patient
        return None

    def release(self, patient: int) -> None:
        if self._exclusive:
            self._busy.pop(patient, None)

    async def read(self, ctx: EHRContext, patient: int) -> object:
        def seen(answer: tuple[list[LabResult], int]) -> Iterable[sdk.Item]:
            return ((RESULT_COUNT, patient, answer[1]),)

        return await ctx.read(READ, ctx.timer.conn.recent_results(patient, self.k), seen)

    async def write(self, ctx: EHRContext, patient: int) -> object:
        row = self.fragment.next_result(patient, ctx.rng.random())
        call = ctx.timer.conn.insert_result(row)
        ok = await ctx.write(WRITE, call, ((RESULT_COUNT, patient, 1),))
        self.fragment.finish_write(patient, ok)
        return ok


def _drawer(data: FragmentData, seed: Sequence[int]) -> Callable[[], int]:
    zipf = data.local_zipf()
    np_rng = np.random.default_rng(list(seed))
    buf: list[int] = []

    def draw() -> int:
        nonlocal buf
        if not buf:
            buf = zipf.draw(np_rng, DRAW_BATCH).tolist()
        return buf.pop()

    return draw


class EHRFragment:
    """One fragment of the EHR database in the load process that owns it, and the
    workload's picture of it: every patient's result count."""

    def __init__(
        self, config: EHRConfig, capacities: Sequence[float], index: int, binding: EHRBinding
    ) -> None:
        self.config = config
        wl = config.workload
        self.data = FragmentData(config.database, wl.theta, capacities, index, wl.hashed_keys)
        self.index = index
        self.size = self.data.size
        if self.size == 0:
            raise UserError(
                f"invalid config: ehr.database.patients: fragment {index} got no patient; "
                "raise patients or use fewer agents or load processes"
            )
        self.binding = binding
        self.uncertain = False  # an insert failed: the store's counts are no longer known
        self.busy: dict[int, object] = {}  # patient -> the claim of the loop acting on it
        self._loaded = False
        self._counts = self.data.initial_counts.copy()  # at the start of the current run
        self._added: dict[int, int] = {}  # patient -> inserts that succeeded since
        self._lock = threading.Lock()
        # The k-th insert of this fragment gets key KeyScheme.inserted(index, k); never
        # reset, so keys stay unique within the process whatever the store keeps.
        self._next = count()

    # -- loading ------------------------------------------------------------------------------
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
        self._set_counts(self.data.initial_counts.copy())
        self._loaded = True

    def _set_counts(self, counts: np.ndarray) -> None:
        with self._lock:
            self._counts = counts
            self._added = {}
        self.uncertain = False

    def ready(self, policy: str, progress: Progress) -> str:
        if not self._loaded:
            raise UserError("the fragment is not loaded: prepare before running")
        if policy == "reload":
            self._reload(progress)
            return "reload"
        if policy == "readback":
            if not getattr(self.binding, "can_read_back", False):
                raise UserError(
                    f"store {self.binding.name} cannot read its state back: "
                    "use rating.state carry or reload"
                )
            stored = self.binding.read_back(self.data, progress)
            progress()
            patients = self.data.patients
            counts = np.array([stored.get(p, 0) for p in patients.tolist()], dtype=np.int64)
            self._set_counts(counts)
            return "readback"
        if policy != "carry":
            raise UserError(f"unknown start state {policy!r}: use carry, reload or readback")
        if self.uncertain:
            self._reload(progress)  # an insert of unknown outcome: only a reload is exact
            return "reload (a write failed in the previous experiment)"
        return "carry"

    def initial_values(self) -> InitialValues:
        with self._lock:
            counts = self._counts.copy()
            added = list(self._added.items())
        if added:
            who, n = (np.array(x, dtype=np.int64) for x in zip(*added, strict=True))
            counts[np.searchsorted(self.data.patients, who)] += n
        return InitialValues({RESULT_COUNT: (self.data.patients, counts)})

    # -- playing ------------------------------------------------------------------------------
    def next_result(self, patient: int, draw: float) -> LabResult:
        key = self.data.keys.inserted(self.index, next(self._next))
        return new_result(key, patient, draw, time.time_ns() // 1_000_000)

    def finish_write(self, patient: int, ok: bool) -> None:
        if not ok:
            self.uncertain = True
            return
        with self._lock:
            self._added[patient] = self._added.get(patient, 0) + 1

    def player(
        self,
        conn: Any,
        recorder: Recorder,
        runner: int,
        seed: Sequence[int],
        units: Sequence[str],
    ) -> EHRPlayer:
        timer = Timer(sdk.connection_for(self.binding, conn, AsyncEHRConnection), recorder, runner)
        return EHRPlayer(self, timer, seed, units)

    def summary_payload(self) -> str:
        return ""


class EHRWorkload:
    def __init__(self) -> None:
        self.name = "ehr"
        self.description = (
            "Klein et al.'s electronic health records: patients and lab results, "
            "read the 5 most recent / insert one"
        )
        self.config_model = EHRConfig
        self.aliases = {
            "patientcount": "database.patients",
            "recordcount": "database.patients",  # YCSB's name, the paper's client
            "maxresults": "database.maxresults",
            "meanresults": "database.meanresults",
            "mix": "workload.mix",
            "requestdistribution": "workload.requestdistribution",
            "zipfianmean": "workload.zipfianmean",
            "hashedkeys": "workload.hashed_keys",
            "interarrivaltime": "workload.interarrivaltime",
        }
        self.scale_parameter = "database.patients"
        self.store_group = ENTRY_POINT_GROUP
        self.actions = {READ: "READ", WRITE: "WRITE"}
        self.action_titles = {
            READ: "Read a patient's most recent lab results",
            WRITE: "Insert a lab result for a patient",
        }
        self.items = {RESULT_COUNT: "patient result count"}

    def mix(self, config: EHRConfig) -> dict[str, float]:
        return resolve_mix(config.workload.mix)

    def interarrival_ms(self, config: EHRConfig) -> float:
        return config.workload.interarrivaltime

    def fragment_sizes(self, config: EHRConfig, capacities: Sequence[float]) -> list[int]:
        ehr = config
        owner = fragment_owner(ehr.database, ehr.workload.theta, capacities)
        return np.bincount(owner, minlength=len(capacities)).tolist()  # type: ignore[no-any-return]

    def check_fragments(self, config: EHRConfig, sizes: Sequence[int]) -> None:
        if min(sizes) < 1:
            raise UserError(
                f"invalid config: ehr.database.patients: {config.database.patients} "
                f"patients over {len(sizes)} fragments leaves one empty; raise patients or "
                "use fewer agents"
            )

    def memory_bytes(self, config: EHRConfig) -> tuple[int, int]:
        n = config.database.patients
        return n * COORDINATOR_PATIENT_BYTES, n * LOAD_PATIENT_BYTES

    def create_schema(self, config: EHRConfig, binding: EHRBinding) -> None:
        binding.create_schema(config.database)

    def fragment(
        self, config: EHRConfig, capacities: Sequence[float], index: int, binding: EHRBinding
    ) -> EHRFragment:
        return EHRFragment(config, capacities, index, binding)


WORKLOAD: sdk.Workload[EHRConfig, EHRBinding] = EHRWorkload()
