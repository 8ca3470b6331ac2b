"""The bank workload: accounts in entity groups, four actions and one session (README.md).

An account holds a balance (delta writes) and a transfer limit (absolute writes). A
fragment owns whole groups, so a transfer stays in it, and keeps its own picture of every
item (loaded values plus the writes that succeeded): `carry` never reads the store.
"""

import itertools
import random
import threading
import time
from collections.abc import Iterable, Sequence
from typing import Any, Literal, Protocol

import numpy as np
from pydantic import BaseModel, Field, PositiveFloat, field_validator

from bgbench import sdk

VB, DEP, XFER, LIMIT = 0, 1, 2, 3  # action codes
BALANCE, TRANSFER_LIMIT = 0, 1  # tracked item kinds
Unit = Literal["VB", "DEP", "XFER", "LIMIT", "PAY"]  # the actions, and the session PAY
MIXES: dict[str, dict[Unit, float]] = {
    "banking": {"VB": 0.4, "DEP": 0.15, "XFER": 0.25, "LIMIT": 0.1, "PAY": 0.1},
    "readonly": {"VB": 1.0},
    "sessions": {"PAY": 1.0},
}


class BankConfig(BaseModel, extra="forbid", allow_inf_nan=False):
    groups: int = Field(100, ge=1, le=1_000_000, description="entity groups in the database")
    group_size: int = Field(10, ge=2, le=1000, description="accounts per entity group")
    balance: int = Field(100, ge=0, le=10**9, description="each account's balance at load")
    max_amount: int = Field(150, ge=1, le=10**9, description="largest amount or limit")
    mix: dict[Unit, PositiveFloat] = Field(
        MIXES["banking"], min_length=1, description="banking, readonly, sessions, or weights"
    )
    thinktime: float = Field(0, ge=0, le=86_400_000, description="ms between PAY's steps")
    interarrivaltime: float = Field(0, ge=0, le=86_400_000)

    @field_validator("mix", mode="before")
    @classmethod
    def _named(cls, mix: object) -> object:  # a mix's name stands for its weights
        if isinstance(mix, str) and mix not in MIXES:
            raise ValueError(f"use {', '.join(MIXES)} or weights of VB, DEP, XFER, LIMIT, PAY")
        return MIXES[mix] if isinstance(mix, str) else mix


class BankConnection(Protocol):  # a connection as the units see it (sdk.connection_for)
    async def view(self, account: int) -> tuple[int, int]: ...
    async def deposit(self, account: int, amount: int) -> None: ...
    async def transfer(self, source: int, target: int, amount: int) -> bool: ...
    async def set_limit(self, account: int, limit: int) -> None: ...


class BankBinding(sdk.StoreBinding, Protocol):  # what the bank needs beyond the engine
    def create_schema(self) -> None: ...
    def load(self, lo: int, hi: int, balance: int, limit: int, progress: sdk.Progress) -> None: ...


Context = sdk.UnitContext[sdk.Timer[BankConnection]]


def account_ranges(config: BankConfig, capacities: Sequence[float]) -> list[tuple[int, int]]:
    """Each fragment's accounts lo..hi-1: whole groups, in proportion to its capacity."""
    total, acc, bounds = sum(capacities), 0.0, [0]
    for capacity in capacities:
        acc += capacity
        bounds.append(round(config.groups * acc / total) * config.group_size)
    bounds[-1] = config.groups * config.group_size
    return list(itertools.pairwise(bounds))


class BankPlayer:
    def __init__(self, fragment: "BankFragment", timer: sdk.Timer[BankConnection],
                 seed: Sequence[int], units: Sequence[str]) -> None:  # fmt: skip
        self.fragment, self.timer, self.rng = fragment, timer, random.Random(str(list(seed)))
        self.most, self.think_s = fragment.config.max_amount, fragment.config.thinktime / 1000
        plays = {"VB": self.view, "DEP": self.deposit, "XFER": self.transfer,
                 "LIMIT": self.set_limit, "PAY": self.pay}  # fmt: skip
        self.units: list[sdk.Unit] = [plays[unit] for unit in units]

    def acquire(self) -> int | None:
        fragment, claim = self.fragment, object()
        for _ in range(64):
            account = self.rng.randrange(fragment.lo, fragment.hi)
            if fragment.busy.setdefault(account, claim) is claim:
                return account
        return None

    def release(self, account: int) -> None:
        self.fragment.busy.pop(account, None)

    async def view(self, ctx: Context, account: int) -> tuple[int, int] | None:
        def seen(row: tuple[int, int]) -> Iterable[sdk.Item]:
            return (BALANCE, account, row[0]), (TRANSFER_LIMIT, account, row[1])

        return await ctx.read(VB, ctx.timer.conn.view(account), seen)

    async def deposit(self, ctx: Context, account: int) -> bool:
        amount = ctx.rng.randint(1, self.most)
        change = ((BALANCE, account, amount),)
        ok = await ctx.write(DEP, ctx.timer.conn.deposit(account, amount), change)
        return self.fragment.settle(ok, change)

    async def transfer(self, ctx: Context, account: int) -> bool | None:
        """True: the store moved the money; False: it refused (nothing logged); None: it failed."""
        size, amount = self.fragment.config.group_size, ctx.rng.randint(1, self.most)
        target = account - account % size + (account + ctx.rng.randrange(1, size)) % size
        moved = ((BALANCE, account, -amount), (BALANCE, target, amount))
        call = ctx.timer.conn.transfer(account, target, amount)
        applied = await ctx.write_from_answer(XFER, call, lambda ok: moved if ok else (), moved)
        self.fragment.settle(applied is not None, moved if applied else ())
        return applied

    async def set_limit(self, ctx: Context, account: int) -> bool:
        limit = ctx.rng.randint(0, self.most)
        new = ((TRANSFER_LIMIT, account, limit),)
        ok = await ctx.write_absolute(LIMIT, ctx.timer.conn.set_limit(account, limit), new)
        return self.fragment.settle(ok, (), new)

    async def pay(self, ctx: Context, account: int) -> bool:
        """The session: view the balance, transfer, view it again."""
        if await self.view(ctx, account) is None or not await ctx.pause(self.think_s):
            return False
        if await self.transfer(ctx, account) is None or not await ctx.pause(self.think_s):
            return False
        return await self.view(ctx, account) is not None


class BankFragment:
    def __init__(self, config: BankConfig, capacities: Sequence[float], index: int,
                 binding: BankBinding) -> None:  # fmt: skip
        self.config, self.index, self.binding = config, index, binding
        self.lo, self.hi = account_ranges(config, capacities)[index]
        self.size, self.uncertain = self.hi - self.lo, False
        self.busy: dict[int, object] = {}  # account -> the claim of the runner acting for it
        self.lock = threading.Lock()  # runners settle their writes into the picture
        self.balances = np.full(self.size, config.balance, dtype=np.int64)
        self.limits = np.full(self.size, config.max_amount, dtype=np.int64)

    def settle(self, ok: bool, deltas: Iterable[sdk.Item], values: Iterable[sdk.Item] = ()) -> bool:
        """Bring a write into the picture (one of unknown outcome makes it uncertain); `ok`."""
        with self.lock:
            self.uncertain |= not ok
            for _, account, delta in deltas if ok else ():
                self.balances[account - self.lo] += delta
            for _, account, value in values if ok else ():
                self.limits[account - self.lo] = value
        return ok

    def load(self, create_schema: bool, progress: sdk.Progress) -> dict[str, float]:
        start = time.perf_counter()
        if create_schema:
            self.binding.create_schema()
        self.binding.load(self.lo, self.hi, self.config.balance, self.config.max_amount, progress)
        with self.lock:
            self.balances[:], self.limits[:] = self.config.balance, self.config.max_amount
            self.uncertain = False
        return {"load": time.perf_counter() - start}

    def ready(self, policy: str, progress: sdk.Progress) -> str:
        """`carry` keeps the picture; `reload`, and `readback` too, load again."""
        if policy == "carry" and not self.uncertain:
            return "carry"
        self.load(False, progress)
        return "reload"

    def initial_values(self) -> sdk.InitialValues:
        ids = np.arange(self.lo, self.hi, dtype=np.int64)
        with self.lock:
            balances, limits = self.balances.copy(), self.limits.copy()
        return sdk.InitialValues({BALANCE: (ids, balances), TRANSFER_LIMIT: (ids, limits)})

    def player(self, conn: Any, recorder: sdk.Recorder, runner: int, seed: Sequence[int],
               units: Sequence[str]) -> BankPlayer:  # fmt: skip
        timer = sdk.Timer(sdk.connection_for(self.binding, conn, BankConnection), recorder, runner)
        return BankPlayer(self, timer, seed, units)

    def summary_payload(self) -> str:
        return ""


class BankWorkload:
    def __init__(self) -> None:
        self.name, self.store_group = "bank", "bgbench.bank_stores"
        self.description = "accounts in entity groups: view, deposit, transfer, set a limit, pay"
        self.config_model, self.scale_parameter = BankConfig, "groups"
        self.aliases = {"mix": "mix", "groupcount": "groups", "thinktime": "thinktime"}
        self.actions = {VB: "VB", DEP: "DEP", XFER: "XFER", LIMIT: "LIMIT"}
        self.action_titles = {VB: "View the balance", DEP: "Deposit",
                              XFER: "Transfer within a group", LIMIT: "Set the limit"}  # fmt: skip
        self.items = {BALANCE: "account balance", TRANSFER_LIMIT: "transfer limit"}

    def mix(self, config: BankConfig) -> dict[str, float]:
        return {unit: w / sum(config.mix.values()) for unit, w in config.mix.items()}

    def interarrival_ms(self, config: BankConfig) -> float:
        return config.interarrivaltime

    def fragment_sizes(self, config: BankConfig, capacities: Sequence[float]) -> list[int]:
        return [hi - lo for lo, hi in account_ranges(config, capacities)]

    def check_fragments(self, config: BankConfig, sizes: Sequence[int]) -> None:
        """Fragments of whole groups, even none, hold the bank (bgbench checks the threads)."""

    def memory_bytes(self, config: BankConfig) -> tuple[int, int]:
        accounts = config.groups * config.group_size
        return 16 * accounts, 96 * accounts

    def create_schema(self, config: BankConfig, binding: BankBinding) -> None:
        binding.create_schema()

    def fragment(self, config: BankConfig, capacities: Sequence[float], index: int,
                 binding: BankBinding) -> BankFragment:  # fmt: skip
        return BankFragment(config, capacities, index, binding)


WORKLOAD: sdk.Workload[BankConfig, BankBinding] = BankWorkload()
