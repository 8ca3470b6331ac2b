"""Strudel's Auction benchmark (Strudel 5.3, 8.5) as a workload of the SDK (bgbench.sdk).

Users sell auction items and sale items, bid on auction items and buy sale items; they
view items, the items of a seller, their bids, winning bids and purchases
(session_defs.py lists the interactions). A bid lives in its item's entity group (Strudel
Figure 2) and is stored by one transaction on that group (Figure 4): read the item, and
if the bid is above its max bid, insert it, raise the max bid and the bid count. Every
write is a transaction played under the workload's retry policy (`workload.retry`,
sdk.RetryPolicy), so the bindings' aborts and the policy's retries are measured per
interaction.

A unit of the mix is a single interaction or a session: sessions are data
(bgbench.workloads.sessions) whose steps are the interactions, with outcomes (a lost
bid, a sold-out item, an empty listing) that pick the next state. The built-in sessions
are in session_defs.py; users add their own in `auction.workload.sessions`.

The socialite is a user, drawn Zipfian (θ = zipfianmean) from the fragment; with
`exclusive` one loop acts as a user at a time. Items are shared: many users bid on the
same item at once, which is what makes transactions conflict.

Validated through the tracked items of picture.py (bid counts, the bids an item read
returns, max bids, quantities, listings per seller, bids per bidder, purchases per
buyer): a lost update or a torn transaction makes some later read disagree with every
order of the committed transactions. A transaction of unknown outcome leaves the
fragment uncertain: the next run reloads.

Registered as the entry point `auction` of the group `bgbench.workloads`; its bindings
are the group `bgbench.auction_stores` (store.py).
"""

import random
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any

import numpy as np

from bgbench import sdk
from bgbench.errors import UserError
from bgbench.sdk import InitialValues, Progress, Recorder, Timer
from bgbench.workloads.auction import interactions as steps
from bgbench.workloads.auction.config import AuctionConfig, resolve_mix
from bgbench.workloads.auction.generator import ADJECTIVES, NOUNS, FragmentData, fragment_owner
from bgbench.workloads.auction.interactions import AuctionContext, Visit
from bgbench.workloads.auction.picture import ITEM_TITLES, Picture
from bgbench.workloads.auction.session_defs import BUILTIN_SESSIONS, INTERACTIONS
from bgbench.workloads.auction.store import (
    ENTRY_POINT_GROUP,
    AsyncAuctionConnection,
    AuctionBinding,
)
from bgbench.workloads.sessions import Machine, SessionDef

DRAW_BATCH = 1024
CLAIM_ATTEMPTS = 64

# What one user costs: 16 B of fragment layout per user in the coordinator; in the load
# processes together, the picture (dict entries per item and per user: 1.5 kB per user
# measured with tracemalloc at 10^5 users, the default item counts) and a batch of rows.
COORDINATOR_USER_BYTES = 24
LOAD_USER_BYTES = 2_000


class AuctionPlayer:
    """One socialite loop: draws users and plays interactions and sessions."""

    def __init__(
        self,
        fragment: "AuctionFragment",
        timer: Timer[AsyncAuctionConnection],
        seed: Sequence[int],
        units: Sequence[str],
    ) -> None:
        wl = fragment.config.workload
        self.fragment = fragment
        self.timer = timer
        self.rng = random.Random(str(list(seed)))
        self.retry = wl.retry
        self.think_s = wl.thinktime / 1000.0
        self.bid_step = wl.bid_step
        self.buy_most = wl.buy_most
        self.sale_quantity = wl.sale_quantity
        self._draw = _drawer(fragment.data, seed)
        self._busy = fragment.busy
        self._exclusive = wl.exclusive
        machines = fragment.machines
        self.units: list[sdk.Unit] = [self._unit(name, machines) for name in units]

    def _unit(self, name: str, machines: Mapping[str, Machine[Visit]]) -> sdk.Unit:
        if name in machines:
            play = machines[name].play

            def session(ctx: AuctionContext, user: int) -> Coroutine[Any, Any, Any]:
                v = Visit(self, ctx, user)
                return play(v, ctx.rng, v.pause)

            return session
        step = steps.STEPS[name]

        def single(ctx: AuctionContext, user: int) -> Coroutine[Any, Any, Any]:
            return step(Visit(self, ctx, user))  # type: ignore[return-value]

        return single

    @property
    def picture(self) -> Picture:
        return self.fragment.picture  # a reload replaces it

    def draw(self) -> int:
        """A user of the fragment, Zipfian: the seller a listing shows."""
        return self._draw()

    def pick_item(self, items: Mapping[int, list[int]]) -> tuple[int, int] | None:
        """(seller, item_no) of an item of a Zipfian-drawn seller who has any."""
        for _ in range(steps.PICKS):
            seller = self._draw()
            mine = items.get(seller)
            if mine:
                return seller, self.rng.choice(mine)
        return None

    def new_title(self, rng: random.Random) -> str:
        return f"{rng.choice(ADJECTIVES)} {rng.choice(NOUNS)}"

    def acquire(self) -> int | None:
        if not self._exclusive:
            return self._draw()
        claim = object()  # unique to this call; dict.setdefault claims atomically
        for _ in range(CLAIM_ATTEMPTS):
            user = self._draw()
            if self._busy.setdefault(user, claim) is claim:
                return user
        return None

    def release(self, user: int) -> None:
        if self._exclusive:
            self._busy.pop(user, None)


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


def machines(config: AuctionConfig) -> dict[str, Machine[Visit]]:
    """The built-in sessions and the user's, compiled over the interactions."""
    defs: dict[str, SessionDef] = {**BUILTIN_SESSIONS, **config.workload.sessions}
    return {name: Machine(name, d, steps.STEPS) for name, d in defs.items()}


class AuctionFragment:
    """One fragment of the Auction database in the load process that owns it, and the
    workload's picture of it."""

    def __init__(
        self,
        config: AuctionConfig,
        capacities: Sequence[float],
        index: int,
        binding: AuctionBinding,
    ) -> None:
        self.config = config
        self.data = FragmentData(config.database, config.workload.zipfianmean, capacities, index)
        self.index = index
        self.size = self.data.size
        if self.size < 2:
            raise UserError(
                f"invalid config: auction.database.users: fragment {index} got "
                f"{self.size} user(s), fewer than 2; raise users or use fewer agents or "
                "load processes"
            )
        self.binding = binding
        self.uncertain = False  # a transaction of unknown outcome: the store is not known
        self.busy: dict[int, object] = {}  # user -> the claim of the loop acting as them
        self.machines = machines(config)
        self.picture = Picture(self.data)
        self._loaded = False

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
        self.picture = Picture(self.data)
        self.uncertain = False
        self._loaded = True

    def ready(self, policy: str, progress: Progress) -> str:
        if not self._loaded:
            raise UserError("the fragment is not loaded: prepare before running")
        if policy == "reload":
            self._reload(progress)
            return "reload"
        if policy == "readback":
            raise UserError(
                "the auction workload cannot read its state back (sale items and purchases "
                "are not read back): use rating.state carry or reload"
            )
        if policy != "carry":
            raise UserError(f"unknown start state {policy!r}: use carry, reload or readback")
        if self.uncertain:
            self._reload(progress)
            return "reload (a transaction's outcome was unknown in the previous experiment)"
        return "carry"

    def initial_values(self) -> InitialValues:
        return self.picture.initial_values()

    def player(
        self,
        conn: Any,
        recorder: Recorder,
        runner: int,
        seed: Sequence[int],
        units: Sequence[str],
    ) -> AuctionPlayer:
        view = sdk.connection_for(self.binding, conn, AsyncAuctionConnection)
        return AuctionPlayer(self, Timer(view, recorder, runner), seed, units)

    def summary_payload(self) -> str:
        return ""


class AuctionWorkload:
    def __init__(self) -> None:
        self.name = "auction"
        self.description = (
            "Strudel's auction benchmark: users sell, bid and buy in entity-group "
            "transactions, in sessions driven by the results"
        )
        self.config_model = AuctionConfig
        self.aliases = {
            "users": "database.users",
            "usercount": "database.users",
            "mix": "workload.mix",
            "zipfianmean": "workload.zipfianmean",
            "thinktime": "workload.thinktime",
            "interarrivaltime": "workload.interarrivaltime",
            "attempts": "workload.retry.attempts",
        }
        self.scale_parameter = "database.users"
        self.store_group = ENTRY_POINT_GROUP
        self.actions = dict(enumerate(INTERACTIONS))
        self.action_titles = {
            code: name.replace("_", " ").capitalize() for code, name in self.actions.items()
        }
        self.items = dict(ITEM_TITLES)

    def mix(self, config: AuctionConfig) -> dict[str, float]:
        return resolve_mix(config.workload.mix, config.workload.sessions)

    def interarrival_ms(self, config: AuctionConfig) -> float:
        return config.workload.interarrivaltime

    def fragment_sizes(self, config: AuctionConfig, capacities: Sequence[float]) -> list[int]:
        owner = fragment_owner(config.database, config.workload.zipfianmean, capacities)
        return np.bincount(owner, minlength=len(capacities)).tolist()  # type: ignore[no-any-return]

    def check_fragments(self, config: AuctionConfig, sizes: Sequence[int]) -> None:
        if min(sizes) < 2:
            raise UserError(
                f"invalid config: auction.database.users: {config.database.users} users "
                f"over {len(sizes)} fragments leaves one with fewer than 2; raise users or "
                "use fewer agents"
            )

    def memory_bytes(self, config: AuctionConfig) -> tuple[int, int]:
        n = config.database.users
        return n * COORDINATOR_USER_BYTES, n * LOAD_USER_BYTES

    def create_schema(self, config: AuctionConfig, binding: AuctionBinding) -> None:
        binding.create_schema(config.database)

    def fragment(
        self,
        config: AuctionConfig,
        capacities: Sequence[float],
        index: int,
        binding: AuctionBinding,
    ) -> AuctionFragment:
        return AuctionFragment(config, capacities, index, binding)


WORKLOAD: sdk.Workload[AuctionConfig, AuctionBinding] = AuctionWorkload()
