"""The one typed config: defaults, overridden by a TOML/YAML file, overridden by flags.

Flags reach any field by its dotted path (`-p bg.database.usercount=5000`) or by the
workload's own parameter name (`-p usercount=5000`). The workload (`workload.name`,
default bg) brings its settings section, under its own name: the settings model of a
rating is Settings plus that one section (`settings_model`).
"""

from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    create_model,
    field_serializer,
    field_validator,
    model_validator,
)

from bgbench.coordinator.configuration.redaction import REDACTED, redact_options
from bgbench.coordinator.configuration.resources import ResourcesConfig
from bgbench.coordinator.configuration.scenario import SCENARIO_ERROR, NodesConfig, Scenario
from bgbench.coordinator.configuration.settings_files import parse_value, read_file, shown
from bgbench.errors import UserError
from bgbench.workloads import registry

# Every section refuses unknown keys and non-finite numbers (inf, nan pass JSON and TOML).
STRICT = ConfigDict(extra="forbid", allow_inf_nan=False)
SEED_LIMIT = 1 << 64  # seeds travel as uint64


class StoreConfig(BaseModel):
    model_config = STRICT

    name: str = Field("sqlite", description="store binding (see `bgbench stores`)")
    options: dict[str, Any] = Field(default_factory=dict, description="the binding's options")

    @field_serializer("options")
    def _redact(self, options: dict[str, Any]) -> dict[str, Any]:
        return redact_options(options)  # passwords in a DSN or URI are never written out


class RunConfig(BaseModel):
    model_config = STRICT

    threadcount: Annotated[int, Field(ge=1, le=100_000, description="T: threads in all")] = 8
    maxexecutiontime: Annotated[
        float, Field(gt=0, le=86_400, description="experiment duration in seconds")
    ] = 20
    operationcount: Annotated[
        int, Field(ge=0, description="stop after this many actions in all (0: no limit)")
    ] = 0
    seed: Annotated[
        int,
        Field(ge=0, lt=SEED_LIMIT, description="seed of the load (socialites, targets, mix)"),
    ] = 1
    target_rate: Annotated[
        float | None,
        Field(
            gt=0,
            le=100_000_000,
            description="open loop: actions/s in all, arriving on a schedule whatever the "
            "store's pace (threadcount bounds how many run at once); response times count "
            "from each action's intended start, so a stall is not hidden (coordinated "
            "omission); none: closed loop",
        ),
    ] = None
    arrivals: Literal["poisson", "constant"] = Field(
        "poisson", description="open loop: Poisson arrivals, or evenly spaced ones"
    )


class TLSConfig(BaseModel):
    """The coordinator's side of TLS: the CA that signed the agents' certificates, and a
    client certificate when the agents require one (mutual TLS)."""

    model_config = STRICT

    ca_file: Path = Field(description="CA certificate (PEM) that signed the agents' certificates")
    cert_file: Path | None = Field(None, description="client certificate (PEM), for mutual TLS")
    key_file: Path | None = Field(None, description="client private key (PEM), for mutual TLS")
    server_name: str | None = Field(
        None, description="name to expect in the agents' certificates (default: their host)"
    )

    @model_validator(mode="after")
    def _pair(self) -> "TLSConfig":
        if (self.cert_file is None) != (self.key_file is None):
            raise ValueError("cert_file and key_file go together (mutual TLS needs both)")
        for name in ("ca_file", "cert_file", "key_file"):
            path = getattr(self, name)
            if path is not None and not Path(path).is_file():
                raise ValueError(f"{name} {path} does not exist")
        return self


class AgentsConfig(BaseModel):
    model_config = STRICT

    addresses: list[str] = Field(
        default_factory=list,
        description="host:port of running agents; none: spawn `local` agents on loopback",
    )
    token: str | None = Field(
        None,
        description="shared token every call carries (default: $BGBENCH_TOKEN); never "
        "written out: shown and recorded as ***",
    )
    tls: TLSConfig | None = None
    on_failure: Literal["stop", "retry"] = Field(
        "stop",
        description="when an agent fails mid-experiment: stop the rating (resume later), or "
        "retry the experiment on the agents that answer (restarted ones rejoin)",
    )
    heartbeat_timeout: Annotated[
        float,
        Field(
            gt=0,
            description="an agent silent this long (s), or a load process of it making no "
            "progress this long while loading, readying or validating, has failed",
        ),
    ] = 15.0
    local: Annotated[int, Field(ge=1, le=64, description="local agents to spawn")] = 2
    processes: Annotated[int, Field(ge=1, le=64)] | Literal["auto"] = Field(
        "auto",
        description="load processes per local agent; auto: one per core, more for many "
        "threads of a blocking store (coordinator/execution/sizing.py)",
    )
    capacities: list[Annotated[float, Field(gt=0)]] | None = Field(
        None, description="capacity weight of each agent (default: by `capacity`)"
    )
    capacity: Literal["equal", "measure"] = Field(
        "equal",
        description="without `capacities`: weigh agents equally, or by a short calibration "
        "each agent runs at the handshake (recorded with the rating, so a resume reuses it)",
    )
    start_timeout: Annotated[float, Field(gt=0)] = 60.0

    @field_validator("token")
    @classmethod
    def _real_token(cls, token: str | None) -> str | None:
        if token == REDACTED:
            raise ValueError(
                f"{REDACTED} is the redacted token of a recorded rating, not a token: "
                "set $BGBENCH_TOKEN or agents.token"
            )
        return token

    @field_serializer("token")
    def _redact_token(self, token: str | None) -> str | None:
        return REDACTED if token else None

    @model_validator(mode="after")
    def _one_capacity_each(self) -> "AgentsConfig":
        if self.capacities is not None and len(self.capacities) != self.count:
            raise ValueError(
                f"capacities lists {len(self.capacities)} weights for {self.count} agents"
            )
        for address in self.addresses:
            host, _, port = address.rpartition(":")
            if not host or not port.isdigit() or not 0 < int(port) < 65536:
                raise ValueError(f"agent address {address!r} must be host:port")
        return self

    @property
    def count(self) -> int:
        return len(self.addresses) or self.local


class SLAConfig(BaseModel):
    model_config = STRICT

    alpha: Annotated[float, Field(gt=0, le=100, description="% of actions within beta")] = 95
    beta_ms: Annotated[float, Field(gt=0, description="latency bound in ms")] = 100
    tau: Annotated[float, Field(ge=0, le=100, description="max % of unpredictable reads")] = 0.1
    delta_s: Annotated[
        float | None,
        Field(gt=0, le=86_400, description="Delta: final experiment's duration (default: run's)"),
    ] = None
    delta_search_s: Annotated[
        float | None,
        Field(gt=0, le=86_400, description="Delta_s: duration while searching (default: Delta)"),
    ] = None
    latency_scope: Literal["action", "session"] = Field(
        "action",
        description="action: alpha% of actions (pooled, as BG) within beta; "
        "session: alpha% of sessions whose every action is within beta",
    )
    client_bound: Literal["warn", "fail"] = Field(
        "warn",
        description="an experiment whose bottleneck is the client (the load processes, not "
        "the store): warn loudly, or fail it",
    )


# Klein et al.'s thread counts (their section 4): the default sweep.
SWEEP_THREADS = (1, 2, 5, 10, 25, 50, 100, 200, 500, 1000)


class RatingConfig(BaseModel):
    model_config = STRICT

    objective: Literal["both", "soar", "socialites", "exhaustive", "sweep"] = Field(
        "both",
        description="what to search for (exhaustive: T = T0, T0+1, ... for both); sweep: "
        "no search, run each of sweep_threads sweep_repeats times and average (Klein et al.)",
    )
    t0: Annotated[int, Field(ge=1, description="first thread count")] = 1
    warmup_s: Annotated[
        float,
        Field(ge=0, description="before the search, run unrated for this long (a JVM store's "
              "JIT and caches warm up); 0: no warm-up"),
    ] = 0.0  # fmt: skip
    warmup_threads: Annotated[int, Field(ge=1, description="T of the warm-up run")] = 8
    max_threads: Annotated[
        int | None, Field(ge=1, description="highest T tried (default: usercount)")
    ] = None
    sweep_threads: list[Annotated[int, Field(ge=1, le=100_000)]] = Field(
        default_factory=lambda: list(SWEEP_THREADS),
        min_length=1,
        description="sweep: the thread counts to run, in this order (those that cannot run "
        "here are skipped, each with its reason)",
    )
    sweep_repeats: Annotated[
        int, Field(ge=1, le=100, description="sweep: runs of each thread count, averaged")
    ] = 3
    search: Literal["fit", "classic"] = Field(
        "fit",
        description="fit: double T, then probe where a parabola through the best points "
        "puts the peak, comparing throughputs by a test (fewer experiments); classic: the "
        "paper's doubling and slope bisection on one number per T",
    )
    confidence: Annotated[
        float,
        Field(ge=0.5, le=0.999, description="confidence of every interval and SLA verdict"),
    ] = 0.95
    repeats: Annotated[
        int,
        Field(
            ge=1,
            le=10,
            description="runs of one T at most while its SLA verdict is not clear at "
            "`confidence` (1: never repeat)",
        ),
    ] = 3
    final_runs: Annotated[
        int,
        Field(
            ge=1,
            le=20,
            description="independent runs of each final experiment: SoAR's interval comes "
            "from how their levels differ (one run's samples cannot show how a second run "
            "of the same store would differ)",
        ),
    ] = 5
    steady_state: bool = Field(
        True,
        description="rate each experiment on its steady part only: the warm-up its "
        "throughput series shows (MSER-5) is cut and recorded; a run that never settles "
        "in its first half is unstable, not rated",
    )
    over: Literal["threads", "rate"] = Field(
        "threads",
        description="threads: search T (closed loop); rate: search the open-loop arrival "
        "rate (run.target_rate is the first, doubled until the SLA fails, then bisected) "
        "at run.threadcount socialites",
    )
    rate_resolution: Annotated[
        float,
        Field(gt=0, le=0.5, description="rate search: stop when the bracket is this narrow "
              "(a share of its low end)"),
    ] = 0.05  # fmt: skip
    state: Literal["carry", "reload", "readback"] = Field(
        "carry",
        description="how each experiment learns the initial value of every tracked item: "
        "carry the workload's exact picture over (reload when a write failed), reload every "
        "fragment, or read the values back from the quiescent store",
    )

    @field_validator("sweep_threads", mode="before")
    @classmethod
    def _comma_list(cls, value: Any) -> Any:
        """`-p rating.sweep_threads=1,2,5` (or =5) as well as the JSON list [1,2,5]."""
        if isinstance(value, int) and not isinstance(value, bool):
            return [value]
        if isinstance(value, str):
            try:
                return [int(v) for v in value.replace(" ", "").strip("[]").split(",") if v]
            except ValueError:
                raise ValueError("give thread counts as a list, e.g. [1, 2, 5]") from None
        return value

    @field_validator("sweep_threads")
    @classmethod
    def _distinct(cls, threads: list[int]) -> list[int]:
        twice = sorted({t for t in threads if threads.count(t) > 1})
        if twice:
            raise ValueError(f"T={twice[0]} is listed twice: list each thread count once")
        return threads


class ModelConfig(BaseModel):
    """The simulated store of `--store model`: a formula of T on a virtual clock."""

    model_config = STRICT

    curve: Literal["quadratic", "sqrt"] = "quadratic"
    peak: Annotated[float, Field(gt=0, description="quadratic: throughput at the vertex")] = 10_000
    peak_threads: Annotated[
        float | None, Field(gt=0, description="quadratic: T at the vertex (default sqrt(peak))")
    ] = None
    rate_at_one: Annotated[
        float, Field(gt=0, description="sqrt: throughput at T=1 (grows as sqrt(T))")
    ] = 1000
    spread: Annotated[
        float, Field(ge=0, le=3, description="sigma of the lognormal latency around T/X")
    ] = 0.5
    unpredictable_per_thread: Annotated[
        float, Field(ge=0, description="% unpredictable reads added per thread")
    ] = 0.0
    noise: Annotated[
        float,
        Field(ge=0, le=1, description="coefficient of variation of each second's throughput "
              "(seeded by run.seed and the experiment)"),
    ] = 0.0  # fmt: skip
    ramp_s: Annotated[
        float,
        Field(ge=0, description="seconds each experiment takes to reach its throughput "
              "(a warm-up to detect)"),
    ] = 0.0  # fmt: skip
    workers: Annotated[int, Field(ge=1, le=1024)] = 2


class ResultsConfig(BaseModel):
    model_config = STRICT

    url: str | None = Field(
        None,
        description="record into this PostgreSQL database (postgresql://USER@HOST:PORT/DB, "
        "the password in PGPASSWORD or a pgpass file) instead of results_dir's SQLite file; "
        "results_dir still holds each rating's work files",
    )


class WorkloadChoice(BaseModel):
    model_config = STRICT

    name: str = Field(
        registry.DEFAULT_WORKLOAD, description="the workload to run (see `bgbench stores`)"
    )


class Settings(BaseModel):
    """The generic sections. A rating's settings are an instance of `settings_model(name)`,
    which adds the workload's own section under its name; `Settings.model_validate`
    picks that model from `workload.name`."""

    model_config = STRICT

    workload: WorkloadChoice = WorkloadChoice()
    store: StoreConfig = StoreConfig()
    run: RunConfig = RunConfig()
    agents: AgentsConfig = AgentsConfig()
    sla: SLAConfig = SLAConfig()
    rating: RatingConfig = RatingConfig()
    model: ModelConfig = ModelConfig()
    resources: ResourcesConfig = ResourcesConfig()
    scenario: Scenario = Field(
        default_factory=list, description="steps at offsets from each rated experiment's start"
    )
    nodes: NodesConfig = Field(default_factory=NodesConfig, description="a scenario's nodes")
    results_dir: Path = Field(Path("results"), description="where experiments are recorded")
    results: ResultsConfig = ResultsConfig()

    @property
    def workload_config(self) -> BaseModel:
        """The workload's own settings section."""
        section: BaseModel = getattr(self, self.workload.name)
        return section

    @classmethod
    def model_validate(cls, obj: Any, *args: Any, **kwargs: Any) -> "Settings":
        if cls is Settings:
            return settings_model(workload_name(obj)).model_validate(obj, *args, **kwargs)
        return super().model_validate(obj, *args, **kwargs)


def workload_name(data: Any) -> str:
    """The workload a raw settings table names (the default when it names none)."""
    choice = data.get("workload") if isinstance(data, dict) else None
    name = choice.get("name") if isinstance(choice, dict) else None
    if name is None:
        return registry.DEFAULT_WORKLOAD
    known = registry.workload_names()
    if name not in known:
        raise UserError(
            f"invalid config: workload.name: unknown workload {name!r}; use one of "
            f"{', '.join(known)}"
        )
    return str(name)


@cache
def settings_model(name: str) -> type[Settings]:
    """Settings plus the section of workload `name`, under its name."""
    workload = registry.get(name)
    if name in Settings.model_fields:
        raise UserError(f"workload {name!r} is named like a settings section: rename it")
    section: Any = (workload.config_model, Field(default_factory=workload.config_model))
    model: type[Settings] = create_model(f"Settings_{name}", __base__=Settings, **{name: section})
    return model


# The run section's parameters by the BG client's names (paper Table 2), for every workload.
RUN_PARAMETERS = {
    "threadcount": "run.threadcount",
    "maxexecutiontime": "run.maxexecutiontime",
    "operationcount": "run.operationcount",
}
# `-p workload.scale=N` (and `--users N`) sets the workload's database size.
SCALE_OVERRIDE = "workload.scale"


def final_duration(settings: "Settings") -> float:
    return settings.sla.delta_s or settings.run.maxexecutiontime


def search_duration(settings: "Settings") -> float:
    return settings.sla.delta_search_s or final_duration(settings)


def parse_override(text: str) -> tuple[str, Any]:
    """`name=value`; the value is read as JSON when it parses, else as a string."""
    if "=" not in text:
        raise UserError(f"parameter {text!r} must look like name=value")
    name, raw = text.split("=", 1)
    name = RUN_PARAMETERS.get(name.strip(), name.strip())
    value = parse_value(name, raw)
    if value is None:
        value = raw  # "null" names the null store more often than it means "unset"
    return name, value


def set_path(data: dict[str, Any], dotted: str, value: Any) -> None:
    parts = dotted.split(".")
    node = data
    for part in parts[:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise UserError(f"parameter {shown(dotted)}: {shown(part)} is not a section")
        node = child
    node[parts[-1]] = value


def load_settings(file: Path | None, overrides: list[tuple[str, Any]]) -> Settings:
    data = apply_overrides(read_file(file) if file else {}, overrides)
    try:
        settings = Settings.model_validate(data)
    except ValidationError as exc:
        raise UserError(describe_validation_error(exc, file)) from None
    return settings


def apply_overrides(data: dict[str, Any], overrides: list[tuple[str, Any]]) -> dict[str, Any]:
    """`data` (a raw settings table) with `-p NAME=VALUE` overrides set in it: NAME a
    dotted path, workload.scale, or a paper's parameter name the workload accepts."""
    choice = [v for d, v in overrides if d == "workload.name"]
    if choice:
        set_path(data, "workload.name", choice[-1])
    name = workload_name(data)
    aliases = registry.get(name).aliases
    for dotted, value in overrides:
        if dotted == SCALE_OVERRIDE:
            dotted = f"{name}.{registry.get(name).scale_parameter}"
        elif dotted in aliases:
            dotted = f"{name}.{aliases[dotted]}"
        set_path(data, dotted, value)
    return data


def describe_validation_error(exc: ValidationError, file: Path | None = None) -> str:
    err = exc.errors()[0]
    source = f" in {file}" if file else ""
    more = f"; and {len(exc.errors()) - 1} more" if len(exc.errors()) > 1 else ""
    if err["type"] == SCENARIO_ERROR:  # the line names the step itself
        return f"invalid config{source}: {err['msg']}{more}"
    where = ".".join(shown(p) for p in err["loc"]) or "config"
    msg = err["msg"]
    if err["type"] == "extra_forbidden":
        msg = "unknown setting (check its spelling and section)"
    given = err.get("input")
    got = "" if isinstance(given, dict) or err["type"] == "missing" else f" (got {given!r})"
    return f"invalid config{source}: {where}: {msg}{got}{more}"
