"""Typed settings of the EHR workload: the generated database and how clinicians use it.

Names follow the YCSB client Klein et al. extended where one exists (`recordcount`,
`requestdistribution`), BG's for the popularity skew (`zipfianmean`, θ); both are
accepted as `-p NAME=VALUE` (workload.py lists the aliases).
"""

from collections.abc import Mapping
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from bgbench.workloads.pacing import InterArrivalMs
from bgbench.workloads.weights import resolve_weights

# Unknown keys and non-finite numbers (inf, nan) are refused in every section.
STRICT = ConfigDict(extra="forbid", allow_inf_nan=False)
SEED_LIMIT = 1 << 64

UNITS = ("READ", "WRITE")
# Paper section 3.4: the stakeholders' 80/20 mix, and the cache's write-only (the daily
# download) and read-only (the flush back) workloads.
NAMED_MIXES: dict[str, dict[str, float]] = {
    "readwrite": {"READ": 80, "WRITE": 20},
    "readonly": {"READ": 1},
    "writeonly": {"WRITE": 1},
}


def resolve_mix(mix: str | Mapping[str, float]) -> dict[str, float]:
    """The mix as unit -> probability; raise ValueError saying what is wrong."""
    return resolve_weights(mix, UNITS, NAMED_MIXES, "{READ: 9, WRITE: 1}")


class EHRDatabaseConfig(BaseModel):
    """What the generator builds (paper section 3.2: 1 million patients, 10 million results;
    the default is small enough to load in seconds on a 2-core machine)."""

    model_config = STRICT

    patients: Annotated[
        int, Field(ge=1, le=100_000_000, description="patients in the database")
    ] = 10_000
    maxresults: Annotated[
        int, Field(ge=1, le=1000, description="most lab results a patient has when loaded")
    ] = 20
    meanresults: Annotated[
        float, Field(ge=0, description="mean lab results per patient when loaded")
    ] = 7.0
    fragments: Literal["dzipfian", "contiguous"] = Field(
        default="dzipfian",
        description="how patients split among load processes: dzipfian (each fragment's "
        "share of the requests tracks its capacity, as BG's D-Zipfian) or contiguous id "
        "ranges sized by capacity",
    )
    seed: Annotated[
        int, Field(ge=0, lt=SEED_LIMIT, description="seed of the generated database")
    ] = 1

    @model_validator(mode="after")
    def _mean_within_range(self) -> "EHRDatabaseConfig":
        if self.meanresults > self.maxresults:
            raise ValueError(
                f"meanresults ({self.meanresults:g}) must not exceed maxresults "
                f"({self.maxresults}): lower it or raise maxresults"
            )
        return self


class EHRWorkloadConfig(BaseModel):
    """What clinicians do (paper section 3.4)."""

    model_config = STRICT

    mix: str | dict[str, float] = Field(
        default="readwrite",
        description="readwrite (80/20), readonly, writeonly, or weights {READ: w, WRITE: w}",
    )
    requestdistribution: Literal["zipfian", "uniform"] = Field(
        default="zipfian", description="how popular patients are: Zipfian or all alike"
    )
    zipfianmean: Annotated[
        float, Field(ge=0, lt=1, description="theta; patient rank i weighs i^-(1-theta)")
    ] = 0.27
    recent: Annotated[
        int, Field(ge=1, le=1000, description="lab results a READ returns, newest first")
    ] = 5
    hashed_keys: bool = Field(
        default=False,
        description="key new lab results by a hash of their increasing sequence number "
        "(the paper's remedy for a range-sharded store's hot spot)",
    )
    exclusive: bool = Field(
        default=True, description="no two loops act on the same patient at once"
    )
    interarrivaltime: InterArrivalMs = 0

    @field_validator("mix")
    @classmethod
    def _known_mix(cls, value: str | dict[str, float]) -> str | dict[str, float]:
        resolve_mix(value)
        return value

    @property
    def theta(self) -> float:
        """The skew the generator uses: 1 makes every patient weigh the same."""
        return self.zipfianmean if self.requestdistribution == "zipfian" else 1.0


class EHRConfig(BaseModel):
    """The `ehr` settings section."""

    model_config = STRICT

    database: EHRDatabaseConfig = EHRDatabaseConfig()
    workload: EHRWorkloadConfig = EHRWorkloadConfig()
