"""Typed settings of Strudel's Micro benchmark: the generated groups and the interactions.

Names follow Strudel's and BG's where they exist (`requestdistribution`, `zipfianmean`,
`thinktime`); workload.py lists the flat aliases accepted as `-p NAME=VALUE`.
"""

from collections.abc import Mapping
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from bgbench import sdk
from bgbench.workloads.pacing import InterArrivalMs
from bgbench.workloads.weights import resolve_weights

# Unknown keys and non-finite numbers (inf, nan) are refused in every section.
STRICT = ConfigDict(extra="forbid", allow_inf_nan=False)
SEED_LIMIT = 1 << 64
# Items of one group at most: an item's tracked id is group * MAX_ITEMS + item.
MAX_ITEMS = 1 << 14

UNITS = (
    "UPDATE_PERSONAL",
    "READ_PERSONAL",
    "UPDATE_SHARED",
    "READ_SHARED",
    "UPDATE_PUBLIC",
    "READ_PUBLIC",
    "SEND_MESSAGE",
    "READ_MESSAGES",
)
# Which group kind each unit touches ("items" = the settings field sizing that group).
UPDATES = {"UPDATE_PERSONAL": "personal_items", "UPDATE_SHARED": "shared_items",
           "UPDATE_PUBLIC": "public_items"}  # fmt: skip
SHARED_UNITS = ("UPDATE_SHARED", "READ_SHARED")
OTHER_USER_UNITS = ("READ_PUBLIC", "SEND_MESSAGE")  # need a second user in the fragment

# Strudel section 8: scalability (Figure 9: personal updates, never a conflict),
# concurrency (Figure 10: one shared item per update, group size varies) and conflict
# (Figure 11: 4 items of a shared group; the group size sets mild or heavy conflict; the
# no-conflict case is "scalability" with 400 personal items). readwrite mixes every
# interaction, reads first, for ratings.
NAMED_MIXES: dict[str, dict[str, float]] = {
    "scalability": {"UPDATE_PERSONAL": 1},
    "concurrency": {"UPDATE_SHARED": 1},
    "conflict": {"UPDATE_SHARED": 1},
    "readwrite": {"READ_PERSONAL": 20, "UPDATE_PERSONAL": 10, "READ_SHARED": 20,
                  "UPDATE_SHARED": 10, "READ_PUBLIC": 15, "UPDATE_PUBLIC": 5,
                  "READ_MESSAGES": 15, "SEND_MESSAGE": 5},
}  # fmt: skip


def resolve_mix(mix: str | Mapping[str, float]) -> dict[str, float]:
    """The mix as unit -> probability; raise ValueError saying what is wrong."""
    return resolve_weights(mix, UNITS, NAMED_MIXES, "{UPDATE_SHARED: 1, READ_SHARED: 3}")


Items = Annotated[int, Field(ge=0, le=MAX_ITEMS)]


class MicroDatabaseConfig(BaseModel):
    """What the generator builds (Strudel 5.3): per user a personal group, a public group
    and an inbox; `shared_groups` groups of shared items besides. The default loads in a
    second on a 2-core machine."""

    model_config = STRICT

    users: Annotated[int, Field(ge=1, le=10_000_000, description="users in the database")] = 1000
    personal_items: Items = Field(10, description="items of each user's personal group")
    shared_groups: Annotated[
        int, Field(ge=0, le=10_000_000, description="groups of shared items")
    ] = 100
    shared_items: Items = Field(40, description="items of each shared group")
    public_items: Items = Field(10, description="items of each user's public group")
    seed: Annotated[int, Field(ge=0, lt=SEED_LIMIT, description="seed of the generated values")] = 1


class MicroWorkloadConfig(BaseModel):
    """What users do (Strudel 5.3, section 8's workloads)."""

    model_config = STRICT

    mix: str | dict[str, float] = Field(
        default="readwrite",
        description="scalability, concurrency, conflict, readwrite, one interaction, or "
        "weights {UPDATE_SHARED: w, READ_SHARED: w, ...}",
    )
    items_per_txn: Annotated[
        int, Field(ge=1, le=MAX_ITEMS, description="distinct items an update touches")
    ] = 4
    requestdistribution: Literal["zipfian", "uniform"] = Field(
        default="uniform", description="how popular users are: Zipfian or all alike"
    )
    zipfianmean: Annotated[
        float, Field(ge=0, lt=1, description="theta; user rank i weighs i^-(1-theta)")
    ] = 0.27
    exclusive: bool = Field(
        default=True,
        description="no two loops act as the same user at once (Figure 9's disjoint pools: "
        "personal updates never conflict)",
    )
    thinktime: InterArrivalMs = 0
    retry: sdk.RetryPolicy = Field(
        default_factory=sdk.RetryPolicy,
        description="how a transaction the store refused is tried again",
    )

    @field_validator("mix")
    @classmethod
    def _known_mix(cls, value: str | dict[str, float]) -> str | dict[str, float]:
        resolve_mix(value)
        return value

    @property
    def theta(self) -> float:
        """The skew the generator uses: 1 makes every user weigh the same."""
        return self.zipfianmean if self.requestdistribution == "zipfian" else 1.0


class MicroConfig(BaseModel):
    """The `micro` settings section."""

    model_config = STRICT

    database: MicroDatabaseConfig = MicroDatabaseConfig()
    workload: MicroWorkloadConfig = MicroWorkloadConfig()

    @model_validator(mode="after")
    def _groups_fit_the_mix(self) -> "MicroConfig":
        mix = resolve_mix(self.workload.mix)
        db, k = self.database, self.workload.items_per_txn
        for unit, field in UPDATES.items():
            if unit in mix and getattr(db, field) < k:
                raise ValueError(
                    f"database.{field} ({getattr(db, field)}) must be at least "
                    f"workload.items_per_txn ({k}) for {unit}: raise it or lower items_per_txn"
                )
        if db.shared_groups == 0 and any(u in mix for u in SHARED_UNITS):
            raise ValueError(
                "database.shared_groups must be at least 1 for a mix with shared items"
            )
        return self
