from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class PreparePhase(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PREPARE_SCHEMA_AND_LOAD: _ClassVar[PreparePhase]
    PREPARE_SCHEMA: _ClassVar[PreparePhase]
    PREPARE_LOAD: _ClassVar[PreparePhase]
    PREPARE_READY: _ClassVar[PreparePhase]
PREPARE_SCHEMA_AND_LOAD: PreparePhase
PREPARE_SCHEMA: PreparePhase
PREPARE_LOAD: PreparePhase
PREPARE_READY: PreparePhase

class Error(_message.Message):
    __slots__ = ("kind", "message", "field")
    KIND_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    FIELD_FIELD_NUMBER: _ClassVar[int]
    kind: str
    message: str
    field: str
    def __init__(self, kind: _Optional[str] = ..., message: _Optional[str] = ..., field: _Optional[str] = ...) -> None: ...

class HandshakeRequest(_message.Message):
    __slots__ = ("protocol_version", "token", "measure_capacity")
    PROTOCOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    MEASURE_CAPACITY_FIELD_NUMBER: _ClassVar[int]
    protocol_version: int
    token: str
    measure_capacity: bool
    def __init__(self, protocol_version: _Optional[int] = ..., token: _Optional[str] = ..., measure_capacity: _Optional[bool] = ...) -> None: ...

class HandshakeReply(_message.Message):
    __slots__ = ("protocol_version", "agent_id", "hostname", "cores", "memory_bytes", "load_processes", "bgbench_version", "python_version", "error", "capacity", "monitor_only")
    PROTOCOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    HOSTNAME_FIELD_NUMBER: _ClassVar[int]
    CORES_FIELD_NUMBER: _ClassVar[int]
    MEMORY_BYTES_FIELD_NUMBER: _ClassVar[int]
    LOAD_PROCESSES_FIELD_NUMBER: _ClassVar[int]
    BGBENCH_VERSION_FIELD_NUMBER: _ClassVar[int]
    PYTHON_VERSION_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    CAPACITY_FIELD_NUMBER: _ClassVar[int]
    MONITOR_ONLY_FIELD_NUMBER: _ClassVar[int]
    protocol_version: int
    agent_id: str
    hostname: str
    cores: int
    memory_bytes: int
    load_processes: int
    bgbench_version: str
    python_version: str
    error: Error
    capacity: float
    monitor_only: bool
    def __init__(self, protocol_version: _Optional[int] = ..., agent_id: _Optional[str] = ..., hostname: _Optional[str] = ..., cores: _Optional[int] = ..., memory_bytes: _Optional[int] = ..., load_processes: _Optional[int] = ..., bgbench_version: _Optional[str] = ..., python_version: _Optional[str] = ..., error: _Optional[_Union[Error, _Mapping]] = ..., capacity: _Optional[float] = ..., monitor_only: _Optional[bool] = ...) -> None: ...

class PrepareRequest(_message.Message):
    __slots__ = ("workload", "workload_config_json", "store", "store_options_json", "capacities", "fragments", "phase", "start_state")
    WORKLOAD_FIELD_NUMBER: _ClassVar[int]
    WORKLOAD_CONFIG_JSON_FIELD_NUMBER: _ClassVar[int]
    STORE_FIELD_NUMBER: _ClassVar[int]
    STORE_OPTIONS_JSON_FIELD_NUMBER: _ClassVar[int]
    CAPACITIES_FIELD_NUMBER: _ClassVar[int]
    FRAGMENTS_FIELD_NUMBER: _ClassVar[int]
    PHASE_FIELD_NUMBER: _ClassVar[int]
    START_STATE_FIELD_NUMBER: _ClassVar[int]
    workload: str
    workload_config_json: str
    store: str
    store_options_json: str
    capacities: _containers.RepeatedScalarFieldContainer[float]
    fragments: _containers.RepeatedScalarFieldContainer[int]
    phase: PreparePhase
    start_state: str
    def __init__(self, workload: _Optional[str] = ..., workload_config_json: _Optional[str] = ..., store: _Optional[str] = ..., store_options_json: _Optional[str] = ..., capacities: _Optional[_Iterable[float]] = ..., fragments: _Optional[_Iterable[int]] = ..., phase: _Optional[_Union[PreparePhase, str]] = ..., start_state: _Optional[str] = ...) -> None: ...

class FragmentInfo(_message.Message):
    __slots__ = ("fragment", "members", "load_seconds", "phase_seconds")
    class PhaseSecondsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    FRAGMENT_FIELD_NUMBER: _ClassVar[int]
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    LOAD_SECONDS_FIELD_NUMBER: _ClassVar[int]
    PHASE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    fragment: int
    members: int
    load_seconds: float
    phase_seconds: _containers.ScalarMap[str, float]
    def __init__(self, fragment: _Optional[int] = ..., members: _Optional[int] = ..., load_seconds: _Optional[float] = ..., phase_seconds: _Optional[_Mapping[str, float]] = ...) -> None: ...

class PrepareReply(_message.Message):
    __slots__ = ("fragments", "store_description", "error")
    FRAGMENTS_FIELD_NUMBER: _ClassVar[int]
    STORE_DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    fragments: _containers.RepeatedCompositeFieldContainer[FragmentInfo]
    store_description: str
    error: Error
    def __init__(self, fragments: _Optional[_Iterable[_Union[FragmentInfo, _Mapping]]] = ..., store_description: _Optional[str] = ..., error: _Optional[_Union[Error, _Mapping]] = ...) -> None: ...

class RunRequest(_message.Message):
    __slots__ = ("experiment_id", "threads", "duration_seconds", "operation_count", "seed", "start_state", "target_rate", "arrivals", "watch", "tolerate_errors")
    EXPERIMENT_ID_FIELD_NUMBER: _ClassVar[int]
    THREADS_FIELD_NUMBER: _ClassVar[int]
    DURATION_SECONDS_FIELD_NUMBER: _ClassVar[int]
    OPERATION_COUNT_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    START_STATE_FIELD_NUMBER: _ClassVar[int]
    TARGET_RATE_FIELD_NUMBER: _ClassVar[int]
    ARRIVALS_FIELD_NUMBER: _ClassVar[int]
    WATCH_FIELD_NUMBER: _ClassVar[int]
    TOLERATE_ERRORS_FIELD_NUMBER: _ClassVar[int]
    experiment_id: str
    threads: int
    duration_seconds: float
    operation_count: int
    seed: int
    start_state: str
    target_rate: float
    arrivals: str
    watch: StoreWatch
    tolerate_errors: bool
    def __init__(self, experiment_id: _Optional[str] = ..., threads: _Optional[int] = ..., duration_seconds: _Optional[float] = ..., operation_count: _Optional[int] = ..., seed: _Optional[int] = ..., start_state: _Optional[str] = ..., target_rate: _Optional[float] = ..., arrivals: _Optional[str] = ..., watch: _Optional[_Union[StoreWatch, _Mapping]] = ..., tolerate_errors: _Optional[bool] = ...) -> None: ...

class StoreWatch(_message.Message):
    __slots__ = ("pids", "names", "container", "no_discovery")
    PIDS_FIELD_NUMBER: _ClassVar[int]
    NAMES_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_FIELD_NUMBER: _ClassVar[int]
    NO_DISCOVERY_FIELD_NUMBER: _ClassVar[int]
    pids: _containers.RepeatedScalarFieldContainer[int]
    names: _containers.RepeatedScalarFieldContainer[str]
    container: str
    no_discovery: bool
    def __init__(self, pids: _Optional[_Iterable[int]] = ..., names: _Optional[_Iterable[str]] = ..., container: _Optional[str] = ..., no_discovery: _Optional[bool] = ...) -> None: ...

class GroupSample(_message.Message):
    __slots__ = ("cpu_cores", "cores_allowed", "busiest_cores", "rss_bytes", "processes", "found_by", "runqueue_cores")
    CPU_CORES_FIELD_NUMBER: _ClassVar[int]
    CORES_ALLOWED_FIELD_NUMBER: _ClassVar[int]
    BUSIEST_CORES_FIELD_NUMBER: _ClassVar[int]
    RSS_BYTES_FIELD_NUMBER: _ClassVar[int]
    PROCESSES_FIELD_NUMBER: _ClassVar[int]
    FOUND_BY_FIELD_NUMBER: _ClassVar[int]
    RUNQUEUE_CORES_FIELD_NUMBER: _ClassVar[int]
    cpu_cores: float
    cores_allowed: float
    busiest_cores: float
    rss_bytes: int
    processes: int
    found_by: str
    runqueue_cores: float
    def __init__(self, cpu_cores: _Optional[float] = ..., cores_allowed: _Optional[float] = ..., busiest_cores: _Optional[float] = ..., rss_bytes: _Optional[int] = ..., processes: _Optional[int] = ..., found_by: _Optional[str] = ..., runqueue_cores: _Optional[float] = ...) -> None: ...

class HostSample(_message.Message):
    __slots__ = ("host_id", "host", "source", "elapsed_seconds", "interval_seconds", "cpu_per_core", "memory_used_bytes", "memory_total_bytes", "disk_read_bytes_per_s", "disk_write_bytes_per_s", "disk_busy", "net_rx_bytes_per_s", "net_tx_bytes_per_s", "net_capacity_bytes_per_s", "load", "store", "busiest_disk", "net_link_bytes_per_s")
    HOST_ID_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    ELAPSED_SECONDS_FIELD_NUMBER: _ClassVar[int]
    INTERVAL_SECONDS_FIELD_NUMBER: _ClassVar[int]
    CPU_PER_CORE_FIELD_NUMBER: _ClassVar[int]
    MEMORY_USED_BYTES_FIELD_NUMBER: _ClassVar[int]
    MEMORY_TOTAL_BYTES_FIELD_NUMBER: _ClassVar[int]
    DISK_READ_BYTES_PER_S_FIELD_NUMBER: _ClassVar[int]
    DISK_WRITE_BYTES_PER_S_FIELD_NUMBER: _ClassVar[int]
    DISK_BUSY_FIELD_NUMBER: _ClassVar[int]
    NET_RX_BYTES_PER_S_FIELD_NUMBER: _ClassVar[int]
    NET_TX_BYTES_PER_S_FIELD_NUMBER: _ClassVar[int]
    NET_CAPACITY_BYTES_PER_S_FIELD_NUMBER: _ClassVar[int]
    LOAD_FIELD_NUMBER: _ClassVar[int]
    STORE_FIELD_NUMBER: _ClassVar[int]
    BUSIEST_DISK_FIELD_NUMBER: _ClassVar[int]
    NET_LINK_BYTES_PER_S_FIELD_NUMBER: _ClassVar[int]
    host_id: str
    host: str
    source: str
    elapsed_seconds: float
    interval_seconds: float
    cpu_per_core: _containers.RepeatedScalarFieldContainer[float]
    memory_used_bytes: int
    memory_total_bytes: int
    disk_read_bytes_per_s: float
    disk_write_bytes_per_s: float
    disk_busy: float
    net_rx_bytes_per_s: float
    net_tx_bytes_per_s: float
    net_capacity_bytes_per_s: float
    load: GroupSample
    store: GroupSample
    busiest_disk: str
    net_link_bytes_per_s: float
    def __init__(self, host_id: _Optional[str] = ..., host: _Optional[str] = ..., source: _Optional[str] = ..., elapsed_seconds: _Optional[float] = ..., interval_seconds: _Optional[float] = ..., cpu_per_core: _Optional[_Iterable[float]] = ..., memory_used_bytes: _Optional[int] = ..., memory_total_bytes: _Optional[int] = ..., disk_read_bytes_per_s: _Optional[float] = ..., disk_write_bytes_per_s: _Optional[float] = ..., disk_busy: _Optional[float] = ..., net_rx_bytes_per_s: _Optional[float] = ..., net_tx_bytes_per_s: _Optional[float] = ..., net_capacity_bytes_per_s: _Optional[float] = ..., load: _Optional[_Union[GroupSample, _Mapping]] = ..., store: _Optional[_Union[GroupSample, _Mapping]] = ..., busiest_disk: _Optional[str] = ..., net_link_bytes_per_s: _Optional[float] = ...) -> None: ...

class WatchRequest(_message.Message):
    __slots__ = ("experiment_id", "duration_seconds", "watch")
    EXPERIMENT_ID_FIELD_NUMBER: _ClassVar[int]
    DURATION_SECONDS_FIELD_NUMBER: _ClassVar[int]
    WATCH_FIELD_NUMBER: _ClassVar[int]
    experiment_id: str
    duration_seconds: float
    watch: StoreWatch
    def __init__(self, experiment_id: _Optional[str] = ..., duration_seconds: _Optional[float] = ..., watch: _Optional[_Union[StoreWatch, _Mapping]] = ...) -> None: ...

class Progress(_message.Message):
    __slots__ = ("elapsed_seconds", "actions", "errors", "sessions", "cpu_percent", "response_hist_delta", "client_lag_ms", "host", "timeouts")
    ELAPSED_SECONDS_FIELD_NUMBER: _ClassVar[int]
    ACTIONS_FIELD_NUMBER: _ClassVar[int]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    SESSIONS_FIELD_NUMBER: _ClassVar[int]
    CPU_PERCENT_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_HIST_DELTA_FIELD_NUMBER: _ClassVar[int]
    CLIENT_LAG_MS_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    TIMEOUTS_FIELD_NUMBER: _ClassVar[int]
    elapsed_seconds: float
    actions: int
    errors: int
    sessions: int
    cpu_percent: float
    response_hist_delta: bytes
    client_lag_ms: float
    host: HostSample
    timeouts: int
    def __init__(self, elapsed_seconds: _Optional[float] = ..., actions: _Optional[int] = ..., errors: _Optional[int] = ..., sessions: _Optional[int] = ..., cpu_percent: _Optional[float] = ..., response_hist_delta: _Optional[bytes] = ..., client_lag_ms: _Optional[float] = ..., host: _Optional[_Union[HostSample, _Mapping]] = ..., timeouts: _Optional[int] = ...) -> None: ...

class ActionStats(_message.Message):
    __slots__ = ("action", "count", "errors", "response_hist", "service_hist", "counts")
    class CountsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    ACTION_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_HIST_FIELD_NUMBER: _ClassVar[int]
    SERVICE_HIST_FIELD_NUMBER: _ClassVar[int]
    COUNTS_FIELD_NUMBER: _ClassVar[int]
    action: str
    count: int
    errors: int
    response_hist: bytes
    service_hist: bytes
    counts: _containers.ScalarMap[str, int]
    def __init__(self, action: _Optional[str] = ..., count: _Optional[int] = ..., errors: _Optional[int] = ..., response_hist: _Optional[bytes] = ..., service_hist: _Optional[bytes] = ..., counts: _Optional[_Mapping[str, int]] = ...) -> None: ...

class ErrorCount(_message.Message):
    __slots__ = ("action", "type", "count", "sample")
    ACTION_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    SAMPLE_FIELD_NUMBER: _ClassVar[int]
    action: str
    type: str
    count: int
    sample: str
    def __init__(self, action: _Optional[str] = ..., type: _Optional[str] = ..., count: _Optional[int] = ..., sample: _Optional[str] = ...) -> None: ...

class RunResult(_message.Message):
    __slots__ = ("elapsed_seconds", "actions", "sessions", "errors", "per_action", "error_counts", "cpu_seconds", "load_processes", "engine_saturated", "embedded_store", "log_records", "log_dir", "state_uncertain", "aborted", "threads", "session_hist", "start_state", "store_counters", "client_delay_hist", "loop_lag_max_ms", "concurrency", "per_unit", "workload_payload", "timeouts", "note", "ended_per_interval", "ended_interval_seconds")
    class StoreCountersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    class PerUnitEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    ELAPSED_SECONDS_FIELD_NUMBER: _ClassVar[int]
    ACTIONS_FIELD_NUMBER: _ClassVar[int]
    SESSIONS_FIELD_NUMBER: _ClassVar[int]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    PER_ACTION_FIELD_NUMBER: _ClassVar[int]
    ERROR_COUNTS_FIELD_NUMBER: _ClassVar[int]
    CPU_SECONDS_FIELD_NUMBER: _ClassVar[int]
    LOAD_PROCESSES_FIELD_NUMBER: _ClassVar[int]
    ENGINE_SATURATED_FIELD_NUMBER: _ClassVar[int]
    EMBEDDED_STORE_FIELD_NUMBER: _ClassVar[int]
    LOG_RECORDS_FIELD_NUMBER: _ClassVar[int]
    LOG_DIR_FIELD_NUMBER: _ClassVar[int]
    STATE_UNCERTAIN_FIELD_NUMBER: _ClassVar[int]
    ABORTED_FIELD_NUMBER: _ClassVar[int]
    THREADS_FIELD_NUMBER: _ClassVar[int]
    SESSION_HIST_FIELD_NUMBER: _ClassVar[int]
    START_STATE_FIELD_NUMBER: _ClassVar[int]
    STORE_COUNTERS_FIELD_NUMBER: _ClassVar[int]
    CLIENT_DELAY_HIST_FIELD_NUMBER: _ClassVar[int]
    LOOP_LAG_MAX_MS_FIELD_NUMBER: _ClassVar[int]
    CONCURRENCY_FIELD_NUMBER: _ClassVar[int]
    PER_UNIT_FIELD_NUMBER: _ClassVar[int]
    WORKLOAD_PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    TIMEOUTS_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    ENDED_PER_INTERVAL_FIELD_NUMBER: _ClassVar[int]
    ENDED_INTERVAL_SECONDS_FIELD_NUMBER: _ClassVar[int]
    elapsed_seconds: float
    actions: int
    sessions: int
    errors: int
    per_action: _containers.RepeatedCompositeFieldContainer[ActionStats]
    error_counts: _containers.RepeatedCompositeFieldContainer[ErrorCount]
    cpu_seconds: float
    load_processes: int
    engine_saturated: bool
    embedded_store: bool
    log_records: int
    log_dir: str
    state_uncertain: bool
    aborted: str
    threads: int
    session_hist: bytes
    start_state: str
    store_counters: _containers.ScalarMap[str, int]
    client_delay_hist: bytes
    loop_lag_max_ms: float
    concurrency: str
    per_unit: _containers.ScalarMap[str, int]
    workload_payload: str
    timeouts: int
    note: str
    ended_per_interval: _containers.RepeatedScalarFieldContainer[int]
    ended_interval_seconds: float
    def __init__(self, elapsed_seconds: _Optional[float] = ..., actions: _Optional[int] = ..., sessions: _Optional[int] = ..., errors: _Optional[int] = ..., per_action: _Optional[_Iterable[_Union[ActionStats, _Mapping]]] = ..., error_counts: _Optional[_Iterable[_Union[ErrorCount, _Mapping]]] = ..., cpu_seconds: _Optional[float] = ..., load_processes: _Optional[int] = ..., engine_saturated: _Optional[bool] = ..., embedded_store: _Optional[bool] = ..., log_records: _Optional[int] = ..., log_dir: _Optional[str] = ..., state_uncertain: _Optional[bool] = ..., aborted: _Optional[str] = ..., threads: _Optional[int] = ..., session_hist: _Optional[bytes] = ..., start_state: _Optional[str] = ..., store_counters: _Optional[_Mapping[str, int]] = ..., client_delay_hist: _Optional[bytes] = ..., loop_lag_max_ms: _Optional[float] = ..., concurrency: _Optional[str] = ..., per_unit: _Optional[_Mapping[str, int]] = ..., workload_payload: _Optional[str] = ..., timeouts: _Optional[int] = ..., note: _Optional[str] = ..., ended_per_interval: _Optional[_Iterable[int]] = ..., ended_interval_seconds: _Optional[float] = ...) -> None: ...

class RunEvent(_message.Message):
    __slots__ = ("progress", "result", "error")
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    progress: Progress
    result: RunResult
    error: Error
    def __init__(self, progress: _Optional[_Union[Progress, _Mapping]] = ..., result: _Optional[_Union[RunResult, _Mapping]] = ..., error: _Optional[_Union[Error, _Mapping]] = ...) -> None: ...

class ValidateRequest(_message.Message):
    __slots__ = ("experiment_id", "phase_starts_s", "series_bin_s")
    EXPERIMENT_ID_FIELD_NUMBER: _ClassVar[int]
    PHASE_STARTS_S_FIELD_NUMBER: _ClassVar[int]
    SERIES_BIN_S_FIELD_NUMBER: _ClassVar[int]
    experiment_id: str
    phase_starts_s: _containers.RepeatedScalarFieldContainer[float]
    series_bin_s: float
    def __init__(self, experiment_id: _Optional[str] = ..., phase_starts_s: _Optional[_Iterable[float]] = ..., series_bin_s: _Optional[float] = ...) -> None: ...

class PhaseReads(_message.Message):
    __slots__ = ("reads", "unpredictable", "lag_hist")
    READS_FIELD_NUMBER: _ClassVar[int]
    UNPREDICTABLE_FIELD_NUMBER: _ClassVar[int]
    LAG_HIST_FIELD_NUMBER: _ClassVar[int]
    reads: int
    unpredictable: int
    lag_hist: bytes
    def __init__(self, reads: _Optional[int] = ..., unpredictable: _Optional[int] = ..., lag_hist: _Optional[bytes] = ...) -> None: ...

class ValidateReply(_message.Message):
    __slots__ = ("reads", "unpredictable_reads", "sessions", "unpredictable_sessions", "writes", "log_records", "seconds", "error", "lag_hist", "never_valid", "by_item", "by_action", "examples_json", "workload_payload", "phases", "series_reads", "series_unpredictable", "visibility")
    READS_FIELD_NUMBER: _ClassVar[int]
    UNPREDICTABLE_READS_FIELD_NUMBER: _ClassVar[int]
    SESSIONS_FIELD_NUMBER: _ClassVar[int]
    UNPREDICTABLE_SESSIONS_FIELD_NUMBER: _ClassVar[int]
    WRITES_FIELD_NUMBER: _ClassVar[int]
    LOG_RECORDS_FIELD_NUMBER: _ClassVar[int]
    SECONDS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    LAG_HIST_FIELD_NUMBER: _ClassVar[int]
    NEVER_VALID_FIELD_NUMBER: _ClassVar[int]
    BY_ITEM_FIELD_NUMBER: _ClassVar[int]
    BY_ACTION_FIELD_NUMBER: _ClassVar[int]
    EXAMPLES_JSON_FIELD_NUMBER: _ClassVar[int]
    WORKLOAD_PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    PHASES_FIELD_NUMBER: _ClassVar[int]
    SERIES_READS_FIELD_NUMBER: _ClassVar[int]
    SERIES_UNPREDICTABLE_FIELD_NUMBER: _ClassVar[int]
    VISIBILITY_FIELD_NUMBER: _ClassVar[int]
    reads: int
    unpredictable_reads: int
    sessions: int
    unpredictable_sessions: int
    writes: int
    log_records: int
    seconds: float
    error: Error
    lag_hist: bytes
    never_valid: int
    by_item: _containers.RepeatedCompositeFieldContainer[ReadCount]
    by_action: _containers.RepeatedCompositeFieldContainer[ReadCount]
    examples_json: str
    workload_payload: str
    phases: _containers.RepeatedCompositeFieldContainer[PhaseReads]
    series_reads: _containers.RepeatedScalarFieldContainer[int]
    series_unpredictable: _containers.RepeatedScalarFieldContainer[int]
    visibility: _containers.RepeatedCompositeFieldContainer[WriteVisibility]
    def __init__(self, reads: _Optional[int] = ..., unpredictable_reads: _Optional[int] = ..., sessions: _Optional[int] = ..., unpredictable_sessions: _Optional[int] = ..., writes: _Optional[int] = ..., log_records: _Optional[int] = ..., seconds: _Optional[float] = ..., error: _Optional[_Union[Error, _Mapping]] = ..., lag_hist: _Optional[bytes] = ..., never_valid: _Optional[int] = ..., by_item: _Optional[_Iterable[_Union[ReadCount, _Mapping]]] = ..., by_action: _Optional[_Iterable[_Union[ReadCount, _Mapping]]] = ..., examples_json: _Optional[str] = ..., workload_payload: _Optional[str] = ..., phases: _Optional[_Iterable[_Union[PhaseReads, _Mapping]]] = ..., series_reads: _Optional[_Iterable[int]] = ..., series_unpredictable: _Optional[_Iterable[int]] = ..., visibility: _Optional[_Iterable[_Union[WriteVisibility, _Mapping]]] = ...) -> None: ...

class WriteVisibility(_message.Message):
    __slots__ = ("action", "item", "writes", "never", "unread", "hist")
    ACTION_FIELD_NUMBER: _ClassVar[int]
    ITEM_FIELD_NUMBER: _ClassVar[int]
    WRITES_FIELD_NUMBER: _ClassVar[int]
    NEVER_FIELD_NUMBER: _ClassVar[int]
    UNREAD_FIELD_NUMBER: _ClassVar[int]
    HIST_FIELD_NUMBER: _ClassVar[int]
    action: str
    item: str
    writes: int
    never: int
    unread: int
    hist: bytes
    def __init__(self, action: _Optional[str] = ..., item: _Optional[str] = ..., writes: _Optional[int] = ..., never: _Optional[int] = ..., unread: _Optional[int] = ..., hist: _Optional[bytes] = ...) -> None: ...

class ReadCount(_message.Message):
    __slots__ = ("name", "reads", "unpredictable")
    NAME_FIELD_NUMBER: _ClassVar[int]
    READS_FIELD_NUMBER: _ClassVar[int]
    UNPREDICTABLE_FIELD_NUMBER: _ClassVar[int]
    name: str
    reads: int
    unpredictable: int
    def __init__(self, name: _Optional[str] = ..., reads: _Optional[int] = ..., unpredictable: _Optional[int] = ...) -> None: ...

class StatusRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class LoadProcessStatus(_message.Message):
    __slots__ = ("pid", "alive", "fragment", "phase", "beats", "busy_seconds", "quiet_seconds")
    PID_FIELD_NUMBER: _ClassVar[int]
    ALIVE_FIELD_NUMBER: _ClassVar[int]
    FRAGMENT_FIELD_NUMBER: _ClassVar[int]
    PHASE_FIELD_NUMBER: _ClassVar[int]
    BEATS_FIELD_NUMBER: _ClassVar[int]
    BUSY_SECONDS_FIELD_NUMBER: _ClassVar[int]
    QUIET_SECONDS_FIELD_NUMBER: _ClassVar[int]
    pid: int
    alive: bool
    fragment: int
    phase: str
    beats: int
    busy_seconds: float
    quiet_seconds: float
    def __init__(self, pid: _Optional[int] = ..., alive: _Optional[bool] = ..., fragment: _Optional[int] = ..., phase: _Optional[str] = ..., beats: _Optional[int] = ..., busy_seconds: _Optional[float] = ..., quiet_seconds: _Optional[float] = ...) -> None: ...

class StatusReply(_message.Message):
    __slots__ = ("agent_id", "processes")
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    PROCESSES_FIELD_NUMBER: _ClassVar[int]
    agent_id: str
    processes: _containers.RepeatedCompositeFieldContainer[LoadProcessStatus]
    def __init__(self, agent_id: _Optional[str] = ..., processes: _Optional[_Iterable[_Union[LoadProcessStatus, _Mapping]]] = ...) -> None: ...

class ShutdownRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ShutdownReply(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
