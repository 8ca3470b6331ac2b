"""Typed settings of the BG database and workload, with BG's own parameter names."""

from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from bgbench.workloads.bg.mixes import (
    ACTION_CODES,
    MIX_ALIASES,
    NAMED_MIXES,
    SESSION_NAMES,
    resolve_mix,
)
from bgbench.workloads.bg.session_defs import STEP_NAMES
from bgbench.workloads.sessions import SessionDef, check_session

# Unknown keys and non-finite numbers (inf, nan) are refused in every section.
STRICT = ConfigDict(extra="forbid", allow_inf_nan=False)
SEED_LIMIT = 1 << 64
DAY_MS = 86_400_000
Distribution = Literal["uniform", "zipfian"]
Commenters = Literal["anyone", "friends"]


class BGDatabaseConfig(BaseModel):
    """What the generator builds (paper section B, Table 2)."""

    model_config = STRICT

    usercount: Annotated[int, Field(ge=2, description="members in the database (M)")] = 1000
    friendcountperuser: Annotated[
        int, Field(ge=0, description="relationships per member, confirmed or pending (phi)")
    ] = 10
    confperc: Annotated[
        float, Field(ge=0, le=1, description="share of relationships that are confirmed")
    ] = 1.0
    resourcecountperuser: Annotated[int, Field(ge=0, description="resources per member (rho)")] = 10
    commentcountperresource: Annotated[
        int, Field(ge=0, description="comments on each resource at load time")
    ] = 0
    attrcount: Annotated[int, Field(ge=1, le=64, description="string attributes per member")] = 10
    attrlength: Annotated[int, Field(ge=1, le=10_000, description="length of each attribute")] = 100
    insertimage: bool = Field(default=False, description="store a thumbnail and a profile image")
    thumbnailsize: Annotated[int, Field(ge=1, description="thumbnail size in KB")] = 2
    imagesize: Annotated[int, Field(ge=1, description="profile image size in KB")] = 12
    commentlength: Annotated[int, Field(ge=1, le=10_000)] = 100
    seed: Annotated[
        int, Field(ge=0, lt=SEED_LIMIT, description="seed of the generator and of the load")
    ] = 1
    friendship_distribution: Distribution = Field(
        default="uniform",
        description="uniform: every member has phi relationships (a ring); zipfian: their "
        "count follows BG's Zipfian weights with mean phi (workloads/bg/relationships.py)",
    )
    resource_distribution: Distribution = Field(
        default="uniform",
        description="walls resources are posted on: uniform, or zipfian (BG's weights, mean rho)",
    )
    relationship_theta: Annotated[
        float,
        Field(
            ge=0,
            lt=1,
            description="theta of the Zipfian relationships: rank r weighs r^-(1-theta)",
        ),
    ] = 0.27
    comments: Commenters = Field(
        default="anyone",
        description="who comments on a resource: anyone, or friends (the wall's owner and "
        "the owner's friends: BG's Manipulation restriction)",
    )

    @field_validator("friendcountperuser")
    @classmethod
    def _even(cls, value: int) -> int:
        if value % 2:
            raise ValueError("must be even: each member links to phi/2 neighbours on each side")
        return value

    @property
    def members_per_relationship(self) -> int:
        """A fragment needs more members than this: a Zipfian graph with mean degree phi
        needs room for its hubs (twice phi), a ring phi+1."""
        return self.friendcountperuser * (2 if self.friendship_distribution == "zipfian" else 1)


class BGWorkloadConfig(BaseModel):
    """How socialites behave (paper sections C, D)."""

    model_config = STRICT

    # Before the mix, which may weight them (fields are validated in order).
    sessions: dict[str, SessionDef] = Field(
        default_factory=dict,
        description="the user's sessions: name -> {states, start, end} "
        "(bgbench.workloads.sessions; steps in workloads/bg/session_defs.py)",
    )
    mix: str | dict[str, float] = Field(
        default="low",
        description="verylow, low, high (Table 3), sessions, or a table of weights of actions, "
        "BG's sessions and the user's sessions",
    )
    zipfianmean: Annotated[
        float, Field(ge=0, lt=1, description="theta; rank i weighs i^-(1-theta)")
    ] = 0.27
    thinktime: Annotated[
        float,
        Field(
            ge=0, le=DAY_MS, description="ms between actions of a session (default of a transition)"
        ),
    ] = 0
    interarrivaltime: Annotated[
        float,
        Field(
            ge=0,
            le=DAY_MS,
            description="ms a thread sleeps between the end of one socialite's unit and the "
            "start of the next (BG's ClientThread); closed loop only",
        ),
    ] = 0
    exclusive: bool = Field(
        default=True, description="no two threads act as the same socialite at once"
    )
    topk: Annotated[int, Field(ge=1, le=1000)] = 5

    @field_validator("sessions")
    @classmethod
    def _playable_sessions(cls, value: dict[str, SessionDef]) -> dict[str, SessionDef]:
        for name, definition in value.items():
            if name in ACTION_CODES or name in SESSION_NAMES:
                raise ValueError(
                    f"session {name!r}: the name of a built-in action or session: rename it"
                )
            if name in NAMED_MIXES or name in MIX_ALIASES:
                raise ValueError(f"session {name!r}: the name of a named mix: rename it")
            if not name.strip():
                raise ValueError("a session has an empty name: give it a name")
            check_session(name, definition, STEP_NAMES)
        return value

    @field_validator("mix")
    @classmethod
    def _known_mix(
        cls, value: str | dict[str, float], info: ValidationInfo
    ) -> str | dict[str, float]:
        if "sessions" in info.data:  # else they are invalid, said already: check them first
            resolve_mix(value, info.data["sessions"])
        return value


class BGConfig(BaseModel):
    """Everything a worker needs to build and drive its fragment."""

    model_config = STRICT

    database: BGDatabaseConfig = BGDatabaseConfig()
    workload: BGWorkloadConfig = BGWorkloadConfig()

    @model_validator(mode="after")
    def _fits(self) -> "BGConfig":
        db = self.database
        if db.friendcountperuser >= db.usercount:
            raise ValueError(
                f"friendcountperuser ({db.friendcountperuser}) must be below usercount "
                f"({db.usercount})"
            )
        return self
