"""Typed settings of the Auction workload: the generated database and how users act.

The database (Strudel 5.3, RUBiS/AuctionMark-like): users, each selling auction items
(with the bids loaded on them) and sale items. The workload: sessions as data
(bgbench.workloads.sessions) over the interactions of Strudel's auction benchmark, a
mix of them, and the retry policy of every transaction (sdk.RetryPolicy).
"""

from collections.abc import Mapping
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from bgbench import sdk
from bgbench.workloads.auction.session_defs import BUILTIN_SESSIONS, INTERACTIONS, STEP_NAMES
from bgbench.workloads.pacing import DAY_MS, InterArrivalMs
from bgbench.workloads.sessions import SessionDef, check_session
from bgbench.workloads.weights import resolve_weights

# Unknown keys and non-finite numbers (inf, nan) are refused in every section.
STRICT = ConfigDict(extra="forbid", allow_inf_nan=False)
SEED_LIMIT = 1 << 64

# Named mixes over the built-in sessions: "sessions" is Strudel's Figure 6 walk from HOME
# (with outcomes: a lost bid looks again), "roles" weighs the bidder, buyer and seller
# sessions, "readonly" only browses.
NAMED_MIXES: dict[str, dict[str, float]] = {
    "sessions": {"Strudel": 1},
    "roles": {"Bidder": 5, "Buyer": 3, "Seller": 2},
    "readonly": {"Browser": 1},
}


def resolve_mix(
    mix: str | Mapping[str, float], sessions: Mapping[str, SessionDef] | None = None
) -> dict[str, float]:
    """The mix as unit -> probability (units: single interactions, built-in sessions and
    the user's sessions); raise ValueError saying what is wrong."""
    units = [*INTERACTIONS, *BUILTIN_SESSIONS, *(sessions or {})]
    return resolve_weights(mix, units, NAMED_MIXES, "{Bidder: 6, VIEW_AUCTION_ITEM: 4}")


class AuctionDatabaseConfig(BaseModel):
    """What the generator builds: users, their auction items with the bids on them, and
    their sale items. Counts per user and per item are drawn uniformly from 0 to twice the
    mean (quantities from 1 to `quantity`), as pure functions of the seed."""

    model_config = STRICT

    users: Annotated[int, Field(ge=2, le=10_000_000, description="users in the database")] = 1000
    auction_items: Annotated[
        int, Field(ge=0, le=100, description="mean auction items a user sells when loaded")
    ] = 3
    sale_items: Annotated[
        int, Field(ge=0, le=100, description="mean sale items a user sells when loaded")
    ] = 2
    bids: Annotated[
        int, Field(ge=0, le=100, description="mean bids on an auction item when loaded")
    ] = 3
    quantity: Annotated[
        int, Field(ge=1, le=1_000_000, description="most units of a sale item when loaded")
    ] = 20
    seed: Annotated[
        int, Field(ge=0, lt=SEED_LIMIT, description="seed of the generated database")
    ] = 1


class AuctionWorkloadConfig(BaseModel):
    """What users do: sessions over the interactions, their mix, think times, bids."""

    model_config = STRICT

    # Before the mix, which may weight them (fields are validated in order).
    sessions: dict[str, SessionDef] = Field(
        default_factory=dict,
        description="the user's sessions: name -> {states, start, end} over the "
        "interactions (bgbench.workloads.sessions; outcomes in workloads/auction/sessions.py)",
    )
    mix: str | dict[str, float] = Field(
        default="sessions",
        description="sessions (Strudel's walk from HOME), roles, readonly, or a table of "
        "weights of interactions, built-in sessions and the user's sessions",
    )
    zipfianmean: Annotated[
        float, Field(ge=0, lt=1, description="theta; user rank i weighs i^-(1-theta)")
    ] = 0.27
    thinktime: Annotated[
        float,
        Field(ge=0, le=DAY_MS, description="ms between interactions of a session (default)"),
    ] = 0
    interarrivaltime: InterArrivalMs = 0
    exclusive: bool = Field(default=True, description="no two loops act as the same user at once")
    bid_step: Annotated[
        int, Field(ge=1, le=1_000_000, description="most cents a bid adds to the max bid seen")
    ] = 100
    buy_most: Annotated[int, Field(ge=1, le=1000, description="most units one purchase takes")] = 3
    sale_quantity: Annotated[
        int, Field(ge=1, le=1_000_000, description="most units of a sale item a user sells")
    ] = 20
    retry: sdk.RetryPolicy = Field(
        default_factory=sdk.RetryPolicy,
        description="how a transaction the store refused is tried again",
    )

    @field_validator("sessions")
    @classmethod
    def _playable_sessions(cls, value: dict[str, SessionDef]) -> dict[str, SessionDef]:
        for name, definition in value.items():
            if name in INTERACTIONS or name in BUILTIN_SESSIONS or name in NAMED_MIXES:
                raise ValueError(
                    f"session {name!r}: the name of an interaction, a built-in session or "
                    "a named mix: rename it"
                )
            if not name.strip():
                raise ValueError("a session has an empty name: give it a name")
            check_session(name, definition, STEP_NAMES)
        return value

    @field_validator("mix")
    @classmethod
    def _known_mix(
        cls, value: str | dict[str, float], info: ValidationInfo
    ) -> str | dict[str, float]:
        if "sessions" in info.data:  # else they are invalid, said already
            resolve_mix(value, info.data["sessions"])
        return value


class AuctionConfig(BaseModel):
    """The `auction` settings section."""

    model_config = STRICT

    database: AuctionDatabaseConfig = AuctionDatabaseConfig()
    workload: AuctionWorkloadConfig = AuctionWorkloadConfig()
