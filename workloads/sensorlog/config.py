"""Typed settings of the sensor-log workload (Mahmood, Risch and Zhu): the generated logs,
the continuous-ingest rating, and the paper's two studies (bulk loading, queries).

The database is machines x sensors time series of `readings` each: rows of the table
measures(m, s, bt, et, mv). The default (20 machines x 10 sensors x 1,000 readings,
200,000 rows) loads in seconds on a 2-core machine; the paper's largest was 1 billion.
"""

from collections.abc import Mapping
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from bgbench.workloads.pacing import DAY_MS, InterArrivalMs
from bgbench.workloads.weights import resolve_weights

STRICT = ConfigDict(extra="forbid", allow_inf_nan=False)
SEED_LIMIT = 1 << 64

UNITS = ("INGEST", "Q1", "Q3")
# Named by their ingest share; the rest is split evenly between Q1 and Q3.
NAMED_MIXES: dict[str, dict[str, float]] = {
    "ingest100": {"INGEST": 1},
    "ingest90": {"INGEST": 90, "Q1": 5, "Q3": 5},
    "ingest50": {"INGEST": 50, "Q1": 25, "Q3": 25},
    "ingest10": {"INGEST": 10, "Q1": 45, "Q3": 45},
    "query": {"Q1": 50, "Q3": 50},
}
# The paper's selectivities (section 2.4.2, Figure 2), in percent.
PAPER_SELECTIVITIES = (0.002, 0.02, 0.2, 0.25, 1.0, 2.0, 5.0)


def resolve_mix(mix: str | Mapping[str, float]) -> dict[str, float]:
    """The mix as unit -> probability; raise ValueError saying what is wrong."""
    return resolve_weights(mix, UNITS, NAMED_MIXES, "{INGEST: 8, Q1: 1, Q3: 1}")


class SignalConfig(BaseModel):
    """Each series is a random walk reflected into [low, high] (no value repeats, so a
    threshold selects an exact number of rows), with rare spikes above it: high
    thresholds select few rows, as the paper's Figure 2 mapping shows."""

    model_config = STRICT

    low: float = 0.0
    high: float = 100.0
    step: Annotated[float, Field(gt=0, description="standard deviation of one step")] = 1.0
    spike_probability: Annotated[float, Field(ge=0, le=1)] = 0.001
    spike_min: Annotated[float, Field(ge=0)] = 10.0
    spike_max: Annotated[float, Field(ge=0)] = 60.0

    @model_validator(mode="after")
    def _ranges(self) -> "SignalConfig":
        if not self.low < self.high:
            raise ValueError(f"low ({self.low:g}) must be below high ({self.high:g})")
        if self.spike_min > self.spike_max:
            raise ValueError("spike_min must not exceed spike_max")
        return self


class SensorLogDatabaseConfig(BaseModel):
    model_config = STRICT

    machines: Annotated[int, Field(ge=1, le=1_000_000, description="machines (m)")] = 20
    sensors: Annotated[int, Field(ge=1, le=10_000, description="sensors per machine (s)")] = 10
    readings: Annotated[
        int, Field(ge=1, le=100_000_000, description="readings per series when loaded")
    ] = 1000
    period_ms: Annotated[
        int, Field(ge=2, le=DAY_MS, description="mean time between two readings of a series")
    ] = 1000
    start_ms: Annotated[int, Field(ge=0, description="first reading's time, ms since epoch")] = (
        1_700_000_000_000
    )
    seed: Annotated[int, Field(ge=0, lt=SEED_LIMIT)] = 1
    signal: SignalConfig = SignalConfig()

    @property
    def series(self) -> int:
        return self.machines * self.sensors

    @property
    def rows(self) -> int:
        return self.series * self.readings


class SensorLogWorkloadConfig(BaseModel):
    """The continuous-ingest rating: INGEST appends a reading to a series, Q1 looks up a
    series' newest reading by key, Q3 counts the fragment's readings above a threshold."""

    model_config = STRICT

    mix: str | dict[str, float] = Field(
        default="ingest50",
        description="ingest100, ingest90, ingest50, ingest10, query, or weights "
        "{INGEST: w, Q1: w, Q3: w}",
    )
    q3_selectivity: Annotated[
        float, Field(gt=0, le=100, description="percent of the loaded rows Q3's threshold selects")
    ] = 0.2
    interarrivaltime: InterArrivalMs = 0

    @field_validator("mix")
    @classmethod
    def _known_mix(cls, value: str | dict[str, float]) -> str | dict[str, float]:
        resolve_mix(value)
        return value


class SensorLogStudyConfig(BaseModel):
    """The paper's measurements (`bgbench study load|queries --workload sensorlog`)."""

    model_config = STRICT

    sizes: list[Annotated[int, Field(ge=1)]] = Field(
        default=[25_000, 50_000, 100_000, 150_000],
        description="rows per bulk load (the paper's 167, 333, 667, 1000 million, scaled)",
    )
    runs: Annotated[int, Field(ge=1, le=100, description="repeats of each measurement")] = 3
    indexes: list[Literal["before", "after"]] = Field(
        default=["before", "after"],
        description="indexes defined before loading, or built after (timed apart)",
    )
    consistency: list[Literal["strong", "weak"]] = Field(
        default=["strong", "weak"], description="the store's settings from the paper's Table 1"
    )
    selectivities: list[Annotated[float, Field(gt=0, le=100)]] = Field(
        default=list(PAPER_SELECTIVITIES), description="percent of rows Q2 and Q3 select"
    )
    query_rows: Annotated[
        int | None, Field(ge=1, description="rows loaded for the query study (default: database)")
    ] = None
    keys: Annotated[int, Field(ge=1, le=100_000, description="Q1 lookups per run")] = 100

    @field_validator("sizes", "indexes", "consistency", "selectivities", mode="before")
    @classmethod
    def _comma_list(cls, value: object) -> object:
        """Also "a,b,c" (one -p value: -p sensorlog.study.consistency=weak)."""
        if isinstance(value, str):
            return [v.strip() for v in value.split(",") if v.strip()]
        if isinstance(value, int | float):
            return [value]
        return value

    @field_validator("sizes", "indexes", "consistency", "selectivities")
    @classmethod
    def _not_empty(cls, value: list[object]) -> list[object]:
        if not value:
            raise ValueError("list at least one value")
        return value


class SensorLogConfig(BaseModel):
    """The `sensorlog` settings section."""

    model_config = STRICT

    database: SensorLogDatabaseConfig = SensorLogDatabaseConfig()
    workload: SensorLogWorkloadConfig = SensorLogWorkloadConfig()
    study: SensorLogStudyConfig = SensorLogStudyConfig()
