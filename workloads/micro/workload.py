"""Strudel's Micro benchmark (Tatemura et al., section 5.3) as a workload of the SDK.

A user's content in entity groups (generator.py): personal items (read and written by
their owner only), public items (written by their owner, read by anyone), shared items
(in groups anyone reads and writes) and messages (sent to a user's inbox). Eight
interactions, each one transaction on one group (store.py): UPDATE_PERSONAL,
UPDATE_SHARED and UPDATE_PUBLIC add 1 to `items_per_txn` distinct items of the group
(and their sum to its total); READ_PERSONAL, READ_SHARED, READ_PUBLIC (another user's)
and READ_MESSAGES read a group; SEND_MESSAGE adds a message to another user's inbox.
Updates and sends go through `ctx.transaction` with the settings' retry policy, so the
store's aborts are retried, counted by cause and their back-off timed; reads too (a
snapshot read may be refused). Section 8's workloads are mixes and sizes (config.py).

The socialite is a user of the fragment, drawn uniformly or Zipfian; with `exclusive`
(the default) one loop acts as a user at a time, so personal updates never conflict
(Figure 9's disjoint pools). Shared groups are drawn uniformly from the fragment's.

Validation. Tracked items: ITEM (id = group * MAX_ITEMS + item: its value), GROUP_TOTAL
(id = group: the stored total), GROUP_SUM (id = group: the sum of the items one read saw,
derived) and INBOX (id = inbox group: its message count). An update logs the values it
read before writing as reads of its ITEMs, and +1 on each item, +k on the group's total
and sum; a read logs the total, the sum and `items_per_txn` of the items it saw. A lost
update (two commits that both read v and wrote v+1) leaves later reads one short of
every serial order; a torn commit (some items applied, not others, or the total without
them) makes the sum, total and items disagree with every order: the validator flags both.
Initial values are the generated ones plus every committed change since; a transaction of
unknown outcome makes the picture uncertain and the next carried run reloads.

Registered as the entry point `micro` of the group `bgbench.workloads`; its bindings are
the group `bgbench.micro_stores` (store.py).
"""

import random
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from bgbench import sdk
from bgbench.errors import UserError
from bgbench.sdk import InitialValues, Progress, Recorder, Timer, UnitContext
from bgbench.sdk.transactions import COMMITTED, FAILED
from bgbench.workloads.micro.config import (
    MAX_ITEMS,
    OTHER_USER_UNITS,
    SHARED_UNITS,
    UNITS,
    MicroConfig,
    resolve_mix,
)
from bgbench.workloads.micro.generator import (
    FragmentData,
    fragment_user_counts,
    pairwise_sizes,
    shared_bounds,
)
from bgbench.workloads.micro.store import (
    ENTRY_POINT_GROUP,
    AsyncMicroConnection,
    GroupView,
    MicroBinding,
)

# Action codes, in UNITS order.
(UPDATE_PERSONAL, READ_PERSONAL, UPDATE_SHARED, READ_SHARED,
 UPDATE_PUBLIC, READ_PUBLIC, SEND_MESSAGE, READ_MESSAGES) = range(8)  # fmt: skip
ITEM, GROUP_TOTAL, GROUP_SUM, INBOX = range(4)  # tracked item kinds
DELTA = 1  # what an update adds to each item
DRAW_BATCH = 1024
CLAIM_ATTEMPTS = 64
OTHER_USER_ATTEMPTS = 16

# What one user costs with the default sizes (10 + 10 items, a share of 100 shared groups
# of 40): the fragment layout is 16 B per user in the coordinator and each load process;
# a fragment's picture adds 16 B per tracked item and a batch of rows.
COORDINATOR_USER_BYTES = 24
LOAD_ITEM_BYTES = 48

MicroContext = UnitContext[Timer[AsyncMicroConnection]]
Changes = tuple[sdk.Item, ...]


class MicroPlayer:
    """One socialite loop: draws users and plays the interactions."""

    def __init__(
        self,
        fragment: "MicroFragment",
        timer: Timer[AsyncMicroConnection],
        seed: Sequence[int],
        units: Sequence[str],
    ) -> None:
        self.fragment = fragment
        self.timer = timer
        self.rng = random.Random(str(list(seed)))
        wl = fragment.config.workload
        self.k = wl.items_per_txn
        self.policy = wl.retry
        self._draw = _drawer(fragment.data, seed)
        self._busy = fragment.busy
        self._exclusive = wl.exclusive
        db, keys = fragment.config.database, fragment.data.keys
        self._shared = fragment.data.shared.tolist()
        self.keys = keys
        self.sizes = (db.personal_items, db.shared_items, db.public_items)
        plays: dict[str, sdk.Unit] = {
            "UPDATE_PERSONAL": self.update_personal,
            "READ_PERSONAL": self.read_personal,
            "UPDATE_SHARED": self.update_shared,
            "READ_SHARED": self.read_shared,
            "UPDATE_PUBLIC": self.update_public,
            "READ_PUBLIC": self.read_public,
            "SEND_MESSAGE": self.send_message,
            "READ_MESSAGES": self.read_messages,
        }
        self.units = [plays[u] for u in units]

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

    def _other_user(self, user: int) -> int:
        for _ in range(OTHER_USER_ATTEMPTS):
            other = self._draw()
            if other != user:
                return other
        users = self.fragment.data.users
        return int(users[0] if users[0] != user else users[1])  # check_fragments: >= 2

    def _shared_group(self, ctx: MicroContext) -> int:
        return self.keys.shared(self._shared[ctx.rng.randrange(len(self._shared))])

    # -- the interactions ---------------------------------------------------------------------
    async def update_personal(self, ctx: MicroContext, user: int) -> object:
        return await self._update(ctx, UPDATE_PERSONAL, self.keys.personal(user), self.sizes[0])

    async def update_shared(self, ctx: MicroContext, user: int) -> object:
        return await self._update(ctx, UPDATE_SHARED, self._shared_group(ctx), self.sizes[1])

    async def update_public(self, ctx: MicroContext, user: int) -> object:
        return await self._update(ctx, UPDATE_PUBLIC, self.keys.public(user), self.sizes[2])

    async def read_personal(self, ctx: MicroContext, user: int) -> object:
        return await self._read(ctx, READ_PERSONAL, self.keys.personal(user), self.sizes[0])

    async def read_shared(self, ctx: MicroContext, user: int) -> object:
        return await self._read(ctx, READ_SHARED, self._shared_group(ctx), self.sizes[1])

    async def read_public(self, ctx: MicroContext, user: int) -> object:
        group = self.keys.public(self._other_user(user))
        return await self._read(ctx, READ_PUBLIC, group, self.sizes[2])

    async def send_message(self, ctx: MicroContext, user: int) -> object:
        inbox = self.keys.inbox(self._other_user(user))
        body = ctx.rng.getrandbits(31)
        conn = ctx.timer.conn
        changes: Changes = ((INBOX, inbox, 1),)
        outcome = await ctx.transaction(
            SEND_MESSAGE,
            lambda: conn.send_message(inbox, user, body),
            self.policy,
            changes=lambda _: changes,
            if_unknown=changes,
        )
        return self.fragment.finish(outcome.status, changes)

    async def read_messages(self, ctx: MicroContext, user: int) -> object:
        inbox = self.keys.inbox(user)
        conn = ctx.timer.conn

        def seen(view: GroupView) -> Iterable[sdk.Item]:
            return ((INBOX, inbox, view.messages),)

        outcome = await ctx.transaction(
            READ_MESSAGES, lambda: conn.read_group(inbox), self.policy, seen
        )
        return outcome.status == COMMITTED

    async def _update(self, ctx: MicroContext, code: int, group: int, size: int) -> object:
        items = ctx.rng.sample(range(size), self.k)
        base = group * MAX_ITEMS
        k = len(items)
        changes: Changes = (
            *((ITEM, base + i, DELTA) for i in items),
            (GROUP_TOTAL, group, DELTA * k),
            (GROUP_SUM, group, DELTA * k),
        )
        conn = ctx.timer.conn

        def before(values: list[int]) -> Iterable[sdk.Item]:
            return ((ITEM, base + i, v) for i, v in zip(items, values, strict=False))

        outcome = await ctx.transaction(
            code,
            lambda: conn.update_items(group, items, DELTA),
            self.policy,
            before,
            lambda _: changes,
            changes,
        )
        return self.fragment.finish(outcome.status, changes)

    async def _read(self, ctx: MicroContext, code: int, group: int, size: int) -> object:
        shown = ctx.rng.sample(range(size), min(self.k, size))
        base = group * MAX_ITEMS
        conn = ctx.timer.conn

        def seen(view: GroupView) -> Iterable[sdk.Item]:
            values = view.values
            return (
                (GROUP_TOTAL, group, view.total),
                (GROUP_SUM, group, sum(values.values())),
                *((ITEM, base + i, values.get(i, -1)) for i in shown),
            )

        outcome = await ctx.transaction(code, lambda: conn.read_group(group), self.policy, seen)
        return outcome.status == COMMITTED


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


class MicroFragment:
    """One fragment of the Micro database in the load process that owns it, and the
    workload's picture of it: every tracked item's value."""

    def __init__(
        self, config: MicroConfig, capacities: Sequence[float], index: int, binding: MicroBinding
    ) -> None:
        self.config = config
        self.data = FragmentData(config.database, config.workload.theta, capacities, index)
        self.index = index
        self.size = self.data.size
        if self.size == 0:
            raise UserError(
                f"invalid config: micro.database.users: fragment {index} got no user; "
                "raise users or use fewer agents or load processes"
            )
        self.binding = binding
        self.uncertain = False  # a transaction of unknown outcome: the picture may be wrong
        self.busy: dict[int, object] = {}  # user -> the claim of the loop acting as it
        self._loaded = False
        self._lock = threading.Lock()
        self._base: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._changed: dict[tuple[int, int], int] = {}  # (kind, id) -> committed deltas since
        self._set_picture(None)

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
        self._set_picture(None)
        self._loaded = True

    def _set_picture(self, stored: dict[int, GroupView] | None) -> None:
        """The generated values, or what `stored` (a read-back) holds."""
        item_ids, item_vals, groups, totals = self.data.initial_items()
        sums = totals.copy()
        inboxes = self.data.inboxes
        messages = np.zeros(len(inboxes), dtype=np.int64)
        if stored is not None:
            item_vals, totals, sums, messages = _stored_picture(stored, item_ids, groups, inboxes)
        with self._lock:
            self._base = {
                ITEM: (item_ids, item_vals),
                GROUP_TOTAL: (groups, totals),
                GROUP_SUM: (groups, sums),
                INBOX: (inboxes, messages),
            }
            self._changed = {}
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
            self._set_picture(stored)
            return "readback"
        if policy != "carry":
            raise UserError(f"unknown start state {policy!r}: use carry, reload or readback")
        if self.uncertain:
            self._reload(progress)  # a transaction of unknown outcome: only a reload is exact
            return "reload (a transaction's outcome was unknown in the previous experiment)"
        return "carry"

    def initial_values(self) -> InitialValues:
        with self._lock:
            base = {kind: (ids, values.copy()) for kind, (ids, values) in self._base.items()}
            changed = list(self._changed.items())
        for (kind, item_id), delta in changed:
            ids, values = base[kind]
            values[np.searchsorted(ids, item_id)] += delta
        return InitialValues(base)

    # -- playing ------------------------------------------------------------------------------
    def finish(self, status: str, changes: Changes) -> bool:
        """Fold a transaction's outcome into the picture; True when it committed."""
        if status == COMMITTED:
            with self._lock:
                for kind, item_id, delta in changes:
                    key = (kind, item_id)
                    self._changed[key] = self._changed.get(key, 0) + delta
            return True
        if status == FAILED:
            self.uncertain = True
        return False

    def player(
        self,
        conn: Any,
        recorder: Recorder,
        runner: int,
        seed: Sequence[int],
        units: Sequence[str],
    ) -> MicroPlayer:
        view = sdk.connection_for(self.binding, conn, AsyncMicroConnection)
        return MicroPlayer(self, Timer(view, recorder, runner), seed, units)

    def summary_payload(self) -> str:
        return ""


def _stored_picture(
    stored: dict[int, GroupView], item_ids: np.ndarray, groups: np.ndarray, inboxes: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Item values, totals, sums and message counts as a read-back found them (a group or
    an item the store lacks reads as -1: no run can explain it)."""
    missing = GroupView({}, -1, -1)
    item_vals = np.array(
        [stored.get(int(i) // MAX_ITEMS, missing).values.get(int(i) % MAX_ITEMS, -1)
         for i in item_ids.tolist()],
        dtype=np.int64,
    )  # fmt: skip
    views = [stored.get(g, missing) for g in groups.tolist()]
    totals = np.array([v.total for v in views], dtype=np.int64)
    sums = np.array([sum(v.values.values()) for v in views], dtype=np.int64)
    messages = np.array([stored.get(g, missing).messages for g in inboxes.tolist()], np.int64)
    return item_vals, totals, sums, messages


class MicroWorkload:
    def __init__(self) -> None:
        self.name = "micro"
        self.description = (
            "Strudel's Micro benchmark: personal, shared, public and message items in "
            "entity groups, updated by transactions retried under a policy"
        )
        self.config_model = MicroConfig
        self.aliases = {
            "usercount": "database.users",
            "personalitems": "database.personal_items",
            "sharedgroups": "database.shared_groups",
            "shareditems": "database.shared_items",
            "publicitems": "database.public_items",
            "mix": "workload.mix",
            "itemspertxn": "workload.items_per_txn",
            "requestdistribution": "workload.requestdistribution",
            "zipfianmean": "workload.zipfianmean",
            "exclusive": "workload.exclusive",
            "thinktime": "workload.thinktime",
            "retryattempts": "workload.retry.attempts",
            "backoffbase": "workload.retry.base_ms",
            "backoffcap": "workload.retry.cap_ms",
        }
        self.scale_parameter = "database.users"
        self.store_group = ENTRY_POINT_GROUP
        self.actions = dict(enumerate(UNITS))
        self.action_titles = {
            UPDATE_PERSONAL: "Update a user's personal items",
            READ_PERSONAL: "Read a user's personal items",
            UPDATE_SHARED: "Update items of a shared group",
            READ_SHARED: "Read a shared group",
            UPDATE_PUBLIC: "Update a user's public items",
            READ_PUBLIC: "Read another user's public items",
            SEND_MESSAGE: "Send a message to another user",
            READ_MESSAGES: "Read a user's inbox",
        }
        self.items = {
            ITEM: "item value",
            GROUP_TOTAL: "group total",
            GROUP_SUM: "group sum of items",
            INBOX: "inbox messages",
        }

    def mix(self, config: MicroConfig) -> dict[str, float]:
        return resolve_mix(config.workload.mix)

    def interarrival_ms(self, config: MicroConfig) -> float:
        return config.workload.thinktime

    def fragment_sizes(self, config: MicroConfig, capacities: Sequence[float]) -> list[int]:
        return fragment_user_counts(config.database, config.workload.theta, capacities)

    def check_fragments(self, config: MicroConfig, sizes: Sequence[int]) -> None:
        db, mix = config.database, self.mix(config)
        fewest = 2 if any(u in mix for u in OTHER_USER_UNITS) else 1
        if min(sizes) < fewest:
            raise UserError(
                f"invalid config: micro.database.users: {db.users} users over {len(sizes)} "
                f"fragments leaves one with fewer than {fewest}; raise users or use fewer "
                "agents"
            )
        if any(u in mix for u in SHARED_UNITS):
            shared = pairwise_sizes(shared_bounds(db.shared_groups, sizes))
            if min(shared) < 1:
                raise UserError(
                    f"invalid config: micro.database.shared_groups: {db.shared_groups} shared "
                    f"groups over {len(sizes)} fragments leaves one without; raise "
                    "shared_groups or use fewer agents"
                )

    def memory_bytes(self, config: MicroConfig) -> tuple[int, int]:
        db = config.database
        items = db.users * (db.personal_items + db.public_items + 3)
        items += db.shared_groups * (db.shared_items + 2)
        return db.users * COORDINATOR_USER_BYTES, items * LOAD_ITEM_BYTES

    def create_schema(self, config: MicroConfig, binding: MicroBinding) -> None:
        binding.create_schema(config.database)

    def fragment(
        self, config: MicroConfig, capacities: Sequence[float], index: int, binding: MicroBinding
    ) -> MicroFragment:
        return MicroFragment(config, capacities, index, binding)


WORKLOAD: sdk.Workload[MicroConfig, MicroBinding] = MicroWorkload()
