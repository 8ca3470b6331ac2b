"""BG as a workload of the SDK (bgbench.sdk): its settings, names, fragments, players.

Registered as the entry point `bg` of the group `bgbench.workloads`; its bindings are
the group `bgbench.bg_stores`.
"""

import itertools
import random
import time
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import Any

import numpy as np

from bgbench import sdk
from bgbench.errors import UserError
from bgbench.sdk import InitialValues, Progress, Recorder
from bgbench.workloads.bg.actions import ACTION_NAMES, ITEM_NAMES, Action, Item
from bgbench.workloads.bg.bookkeeping import FragmentState
from bgbench.workloads.bg.config import BGConfig
from bgbench.workloads.bg.generator import Fragment, FragmentPlan
from bgbench.workloads.bg.mixes import resolve_mix
from bgbench.workloads.bg.sessions import Actor, UnitFn, unit_table
from bgbench.workloads.bg.store import (
    ENTRY_POINT_GROUP,
    AsyncBGConnection,
    BGBinding,
    FragmentContents,
)
from bgbench.workloads.bg.timed import TimedConnection
from bgbench.workloads.zipf import LocalZipf, assign_fragments

DRAW_BATCH = 1024

# What one member costs in a load process (generator plus BG's picture of the fragment),
# measured with benchmarks-style runs: about 120 B + 170 B per relationship + 300 B per
# resource; rounded up so the estimate errs on the side of refusing.
MEMBER_BYTES = 200
RELATIONSHIP_BYTES = 200
RESOURCE_BYTES = 320
COMMENT_BYTES = 16
COORDINATOR_MEMBER_BYTES = 16  # the fragment layout: a few arrays over all members


class BGPlayer(Actor):
    """An Actor as the engine sees it: who acts (D-Zipfian, exclusive) and the mix's units."""

    def __init__(
        self, actor_args: tuple[Any, ...], unit_names: Sequence[str], table: dict[str, UnitFn]
    ) -> None:
        super().__init__(*actor_args)
        self.timer = self.conn
        self.units: list[sdk.Unit] = [partial(table[name], self) for name in unit_names]
        # Bound once: the engine calls these for every unit, with no frame of ours between.
        self.acquire = partial(self.state.acquire_socialite, self.draw)
        self.release = self.state.release_socialite


def _drawer(zipf: LocalZipf, seed: Sequence[int]) -> Callable[[], int]:
    """Draws of members, DRAW_BATCH at a time. The draw is a C iterator's __next__: no
    Python frame per draw (a closure's was 4% of the null store's action)."""
    np_rng = np.random.default_rng(list(seed))

    def batches() -> Iterator[list[int]]:
        while True:  # each batch last to first, as the draws of a popped list came before
            yield zipf.draw(np_rng, DRAW_BATCH)[::-1].tolist()

    return itertools.chain.from_iterable(batches()).__next__


class BGFragment:
    """One fragment of BG's social network in the load process that owns it."""

    def __init__(
        self, config: BGConfig, capacities: Sequence[float], index: int, binding: BGBinding
    ) -> None:
        self.config = config
        self.fragment = Fragment(
            config.database, FragmentPlan(tuple(capacities), config.workload.zipfianmean), index
        )
        self.index = index
        self.size = self.fragment.size
        self.binding = binding
        self.threaded = binding.concurrency != "asyncio"
        self.state: FragmentState | None = None
        self.table = unit_table(config.workload)
        self._zipf: LocalZipf | None = None  # made once, shared by every runner's drawer

    @property
    def uncertain(self) -> bool:
        return self.state is not None and self.state.uncertain

    @uncertain.setter
    def uncertain(self, value: bool) -> None:
        if self.state is not None:
            self.state.uncertain = value

    def _new_state(self, contents: FragmentContents | None = None) -> FragmentState:
        return FragmentState(
            self.fragment, self.config.workload.exclusive, contents, threaded=self.threaded
        )

    def load(self, create_schema: bool, progress: Progress) -> dict[str, float]:
        phases: dict[str, float] = {}
        t0 = time.perf_counter()
        if create_schema:
            self.binding.create_schema(self.config.database)
        else:
            self.binding.use_schema(self.config.database)
        progress()
        t1 = time.perf_counter()
        phases["schema"] = t1 - t0
        self._load(progress)
        phases["rows"] = time.perf_counter() - t1
        return phases

    def _load(self, progress: Progress) -> None:
        self.fragment.progress = progress
        try:
            self.binding.load_fragment(self.fragment)
        finally:
            self.fragment.progress = _quiet
        progress()
        self.state = self._new_state()

    def ready(self, policy: str, progress: Progress) -> str:
        if self.state is None:
            raise UserError("the fragment is not loaded: prepare before running")
        if policy == "reload":
            self._load(progress)
            return "reload"
        if policy == "readback":
            if not self.binding.can_read_back:
                raise UserError(
                    f"store {self.binding.name} cannot read its state back: "
                    "use rating.state carry or reload"
                )
            self.fragment.progress = progress
            try:
                contents = self.binding.read_back(self.fragment)
            finally:
                self.fragment.progress = _quiet
            progress()
            self.state = self._new_state(contents)
            return "readback"
        if policy != "carry":
            raise UserError(f"unknown start state {policy!r}: use carry, reload or readback")
        if self.state.uncertain:
            self._load(progress)  # a write of unknown outcome: only a reload makes it exact
            return "reload (a write failed in the previous experiment)"
        return "carry"

    @property
    def local_zipf(self) -> LocalZipf:
        if self._zipf is None:
            self._zipf = self.fragment.local_zipf()
        return self._zipf

    def initial_values(self) -> InitialValues:
        assert self.state is not None
        rids, comments = self.state.comment_counts()
        members = self.fragment.members
        return InitialValues(
            {
                Item.FRIEND_COUNT: (members, self.state.friend_counts()),
                Item.PENDING_COUNT: (members, self.state.pending_counts()),
                Item.RESOURCE_COUNT: (members, self.fragment.initial_resource_count),
                Item.COMMENT_COUNT: (rids, comments),
            }
        )

    def player(
        self,
        conn: Any,
        recorder: Recorder,
        runner: int,
        seed: Sequence[int],
        units: Sequence[str],
    ) -> BGPlayer:
        assert self.state is not None
        conn = sdk.connection_for(self.binding, conn, AsyncBGConnection)
        wl = self.config.workload
        actor_args = (
            TimedConnection(conn, recorder, runner),
            self.state,
            _drawer(self.local_zipf, seed),
            random.Random(str(list(seed))),
            wl.thinktime,
            wl.topk,
            self.fragment.comment_text,
        )
        return BGPlayer(actor_args, units, self.table)

    def summary_payload(self) -> str:
        return ""


def _quiet() -> None:
    pass


class BGWorkload:
    def __init__(self) -> None:
        self.name = "bg"
        self.description = (
            "BG's social network (Barahmand and Ghandeharizadeh): 11 actions, 8 sessions"
        )
        self.config_model = BGConfig
        database = (
            "usercount",
            "friendcountperuser",
            "resourcecountperuser",
            "confperc",
            "insertimage",
            "imagesize",
            "commentcountperresource",
            "attrcount",
            "attrlength",
            "friendship_distribution",
            "resource_distribution",
            "relationship_theta",
            "comments",
        )
        self.aliases = {
            **{name: f"database.{name}" for name in database},
            **{n: f"workload.{n}" for n in ("zipfianmean", "thinktime", "interarrivaltime", "mix")},
        }
        self.scale_parameter = "database.usercount"
        self.store_group = ENTRY_POINT_GROUP
        self.actions = {int(a): a.name for a in Action}
        self.action_titles = {int(a): title for a, title in ACTION_NAMES.items()}
        self.items = {int(i): name for i, name in ITEM_NAMES.items()}

    def mix(self, config: BGConfig) -> dict[str, float]:
        wl = config.workload
        return resolve_mix(wl.mix, wl.sessions)

    def interarrival_ms(self, config: BGConfig) -> float:
        return config.workload.interarrivaltime

    def fragment_sizes(self, config: BGConfig, capacities: Sequence[float]) -> list[int]:
        bg = config
        owner = assign_fragments(bg.database.usercount, bg.workload.zipfianmean, capacities)
        return np.bincount(owner, minlength=len(capacities)).tolist()  # type: ignore[no-any-return]

    def check_fragments(self, config: BGConfig, sizes: Sequence[int]) -> None:
        db = config.database
        smallest = min(sizes)
        if smallest <= db.members_per_relationship:
            zipfian = db.friendship_distribution == "zipfian"
            raise UserError(
                f"invalid config: bg.database.usercount: {db.usercount} members over "
                f"{len(sizes)} fragments leaves {smallest} in the smallest, not more than "
                f"{'twice ' if zipfian else ''}friendcountperuser={db.friendcountperuser}"
                f"{' (zipfian friendships)' if zipfian else ''}; "
                "raise usercount or use fewer agents"
            )

    def memory_bytes(self, config: BGConfig) -> tuple[int, int]:
        db = config.database
        per_member = (
            MEMBER_BYTES
            + RELATIONSHIP_BYTES * db.friendcountperuser
            + db.resourcecountperuser
            * (RESOURCE_BYTES + COMMENT_BYTES * db.commentcountperresource)
        )
        return db.usercount * COORDINATOR_MEMBER_BYTES, db.usercount * per_member

    def create_schema(self, config: BGConfig, binding: BGBinding) -> None:
        binding.create_schema(config.database)

    def fragment(
        self, config: BGConfig, capacities: Sequence[float], index: int, binding: BGBinding
    ) -> BGFragment:
        return BGFragment(config, capacities, index, binding)


WORKLOAD: sdk.Workload[BGConfig, BGBinding] = BGWorkload()
