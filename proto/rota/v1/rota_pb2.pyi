from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class JobState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    JOB_STATE_UNSPECIFIED: _ClassVar[JobState]
    PENDING: _ClassVar[JobState]
    CONFIGURING: _ClassVar[JobState]
    RUNNING: _ClassVar[JobState]
    COMPLETING: _ClassVar[JobState]
    COMPLETED: _ClassVar[JobState]
    FAILED: _ClassVar[JobState]
    CANCELLED: _ClassVar[JobState]
    TIMEOUT: _ClassVar[JobState]
    NODE_FAIL: _ClassVar[JobState]
    OUT_OF_MEMORY: _ClassVar[JobState]
    PREEMPTED: _ClassVar[JobState]

class ControlAction(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CONTROL_ACTION_UNSPECIFIED: _ClassVar[ControlAction]
    HOLD: _ClassVar[ControlAction]
    RELEASE: _ClassVar[ControlAction]
    REQUEUE: _ClassVar[ControlAction]

class JobEventKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    JOB_EVENT_KIND_UNSPECIFIED: _ClassVar[JobEventKind]
    STARTED: _ClassVar[JobEventKind]
    EXITED: _ClassVar[JobEventKind]
    LAUNCH_FAILED: _ClassVar[JobEventKind]
    KILLED: _ClassVar[JobEventKind]
    TIMED_OUT: _ClassVar[JobEventKind]
    LOST: _ClassVar[JobEventKind]
JOB_STATE_UNSPECIFIED: JobState
PENDING: JobState
CONFIGURING: JobState
RUNNING: JobState
COMPLETING: JobState
COMPLETED: JobState
FAILED: JobState
CANCELLED: JobState
TIMEOUT: JobState
NODE_FAIL: JobState
OUT_OF_MEMORY: JobState
PREEMPTED: JobState
CONTROL_ACTION_UNSPECIFIED: ControlAction
HOLD: ControlAction
RELEASE: ControlAction
REQUEUE: ControlAction
JOB_EVENT_KIND_UNSPECIFIED: JobEventKind
STARTED: JobEventKind
EXITED: JobEventKind
LAUNCH_FAILED: JobEventKind
KILLED: JobEventKind
TIMED_OUT: JobEventKind
LOST: JobEventKind

class Resources(_message.Message):
    __slots__ = ("gpus", "gpu_type", "gpu_memory", "cpus", "memory")
    GPUS_FIELD_NUMBER: _ClassVar[int]
    GPU_TYPE_FIELD_NUMBER: _ClassVar[int]
    GPU_MEMORY_FIELD_NUMBER: _ClassVar[int]
    CPUS_FIELD_NUMBER: _ClassVar[int]
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    gpus: int
    gpu_type: str
    gpu_memory: int
    cpus: float
    memory: int
    def __init__(self, gpus: _Optional[int] = ..., gpu_type: _Optional[str] = ..., gpu_memory: _Optional[int] = ..., cpus: _Optional[float] = ..., memory: _Optional[int] = ...) -> None: ...

class Mount(_message.Message):
    __slots__ = ("source", "target", "read_only")
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    READ_ONLY_FIELD_NUMBER: _ClassVar[int]
    source: str
    target: str
    read_only: bool
    def __init__(self, source: _Optional[str] = ..., target: _Optional[str] = ..., read_only: _Optional[bool] = ...) -> None: ...

class JobSpec(_message.Message):
    __slots__ = ("name", "image", "command", "resources", "nodes", "time_limit", "account", "qos", "priority", "preemptible", "requeue", "dependency", "begin_time", "array", "reservation", "node_selector", "exclusive", "env", "mounts", "workdir", "shm_size", "pull", "hold", "notify_url", "notify_on", "output", "error", "slurm_env", "submit_dir", "submit_host", "partition", "checkpointable", "signal", "interactive", "tty", "nodelist", "exclude", "mail_type", "mail_user", "ntasks", "ntasks_per_node", "gpus_per_task", "constraint", "open_mode")
    class NodeSelectorEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class EnvEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    IMAGE_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    TIME_LIMIT_FIELD_NUMBER: _ClassVar[int]
    ACCOUNT_FIELD_NUMBER: _ClassVar[int]
    QOS_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    PREEMPTIBLE_FIELD_NUMBER: _ClassVar[int]
    REQUEUE_FIELD_NUMBER: _ClassVar[int]
    DEPENDENCY_FIELD_NUMBER: _ClassVar[int]
    BEGIN_TIME_FIELD_NUMBER: _ClassVar[int]
    ARRAY_FIELD_NUMBER: _ClassVar[int]
    RESERVATION_FIELD_NUMBER: _ClassVar[int]
    NODE_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    EXCLUSIVE_FIELD_NUMBER: _ClassVar[int]
    ENV_FIELD_NUMBER: _ClassVar[int]
    MOUNTS_FIELD_NUMBER: _ClassVar[int]
    WORKDIR_FIELD_NUMBER: _ClassVar[int]
    SHM_SIZE_FIELD_NUMBER: _ClassVar[int]
    PULL_FIELD_NUMBER: _ClassVar[int]
    HOLD_FIELD_NUMBER: _ClassVar[int]
    NOTIFY_URL_FIELD_NUMBER: _ClassVar[int]
    NOTIFY_ON_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    SLURM_ENV_FIELD_NUMBER: _ClassVar[int]
    SUBMIT_DIR_FIELD_NUMBER: _ClassVar[int]
    SUBMIT_HOST_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINTABLE_FIELD_NUMBER: _ClassVar[int]
    SIGNAL_FIELD_NUMBER: _ClassVar[int]
    INTERACTIVE_FIELD_NUMBER: _ClassVar[int]
    TTY_FIELD_NUMBER: _ClassVar[int]
    NODELIST_FIELD_NUMBER: _ClassVar[int]
    EXCLUDE_FIELD_NUMBER: _ClassVar[int]
    MAIL_TYPE_FIELD_NUMBER: _ClassVar[int]
    MAIL_USER_FIELD_NUMBER: _ClassVar[int]
    NTASKS_FIELD_NUMBER: _ClassVar[int]
    NTASKS_PER_NODE_FIELD_NUMBER: _ClassVar[int]
    GPUS_PER_TASK_FIELD_NUMBER: _ClassVar[int]
    CONSTRAINT_FIELD_NUMBER: _ClassVar[int]
    OPEN_MODE_FIELD_NUMBER: _ClassVar[int]
    name: str
    image: str
    command: _containers.RepeatedScalarFieldContainer[str]
    resources: Resources
    nodes: int
    time_limit: float
    account: str
    qos: str
    priority: int
    preemptible: bool
    requeue: bool
    dependency: str
    begin_time: float
    array: str
    reservation: str
    node_selector: _containers.ScalarMap[str, str]
    exclusive: bool
    env: _containers.ScalarMap[str, str]
    mounts: _containers.RepeatedCompositeFieldContainer[Mount]
    workdir: str
    shm_size: int
    pull: str
    hold: bool
    notify_url: str
    notify_on: _containers.RepeatedScalarFieldContainer[str]
    output: str
    error: str
    slurm_env: bool
    submit_dir: str
    submit_host: str
    partition: str
    checkpointable: bool
    signal: str
    interactive: bool
    tty: bool
    nodelist: str
    exclude: str
    mail_type: _containers.RepeatedScalarFieldContainer[str]
    mail_user: str
    ntasks: int
    ntasks_per_node: int
    gpus_per_task: int
    constraint: str
    open_mode: str
    def __init__(self, name: _Optional[str] = ..., image: _Optional[str] = ..., command: _Optional[_Iterable[str]] = ..., resources: _Optional[_Union[Resources, _Mapping]] = ..., nodes: _Optional[int] = ..., time_limit: _Optional[float] = ..., account: _Optional[str] = ..., qos: _Optional[str] = ..., priority: _Optional[int] = ..., preemptible: _Optional[bool] = ..., requeue: _Optional[bool] = ..., dependency: _Optional[str] = ..., begin_time: _Optional[float] = ..., array: _Optional[str] = ..., reservation: _Optional[str] = ..., node_selector: _Optional[_Mapping[str, str]] = ..., exclusive: _Optional[bool] = ..., env: _Optional[_Mapping[str, str]] = ..., mounts: _Optional[_Iterable[_Union[Mount, _Mapping]]] = ..., workdir: _Optional[str] = ..., shm_size: _Optional[int] = ..., pull: _Optional[str] = ..., hold: _Optional[bool] = ..., notify_url: _Optional[str] = ..., notify_on: _Optional[_Iterable[str]] = ..., output: _Optional[str] = ..., error: _Optional[str] = ..., slurm_env: _Optional[bool] = ..., submit_dir: _Optional[str] = ..., submit_host: _Optional[str] = ..., partition: _Optional[str] = ..., checkpointable: _Optional[bool] = ..., signal: _Optional[str] = ..., interactive: _Optional[bool] = ..., tty: _Optional[bool] = ..., nodelist: _Optional[str] = ..., exclude: _Optional[str] = ..., mail_type: _Optional[_Iterable[str]] = ..., mail_user: _Optional[str] = ..., ntasks: _Optional[int] = ..., ntasks_per_node: _Optional[int] = ..., gpus_per_task: _Optional[int] = ..., constraint: _Optional[str] = ..., open_mode: _Optional[str] = ...) -> None: ...

class JobEvent(_message.Message):
    __slots__ = ("time", "old_state", "new_state", "reason", "attempt", "kind")
    TIME_FIELD_NUMBER: _ClassVar[int]
    OLD_STATE_FIELD_NUMBER: _ClassVar[int]
    NEW_STATE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    time: float
    old_state: str
    new_state: str
    reason: str
    attempt: int
    kind: str
    def __init__(self, time: _Optional[float] = ..., old_state: _Optional[str] = ..., new_state: _Optional[str] = ..., reason: _Optional[str] = ..., attempt: _Optional[int] = ..., kind: _Optional[str] = ...) -> None: ...

class GpuIds(_message.Message):
    __slots__ = ("indices", "uuids")
    INDICES_FIELD_NUMBER: _ClassVar[int]
    UUIDS_FIELD_NUMBER: _ClassVar[int]
    indices: _containers.RepeatedScalarFieldContainer[int]
    uuids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, indices: _Optional[_Iterable[int]] = ..., uuids: _Optional[_Iterable[str]] = ...) -> None: ...

class Job(_message.Message):
    __slots__ = ("id", "job_id", "array_job_id", "array_task_id", "name", "user", "account", "state", "state_code", "reason", "has_exit_code", "exit_code", "attempt", "nodes", "gpus", "gpu_ids", "submit_time", "start_time", "end_time", "time_limit", "spec", "estimated_start", "priority", "events", "held", "warning", "partition")
    class GpuIdsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: GpuIds
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[GpuIds, _Mapping]] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    ARRAY_JOB_ID_FIELD_NUMBER: _ClassVar[int]
    ARRAY_TASK_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    ACCOUNT_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    STATE_CODE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    HAS_EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    GPUS_FIELD_NUMBER: _ClassVar[int]
    GPU_IDS_FIELD_NUMBER: _ClassVar[int]
    SUBMIT_TIME_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    END_TIME_FIELD_NUMBER: _ClassVar[int]
    TIME_LIMIT_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    ESTIMATED_START_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    HELD_FIELD_NUMBER: _ClassVar[int]
    WARNING_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    id: str
    job_id: int
    array_job_id: int
    array_task_id: int
    name: str
    user: str
    account: str
    state: JobState
    state_code: str
    reason: str
    has_exit_code: bool
    exit_code: int
    attempt: int
    nodes: _containers.RepeatedScalarFieldContainer[str]
    gpus: int
    gpu_ids: _containers.MessageMap[str, GpuIds]
    submit_time: float
    start_time: float
    end_time: float
    time_limit: float
    spec: JobSpec
    estimated_start: float
    priority: float
    events: _containers.RepeatedCompositeFieldContainer[JobEvent]
    held: str
    warning: str
    partition: str
    def __init__(self, id: _Optional[str] = ..., job_id: _Optional[int] = ..., array_job_id: _Optional[int] = ..., array_task_id: _Optional[int] = ..., name: _Optional[str] = ..., user: _Optional[str] = ..., account: _Optional[str] = ..., state: _Optional[_Union[JobState, str]] = ..., state_code: _Optional[str] = ..., reason: _Optional[str] = ..., has_exit_code: _Optional[bool] = ..., exit_code: _Optional[int] = ..., attempt: _Optional[int] = ..., nodes: _Optional[_Iterable[str]] = ..., gpus: _Optional[int] = ..., gpu_ids: _Optional[_Mapping[str, GpuIds]] = ..., submit_time: _Optional[float] = ..., start_time: _Optional[float] = ..., end_time: _Optional[float] = ..., time_limit: _Optional[float] = ..., spec: _Optional[_Union[JobSpec, _Mapping]] = ..., estimated_start: _Optional[float] = ..., priority: _Optional[float] = ..., events: _Optional[_Iterable[_Union[JobEvent, _Mapping]]] = ..., held: _Optional[str] = ..., warning: _Optional[str] = ..., partition: _Optional[str] = ...) -> None: ...

class SubmitItem(_message.Message):
    __slots__ = ("client_request_id", "spec", "source")
    CLIENT_REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    client_request_id: str
    spec: JobSpec
    source: str
    def __init__(self, client_request_id: _Optional[str] = ..., spec: _Optional[_Union[JobSpec, _Mapping]] = ..., source: _Optional[str] = ...) -> None: ...

class SubmitJobsRequest(_message.Message):
    __slots__ = ("items", "user", "test_only")
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    TEST_ONLY_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedCompositeFieldContainer[SubmitItem]
    user: str
    test_only: bool
    def __init__(self, items: _Optional[_Iterable[_Union[SubmitItem, _Mapping]]] = ..., user: _Optional[str] = ..., test_only: _Optional[bool] = ...) -> None: ...

class SubmittedJob(_message.Message):
    __slots__ = ("client_request_id", "job_ids", "duplicate", "estimated_start", "reason", "warnings")
    CLIENT_REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    JOB_IDS_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_FIELD_NUMBER: _ClassVar[int]
    ESTIMATED_START_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    client_request_id: str
    job_ids: _containers.RepeatedScalarFieldContainer[str]
    duplicate: bool
    estimated_start: float
    reason: str
    warnings: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, client_request_id: _Optional[str] = ..., job_ids: _Optional[_Iterable[str]] = ..., duplicate: _Optional[bool] = ..., estimated_start: _Optional[float] = ..., reason: _Optional[str] = ..., warnings: _Optional[_Iterable[str]] = ...) -> None: ...

class SubmitJobsResponse(_message.Message):
    __slots__ = ("jobs",)
    JOBS_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[SubmittedJob]
    def __init__(self, jobs: _Optional[_Iterable[_Union[SubmittedJob, _Mapping]]] = ...) -> None: ...

class GetJobRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class ListJobsRequest(_message.Message):
    __slots__ = ("states", "all_states", "ids", "users", "accounts", "page_size", "page_token", "with_priority", "with_steps")
    STATES_FIELD_NUMBER: _ClassVar[int]
    ALL_STATES_FIELD_NUMBER: _ClassVar[int]
    IDS_FIELD_NUMBER: _ClassVar[int]
    USERS_FIELD_NUMBER: _ClassVar[int]
    ACCOUNTS_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    WITH_PRIORITY_FIELD_NUMBER: _ClassVar[int]
    WITH_STEPS_FIELD_NUMBER: _ClassVar[int]
    states: _containers.RepeatedScalarFieldContainer[JobState]
    all_states: bool
    ids: _containers.RepeatedScalarFieldContainer[str]
    users: _containers.RepeatedScalarFieldContainer[str]
    accounts: _containers.RepeatedScalarFieldContainer[str]
    page_size: int
    page_token: str
    with_priority: bool
    with_steps: bool
    def __init__(self, states: _Optional[_Iterable[_Union[JobState, str]]] = ..., all_states: _Optional[bool] = ..., ids: _Optional[_Iterable[str]] = ..., users: _Optional[_Iterable[str]] = ..., accounts: _Optional[_Iterable[str]] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., with_priority: _Optional[bool] = ..., with_steps: _Optional[bool] = ...) -> None: ...

class ListJobsResponse(_message.Message):
    __slots__ = ("jobs", "next_page_token", "steps")
    JOBS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[Job]
    next_page_token: str
    steps: _containers.RepeatedCompositeFieldContainer[RunningStep]
    def __init__(self, jobs: _Optional[_Iterable[_Union[Job, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., steps: _Optional[_Iterable[_Union[RunningStep, _Mapping]]] = ...) -> None: ...

class RunningStep(_message.Message):
    __slots__ = ("id", "job_id", "name", "nodelist", "ntasks", "start_time")
    ID_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    NODELIST_FIELD_NUMBER: _ClassVar[int]
    NTASKS_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    id: str
    job_id: str
    name: str
    nodelist: str
    ntasks: int
    start_time: float
    def __init__(self, id: _Optional[str] = ..., job_id: _Optional[str] = ..., name: _Optional[str] = ..., nodelist: _Optional[str] = ..., ntasks: _Optional[int] = ..., start_time: _Optional[float] = ...) -> None: ...

class CancelJobsRequest(_message.Message):
    __slots__ = ("ids", "user", "reason")
    IDS_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    ids: _containers.RepeatedScalarFieldContainer[str]
    user: str
    reason: str
    def __init__(self, ids: _Optional[_Iterable[str]] = ..., user: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class CancelResult(_message.Message):
    __slots__ = ("id", "ok", "message")
    ID_FIELD_NUMBER: _ClassVar[int]
    OK_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    id: str
    ok: bool
    message: str
    def __init__(self, id: _Optional[str] = ..., ok: _Optional[bool] = ..., message: _Optional[str] = ...) -> None: ...

class CancelJobsResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[CancelResult]
    def __init__(self, results: _Optional[_Iterable[_Union[CancelResult, _Mapping]]] = ...) -> None: ...

class ControlJobsRequest(_message.Message):
    __slots__ = ("action", "ids", "user")
    ACTION_FIELD_NUMBER: _ClassVar[int]
    IDS_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    action: ControlAction
    ids: _containers.RepeatedScalarFieldContainer[str]
    user: str
    def __init__(self, action: _Optional[_Union[ControlAction, str]] = ..., ids: _Optional[_Iterable[str]] = ..., user: _Optional[str] = ...) -> None: ...

class ControlJobsResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[CancelResult]
    def __init__(self, results: _Optional[_Iterable[_Union[CancelResult, _Mapping]]] = ...) -> None: ...

class StreamLogsRequest(_message.Message):
    __slots__ = ("id", "attempt", "follow", "node")
    ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    FOLLOW_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    id: str
    attempt: int
    follow: bool
    node: str
    def __init__(self, id: _Optional[str] = ..., attempt: _Optional[int] = ..., follow: _Optional[bool] = ..., node: _Optional[str] = ...) -> None: ...

class LogChunk(_message.Message):
    __slots__ = ("data",)
    DATA_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    def __init__(self, data: _Optional[bytes] = ...) -> None: ...

class ExplainJobRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class PriorityFactor(_message.Message):
    __slots__ = ("name", "value", "weight", "contribution")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    WEIGHT_FIELD_NUMBER: _ClassVar[int]
    CONTRIBUTION_FIELD_NUMBER: _ClassVar[int]
    name: str
    value: float
    weight: float
    contribution: float
    def __init__(self, name: _Optional[str] = ..., value: _Optional[float] = ..., weight: _Optional[float] = ..., contribution: _Optional[float] = ...) -> None: ...

class ExplainJobResponse(_message.Message):
    __slots__ = ("job", "pending", "policy", "priority", "factors", "rank", "pending_jobs", "starts_now", "reason", "reason_detail", "estimated_start", "order_by", "reservation", "attained")
    JOB_FIELD_NUMBER: _ClassVar[int]
    PENDING_FIELD_NUMBER: _ClassVar[int]
    POLICY_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    FACTORS_FIELD_NUMBER: _ClassVar[int]
    RANK_FIELD_NUMBER: _ClassVar[int]
    PENDING_JOBS_FIELD_NUMBER: _ClassVar[int]
    STARTS_NOW_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    REASON_DETAIL_FIELD_NUMBER: _ClassVar[int]
    ESTIMATED_START_FIELD_NUMBER: _ClassVar[int]
    ORDER_BY_FIELD_NUMBER: _ClassVar[int]
    RESERVATION_FIELD_NUMBER: _ClassVar[int]
    ATTAINED_FIELD_NUMBER: _ClassVar[int]
    job: Job
    pending: bool
    policy: str
    priority: float
    factors: _containers.RepeatedCompositeFieldContainer[PriorityFactor]
    rank: int
    pending_jobs: int
    starts_now: bool
    reason: str
    reason_detail: str
    estimated_start: float
    order_by: str
    reservation: str
    attained: str
    def __init__(self, job: _Optional[_Union[Job, _Mapping]] = ..., pending: _Optional[bool] = ..., policy: _Optional[str] = ..., priority: _Optional[float] = ..., factors: _Optional[_Iterable[_Union[PriorityFactor, _Mapping]]] = ..., rank: _Optional[int] = ..., pending_jobs: _Optional[int] = ..., starts_now: _Optional[bool] = ..., reason: _Optional[str] = ..., reason_detail: _Optional[str] = ..., estimated_start: _Optional[float] = ..., order_by: _Optional[str] = ..., reservation: _Optional[str] = ..., attained: _Optional[str] = ...) -> None: ...

class GpuInfo(_message.Message):
    __slots__ = ("index", "uuid", "name", "memory_total", "pci_bus_id", "compute_capability")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    UUID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    MEMORY_TOTAL_FIELD_NUMBER: _ClassVar[int]
    PCI_BUS_ID_FIELD_NUMBER: _ClassVar[int]
    COMPUTE_CAPABILITY_FIELD_NUMBER: _ClassVar[int]
    index: int
    uuid: str
    name: str
    memory_total: int
    pci_bus_id: str
    compute_capability: str
    def __init__(self, index: _Optional[int] = ..., uuid: _Optional[str] = ..., name: _Optional[str] = ..., memory_total: _Optional[int] = ..., pci_bus_id: _Optional[str] = ..., compute_capability: _Optional[str] = ...) -> None: ...

class GpuLink(_message.Message):
    __slots__ = ("a", "b", "level", "p2p")
    A_FIELD_NUMBER: _ClassVar[int]
    B_FIELD_NUMBER: _ClassVar[int]
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    P2P_FIELD_NUMBER: _ClassVar[int]
    a: int
    b: int
    level: str
    p2p: bool
    def __init__(self, a: _Optional[int] = ..., b: _Optional[int] = ..., level: _Optional[str] = ..., p2p: _Optional[bool] = ...) -> None: ...

class Inventory(_message.Message):
    __slots__ = ("gpus", "links", "driver_version", "cuda_version", "simulated", "note", "cpus", "memory", "labels", "gpu_mode")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    GPUS_FIELD_NUMBER: _ClassVar[int]
    LINKS_FIELD_NUMBER: _ClassVar[int]
    DRIVER_VERSION_FIELD_NUMBER: _ClassVar[int]
    CUDA_VERSION_FIELD_NUMBER: _ClassVar[int]
    SIMULATED_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    CPUS_FIELD_NUMBER: _ClassVar[int]
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    GPU_MODE_FIELD_NUMBER: _ClassVar[int]
    gpus: _containers.RepeatedCompositeFieldContainer[GpuInfo]
    links: _containers.RepeatedCompositeFieldContainer[GpuLink]
    driver_version: str
    cuda_version: str
    simulated: bool
    note: str
    cpus: float
    memory: int
    labels: _containers.ScalarMap[str, str]
    gpu_mode: str
    def __init__(self, gpus: _Optional[_Iterable[_Union[GpuInfo, _Mapping]]] = ..., links: _Optional[_Iterable[_Union[GpuLink, _Mapping]]] = ..., driver_version: _Optional[str] = ..., cuda_version: _Optional[str] = ..., simulated: _Optional[bool] = ..., note: _Optional[str] = ..., cpus: _Optional[float] = ..., memory: _Optional[int] = ..., labels: _Optional[_Mapping[str, str]] = ..., gpu_mode: _Optional[str] = ...) -> None: ...

class GpuProcess(_message.Message):
    __slots__ = ("pid", "memory_used", "job_id")
    PID_FIELD_NUMBER: _ClassVar[int]
    MEMORY_USED_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    pid: int
    memory_used: int
    job_id: str
    def __init__(self, pid: _Optional[int] = ..., memory_used: _Optional[int] = ..., job_id: _Optional[str] = ...) -> None: ...

class GpuTelemetry(_message.Message):
    __slots__ = ("index", "uuid", "utilization", "memory_used", "temperature", "power", "error", "processes")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    UUID_FIELD_NUMBER: _ClassVar[int]
    UTILIZATION_FIELD_NUMBER: _ClassVar[int]
    MEMORY_USED_FIELD_NUMBER: _ClassVar[int]
    TEMPERATURE_FIELD_NUMBER: _ClassVar[int]
    POWER_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    PROCESSES_FIELD_NUMBER: _ClassVar[int]
    index: int
    uuid: str
    utilization: float
    memory_used: int
    temperature: float
    power: float
    error: str
    processes: _containers.RepeatedCompositeFieldContainer[GpuProcess]
    def __init__(self, index: _Optional[int] = ..., uuid: _Optional[str] = ..., utilization: _Optional[float] = ..., memory_used: _Optional[int] = ..., temperature: _Optional[float] = ..., power: _Optional[float] = ..., error: _Optional[str] = ..., processes: _Optional[_Iterable[_Union[GpuProcess, _Mapping]]] = ...) -> None: ...

class GpuStatus(_message.Message):
    __slots__ = ("info", "telemetry", "stale", "sampled_at", "state", "reason", "job_id", "marked_by", "marked_time")
    INFO_FIELD_NUMBER: _ClassVar[int]
    TELEMETRY_FIELD_NUMBER: _ClassVar[int]
    STALE_FIELD_NUMBER: _ClassVar[int]
    SAMPLED_AT_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    MARKED_BY_FIELD_NUMBER: _ClassVar[int]
    MARKED_TIME_FIELD_NUMBER: _ClassVar[int]
    info: GpuInfo
    telemetry: GpuTelemetry
    stale: bool
    sampled_at: float
    state: str
    reason: str
    job_id: str
    marked_by: str
    marked_time: float
    def __init__(self, info: _Optional[_Union[GpuInfo, _Mapping]] = ..., telemetry: _Optional[_Union[GpuTelemetry, _Mapping]] = ..., stale: _Optional[bool] = ..., sampled_at: _Optional[float] = ..., state: _Optional[str] = ..., reason: _Optional[str] = ..., job_id: _Optional[str] = ..., marked_by: _Optional[str] = ..., marked_time: _Optional[float] = ...) -> None: ...

class Node(_message.Message):
    __slots__ = ("name", "state", "reason", "reason_by", "reason_time", "inventory", "gpus", "gpus_total", "gpus_free", "last_heartbeat", "address", "engine_healthy", "engine_error", "labels", "gpus_reserved", "reserved_by", "maintenance", "gpus_reserved_next", "reserved_next_by", "reserved_next_start", "partitions")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    REASON_BY_FIELD_NUMBER: _ClassVar[int]
    REASON_TIME_FIELD_NUMBER: _ClassVar[int]
    INVENTORY_FIELD_NUMBER: _ClassVar[int]
    GPUS_FIELD_NUMBER: _ClassVar[int]
    GPUS_TOTAL_FIELD_NUMBER: _ClassVar[int]
    GPUS_FREE_FIELD_NUMBER: _ClassVar[int]
    LAST_HEARTBEAT_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    ENGINE_HEALTHY_FIELD_NUMBER: _ClassVar[int]
    ENGINE_ERROR_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    GPUS_RESERVED_FIELD_NUMBER: _ClassVar[int]
    RESERVED_BY_FIELD_NUMBER: _ClassVar[int]
    MAINTENANCE_FIELD_NUMBER: _ClassVar[int]
    GPUS_RESERVED_NEXT_FIELD_NUMBER: _ClassVar[int]
    RESERVED_NEXT_BY_FIELD_NUMBER: _ClassVar[int]
    RESERVED_NEXT_START_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    name: str
    state: str
    reason: str
    reason_by: str
    reason_time: float
    inventory: Inventory
    gpus: _containers.RepeatedCompositeFieldContainer[GpuStatus]
    gpus_total: int
    gpus_free: int
    last_heartbeat: float
    address: str
    engine_healthy: bool
    engine_error: str
    labels: _containers.ScalarMap[str, str]
    gpus_reserved: int
    reserved_by: _containers.RepeatedScalarFieldContainer[str]
    maintenance: bool
    gpus_reserved_next: int
    reserved_next_by: _containers.RepeatedScalarFieldContainer[str]
    reserved_next_start: float
    partitions: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, name: _Optional[str] = ..., state: _Optional[str] = ..., reason: _Optional[str] = ..., reason_by: _Optional[str] = ..., reason_time: _Optional[float] = ..., inventory: _Optional[_Union[Inventory, _Mapping]] = ..., gpus: _Optional[_Iterable[_Union[GpuStatus, _Mapping]]] = ..., gpus_total: _Optional[int] = ..., gpus_free: _Optional[int] = ..., last_heartbeat: _Optional[float] = ..., address: _Optional[str] = ..., engine_healthy: _Optional[bool] = ..., engine_error: _Optional[str] = ..., labels: _Optional[_Mapping[str, str]] = ..., gpus_reserved: _Optional[int] = ..., reserved_by: _Optional[_Iterable[str]] = ..., maintenance: _Optional[bool] = ..., gpus_reserved_next: _Optional[int] = ..., reserved_next_by: _Optional[_Iterable[str]] = ..., reserved_next_start: _Optional[float] = ..., partitions: _Optional[_Iterable[str]] = ...) -> None: ...

class ListNodesRequest(_message.Message):
    __slots__ = ("page_size", "page_token", "summary", "summary_only", "states")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_ONLY_FIELD_NUMBER: _ClassVar[int]
    STATES_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    summary: bool
    summary_only: bool
    states: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., summary: _Optional[bool] = ..., summary_only: _Optional[bool] = ..., states: _Optional[_Iterable[str]] = ...) -> None: ...

class NodeSummary(_message.Message):
    __slots__ = ("nodes", "states", "gpus_total", "gpus_free", "gpus_unhealthy")
    class StatesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    NODES_FIELD_NUMBER: _ClassVar[int]
    STATES_FIELD_NUMBER: _ClassVar[int]
    GPUS_TOTAL_FIELD_NUMBER: _ClassVar[int]
    GPUS_FREE_FIELD_NUMBER: _ClassVar[int]
    GPUS_UNHEALTHY_FIELD_NUMBER: _ClassVar[int]
    nodes: int
    states: _containers.ScalarMap[str, int]
    gpus_total: int
    gpus_free: int
    gpus_unhealthy: int
    def __init__(self, nodes: _Optional[int] = ..., states: _Optional[_Mapping[str, int]] = ..., gpus_total: _Optional[int] = ..., gpus_free: _Optional[int] = ..., gpus_unhealthy: _Optional[int] = ...) -> None: ...

class PartitionInfo(_message.Message):
    __slots__ = ("name", "is_default", "default_time", "max_time", "default_gpus", "max_gpus_per_job", "priority_tier")
    NAME_FIELD_NUMBER: _ClassVar[int]
    IS_DEFAULT_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_TIME_FIELD_NUMBER: _ClassVar[int]
    MAX_TIME_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_GPUS_FIELD_NUMBER: _ClassVar[int]
    MAX_GPUS_PER_JOB_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_TIER_FIELD_NUMBER: _ClassVar[int]
    name: str
    is_default: bool
    default_time: float
    max_time: float
    default_gpus: int
    max_gpus_per_job: int
    priority_tier: int
    def __init__(self, name: _Optional[str] = ..., is_default: _Optional[bool] = ..., default_time: _Optional[float] = ..., max_time: _Optional[float] = ..., default_gpus: _Optional[int] = ..., max_gpus_per_job: _Optional[int] = ..., priority_tier: _Optional[int] = ...) -> None: ...

class ListNodesResponse(_message.Message):
    __slots__ = ("nodes", "next_page_token", "summary", "partitions")
    NODES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    nodes: _containers.RepeatedCompositeFieldContainer[Node]
    next_page_token: str
    summary: NodeSummary
    partitions: _containers.RepeatedCompositeFieldContainer[PartitionInfo]
    def __init__(self, nodes: _Optional[_Iterable[_Union[Node, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., summary: _Optional[_Union[NodeSummary, _Mapping]] = ..., partitions: _Optional[_Iterable[_Union[PartitionInfo, _Mapping]]] = ...) -> None: ...

class GetNodeRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class AddNodeRequest(_message.Message):
    __slots__ = ("name", "labels", "user", "rotate_token")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    ROTATE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    name: str
    labels: _containers.ScalarMap[str, str]
    user: str
    rotate_token: bool
    def __init__(self, name: _Optional[str] = ..., labels: _Optional[_Mapping[str, str]] = ..., user: _Optional[str] = ..., rotate_token: _Optional[bool] = ...) -> None: ...

class AddNodeResponse(_message.Message):
    __slots__ = ("name", "token")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    name: str
    token: str
    def __init__(self, name: _Optional[str] = ..., token: _Optional[str] = ...) -> None: ...

class DrainNodeRequest(_message.Message):
    __slots__ = ("name", "reason", "user")
    NAME_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    name: str
    reason: str
    user: str
    def __init__(self, name: _Optional[str] = ..., reason: _Optional[str] = ..., user: _Optional[str] = ...) -> None: ...

class ResumeNodeRequest(_message.Message):
    __slots__ = ("name", "user")
    NAME_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    name: str
    user: str
    def __init__(self, name: _Optional[str] = ..., user: _Optional[str] = ...) -> None: ...

class RemoveNodeRequest(_message.Message):
    __slots__ = ("name", "force", "user")
    NAME_FIELD_NUMBER: _ClassVar[int]
    FORCE_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    name: str
    force: bool
    user: str
    def __init__(self, name: _Optional[str] = ..., force: _Optional[bool] = ..., user: _Optional[str] = ...) -> None: ...

class RemoveNodeResponse(_message.Message):
    __slots__ = ("requeued", "failed")
    REQUEUED_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    requeued: _containers.RepeatedScalarFieldContainer[str]
    failed: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, requeued: _Optional[_Iterable[str]] = ..., failed: _Optional[_Iterable[str]] = ...) -> None: ...

class GpuActionRequest(_message.Message):
    __slots__ = ("node", "index", "user", "reason")
    NODE_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    node: str
    index: int
    user: str
    reason: str
    def __init__(self, node: _Optional[str] = ..., index: _Optional[int] = ..., user: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class GpuActionResponse(_message.Message):
    __slots__ = ("message",)
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    message: str
    def __init__(self, message: _Optional[str] = ...) -> None: ...

class PartitionSpec(_message.Message):
    __slots__ = ("nodes", "labels", "is_default", "default_time", "max_time", "default_gpus", "max_gpus_per_job", "allow_users", "allow_accounts", "priority_tier")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NODES_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    IS_DEFAULT_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_TIME_FIELD_NUMBER: _ClassVar[int]
    MAX_TIME_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_GPUS_FIELD_NUMBER: _ClassVar[int]
    MAX_GPUS_PER_JOB_FIELD_NUMBER: _ClassVar[int]
    ALLOW_USERS_FIELD_NUMBER: _ClassVar[int]
    ALLOW_ACCOUNTS_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_TIER_FIELD_NUMBER: _ClassVar[int]
    nodes: _containers.RepeatedScalarFieldContainer[str]
    labels: _containers.ScalarMap[str, str]
    is_default: bool
    default_time: float
    max_time: float
    default_gpus: int
    max_gpus_per_job: int
    allow_users: _containers.RepeatedScalarFieldContainer[str]
    allow_accounts: _containers.RepeatedScalarFieldContainer[str]
    priority_tier: int
    def __init__(self, nodes: _Optional[_Iterable[str]] = ..., labels: _Optional[_Mapping[str, str]] = ..., is_default: _Optional[bool] = ..., default_time: _Optional[float] = ..., max_time: _Optional[float] = ..., default_gpus: _Optional[int] = ..., max_gpus_per_job: _Optional[int] = ..., allow_users: _Optional[_Iterable[str]] = ..., allow_accounts: _Optional[_Iterable[str]] = ..., priority_tier: _Optional[int] = ...) -> None: ...

class PartitionRequest(_message.Message):
    __slots__ = ("name", "spec", "fields")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    FIELDS_FIELD_NUMBER: _ClassVar[int]
    name: str
    spec: PartitionSpec
    fields: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, name: _Optional[str] = ..., spec: _Optional[_Union[PartitionSpec, _Mapping]] = ..., fields: _Optional[_Iterable[str]] = ...) -> None: ...

class PartitionRecord(_message.Message):
    __slots__ = ("name", "spec", "source", "is_default", "changed_by", "changed")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    IS_DEFAULT_FIELD_NUMBER: _ClassVar[int]
    CHANGED_BY_FIELD_NUMBER: _ClassVar[int]
    CHANGED_FIELD_NUMBER: _ClassVar[int]
    name: str
    spec: PartitionSpec
    source: str
    is_default: bool
    changed_by: str
    changed: float
    def __init__(self, name: _Optional[str] = ..., spec: _Optional[_Union[PartitionSpec, _Mapping]] = ..., source: _Optional[str] = ..., is_default: _Optional[bool] = ..., changed_by: _Optional[str] = ..., changed: _Optional[float] = ...) -> None: ...

class RemovePartitionRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class RemovePartitionResponse(_message.Message):
    __slots__ = ("message",)
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    message: str
    def __init__(self, message: _Optional[str] = ...) -> None: ...

class ListPartitionsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListPartitionsResponse(_message.Message):
    __slots__ = ("partitions",)
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    partitions: _containers.RepeatedCompositeFieldContainer[PartitionRecord]
    def __init__(self, partitions: _Optional[_Iterable[_Union[PartitionRecord, _Mapping]]] = ...) -> None: ...

class AttemptStatus(_message.Message):
    __slots__ = ("job_id", "attempt", "container_id", "running")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_ID_FIELD_NUMBER: _ClassVar[int]
    RUNNING_FIELD_NUMBER: _ClassVar[int]
    job_id: int
    attempt: int
    container_id: str
    running: bool
    def __init__(self, job_id: _Optional[int] = ..., attempt: _Optional[int] = ..., container_id: _Optional[str] = ..., running: _Optional[bool] = ...) -> None: ...

class Hello(_message.Message):
    __slots__ = ("node_name", "token", "agent_version", "inventory", "attempts", "address", "dials_forwards", "log_windows")
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    AGENT_VERSION_FIELD_NUMBER: _ClassVar[int]
    INVENTORY_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    DIALS_FORWARDS_FIELD_NUMBER: _ClassVar[int]
    LOG_WINDOWS_FIELD_NUMBER: _ClassVar[int]
    node_name: str
    token: str
    agent_version: str
    inventory: Inventory
    attempts: _containers.RepeatedCompositeFieldContainer[AttemptStatus]
    address: str
    dials_forwards: bool
    log_windows: bool
    def __init__(self, node_name: _Optional[str] = ..., token: _Optional[str] = ..., agent_version: _Optional[str] = ..., inventory: _Optional[_Union[Inventory, _Mapping]] = ..., attempts: _Optional[_Iterable[_Union[AttemptStatus, _Mapping]]] = ..., address: _Optional[str] = ..., dials_forwards: _Optional[bool] = ..., log_windows: _Optional[bool] = ...) -> None: ...

class Heartbeat(_message.Message):
    __slots__ = ("gpus", "attempts", "engine_healthy", "engine_error", "time")
    GPUS_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    ENGINE_HEALTHY_FIELD_NUMBER: _ClassVar[int]
    ENGINE_ERROR_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    gpus: _containers.RepeatedCompositeFieldContainer[GpuTelemetry]
    attempts: _containers.RepeatedCompositeFieldContainer[AttemptStatus]
    engine_healthy: bool
    engine_error: str
    time: float
    def __init__(self, gpus: _Optional[_Iterable[_Union[GpuTelemetry, _Mapping]]] = ..., attempts: _Optional[_Iterable[_Union[AttemptStatus, _Mapping]]] = ..., engine_healthy: _Optional[bool] = ..., engine_error: _Optional[str] = ..., time: _Optional[float] = ...) -> None: ...

class AgentJobEvent(_message.Message):
    __slots__ = ("job_id", "attempt", "kind", "exit_code", "oom_killed", "message", "time", "engine_fault")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    OOM_KILLED_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    ENGINE_FAULT_FIELD_NUMBER: _ClassVar[int]
    job_id: int
    attempt: int
    kind: JobEventKind
    exit_code: int
    oom_killed: bool
    message: str
    time: float
    engine_fault: bool
    def __init__(self, job_id: _Optional[int] = ..., attempt: _Optional[int] = ..., kind: _Optional[_Union[JobEventKind, str]] = ..., exit_code: _Optional[int] = ..., oom_killed: _Optional[bool] = ..., message: _Optional[str] = ..., time: _Optional[float] = ..., engine_fault: _Optional[bool] = ...) -> None: ...

class LogData(_message.Message):
    __slots__ = ("request_id", "data", "eof", "error")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    EOF_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    request_id: int
    data: bytes
    eof: bool
    error: str
    def __init__(self, request_id: _Optional[int] = ..., data: _Optional[bytes] = ..., eof: _Optional[bool] = ..., error: _Optional[str] = ...) -> None: ...

class AgentMessage(_message.Message):
    __slots__ = ("hello", "heartbeat", "job_event", "log_data", "keepalive", "session_output", "step_start", "step_output", "step_end", "step_cancel", "job_requeue", "job_command")
    HELLO_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_FIELD_NUMBER: _ClassVar[int]
    JOB_EVENT_FIELD_NUMBER: _ClassVar[int]
    LOG_DATA_FIELD_NUMBER: _ClassVar[int]
    KEEPALIVE_FIELD_NUMBER: _ClassVar[int]
    SESSION_OUTPUT_FIELD_NUMBER: _ClassVar[int]
    STEP_START_FIELD_NUMBER: _ClassVar[int]
    STEP_OUTPUT_FIELD_NUMBER: _ClassVar[int]
    STEP_END_FIELD_NUMBER: _ClassVar[int]
    STEP_CANCEL_FIELD_NUMBER: _ClassVar[int]
    JOB_REQUEUE_FIELD_NUMBER: _ClassVar[int]
    JOB_COMMAND_FIELD_NUMBER: _ClassVar[int]
    hello: Hello
    heartbeat: Heartbeat
    job_event: AgentJobEvent
    log_data: LogData
    keepalive: Keepalive
    session_output: SessionOutput
    step_start: StepStart
    step_output: StepOutput
    step_end: StepEnd
    step_cancel: StepCancel
    job_requeue: JobRequeue
    job_command: JobCommand
    def __init__(self, hello: _Optional[_Union[Hello, _Mapping]] = ..., heartbeat: _Optional[_Union[Heartbeat, _Mapping]] = ..., job_event: _Optional[_Union[AgentJobEvent, _Mapping]] = ..., log_data: _Optional[_Union[LogData, _Mapping]] = ..., keepalive: _Optional[_Union[Keepalive, _Mapping]] = ..., session_output: _Optional[_Union[SessionOutput, _Mapping]] = ..., step_start: _Optional[_Union[StepStart, _Mapping]] = ..., step_output: _Optional[_Union[StepOutput, _Mapping]] = ..., step_end: _Optional[_Union[StepEnd, _Mapping]] = ..., step_cancel: _Optional[_Union[StepCancel, _Mapping]] = ..., job_requeue: _Optional[_Union[JobRequeue, _Mapping]] = ..., job_command: _Optional[_Union[JobCommand, _Mapping]] = ...) -> None: ...

class Keepalive(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class LaunchOrder(_message.Message):
    __slots__ = ("job_id", "attempt", "spec", "gpu_indices", "gpu_uuids", "env", "deadline", "time_limit", "display_id", "host_network", "user", "uid", "gid", "steps_only")
    class EnvEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    GPU_INDICES_FIELD_NUMBER: _ClassVar[int]
    GPU_UUIDS_FIELD_NUMBER: _ClassVar[int]
    ENV_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_FIELD_NUMBER: _ClassVar[int]
    TIME_LIMIT_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_ID_FIELD_NUMBER: _ClassVar[int]
    HOST_NETWORK_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    GID_FIELD_NUMBER: _ClassVar[int]
    STEPS_ONLY_FIELD_NUMBER: _ClassVar[int]
    job_id: int
    attempt: int
    spec: JobSpec
    gpu_indices: _containers.RepeatedScalarFieldContainer[int]
    gpu_uuids: _containers.RepeatedScalarFieldContainer[str]
    env: _containers.ScalarMap[str, str]
    deadline: float
    time_limit: float
    display_id: str
    host_network: bool
    user: str
    uid: int
    gid: int
    steps_only: bool
    def __init__(self, job_id: _Optional[int] = ..., attempt: _Optional[int] = ..., spec: _Optional[_Union[JobSpec, _Mapping]] = ..., gpu_indices: _Optional[_Iterable[int]] = ..., gpu_uuids: _Optional[_Iterable[str]] = ..., env: _Optional[_Mapping[str, str]] = ..., deadline: _Optional[float] = ..., time_limit: _Optional[float] = ..., display_id: _Optional[str] = ..., host_network: _Optional[bool] = ..., user: _Optional[str] = ..., uid: _Optional[int] = ..., gid: _Optional[int] = ..., steps_only: _Optional[bool] = ...) -> None: ...

class KillOrder(_message.Message):
    __slots__ = ("job_id", "attempt", "reason", "grace", "warn_signal", "warn_seconds")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    GRACE_FIELD_NUMBER: _ClassVar[int]
    WARN_SIGNAL_FIELD_NUMBER: _ClassVar[int]
    WARN_SECONDS_FIELD_NUMBER: _ClassVar[int]
    job_id: int
    attempt: int
    reason: str
    grace: float
    warn_signal: str
    warn_seconds: float
    def __init__(self, job_id: _Optional[int] = ..., attempt: _Optional[int] = ..., reason: _Optional[str] = ..., grace: _Optional[float] = ..., warn_signal: _Optional[str] = ..., warn_seconds: _Optional[float] = ...) -> None: ...

class LogRequest(_message.Message):
    __slots__ = ("request_id", "job_id", "attempt", "follow", "cancel", "window", "ack")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    FOLLOW_FIELD_NUMBER: _ClassVar[int]
    CANCEL_FIELD_NUMBER: _ClassVar[int]
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    ACK_FIELD_NUMBER: _ClassVar[int]
    request_id: int
    job_id: int
    attempt: int
    follow: bool
    cancel: bool
    window: int
    ack: int
    def __init__(self, request_id: _Optional[int] = ..., job_id: _Optional[int] = ..., attempt: _Optional[int] = ..., follow: _Optional[bool] = ..., cancel: _Optional[bool] = ..., window: _Optional[int] = ..., ack: _Optional[int] = ...) -> None: ...

class Welcome(_message.Message):
    __slots__ = ("heartbeat_interval", "keep", "scheduler_version", "node_grace", "telemetry_period", "keepalive_interval", "node_timeout")
    HEARTBEAT_INTERVAL_FIELD_NUMBER: _ClassVar[int]
    KEEP_FIELD_NUMBER: _ClassVar[int]
    SCHEDULER_VERSION_FIELD_NUMBER: _ClassVar[int]
    NODE_GRACE_FIELD_NUMBER: _ClassVar[int]
    TELEMETRY_PERIOD_FIELD_NUMBER: _ClassVar[int]
    KEEPALIVE_INTERVAL_FIELD_NUMBER: _ClassVar[int]
    NODE_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    heartbeat_interval: float
    keep: _containers.RepeatedCompositeFieldContainer[AttemptStatus]
    scheduler_version: str
    node_grace: float
    telemetry_period: float
    keepalive_interval: float
    node_timeout: float
    def __init__(self, heartbeat_interval: _Optional[float] = ..., keep: _Optional[_Iterable[_Union[AttemptStatus, _Mapping]]] = ..., scheduler_version: _Optional[str] = ..., node_grace: _Optional[float] = ..., telemetry_period: _Optional[float] = ..., keepalive_interval: _Optional[float] = ..., node_timeout: _Optional[float] = ...) -> None: ...

class EventAck(_message.Message):
    __slots__ = ("job_id", "attempt")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    job_id: int
    attempt: int
    def __init__(self, job_id: _Optional[int] = ..., attempt: _Optional[int] = ...) -> None: ...

class SchedulerMessage(_message.Message):
    __slots__ = ("welcome", "launch", "kill", "log_request", "ack", "pong", "session_open", "session_input", "step_launch", "step_output", "step_end", "step_cancel", "job_command_reply")
    WELCOME_FIELD_NUMBER: _ClassVar[int]
    LAUNCH_FIELD_NUMBER: _ClassVar[int]
    KILL_FIELD_NUMBER: _ClassVar[int]
    LOG_REQUEST_FIELD_NUMBER: _ClassVar[int]
    ACK_FIELD_NUMBER: _ClassVar[int]
    PONG_FIELD_NUMBER: _ClassVar[int]
    SESSION_OPEN_FIELD_NUMBER: _ClassVar[int]
    SESSION_INPUT_FIELD_NUMBER: _ClassVar[int]
    STEP_LAUNCH_FIELD_NUMBER: _ClassVar[int]
    STEP_OUTPUT_FIELD_NUMBER: _ClassVar[int]
    STEP_END_FIELD_NUMBER: _ClassVar[int]
    STEP_CANCEL_FIELD_NUMBER: _ClassVar[int]
    JOB_COMMAND_REPLY_FIELD_NUMBER: _ClassVar[int]
    welcome: Welcome
    launch: LaunchOrder
    kill: KillOrder
    log_request: LogRequest
    ack: EventAck
    pong: Pong
    session_open: SessionOpen
    session_input: SessionInput
    step_launch: StepLaunch
    step_output: StepOutput
    step_end: StepEnd
    step_cancel: StepCancel
    job_command_reply: JobCommandReply
    def __init__(self, welcome: _Optional[_Union[Welcome, _Mapping]] = ..., launch: _Optional[_Union[LaunchOrder, _Mapping]] = ..., kill: _Optional[_Union[KillOrder, _Mapping]] = ..., log_request: _Optional[_Union[LogRequest, _Mapping]] = ..., ack: _Optional[_Union[EventAck, _Mapping]] = ..., pong: _Optional[_Union[Pong, _Mapping]] = ..., session_open: _Optional[_Union[SessionOpen, _Mapping]] = ..., session_input: _Optional[_Union[SessionInput, _Mapping]] = ..., step_launch: _Optional[_Union[StepLaunch, _Mapping]] = ..., step_output: _Optional[_Union[StepOutput, _Mapping]] = ..., step_end: _Optional[_Union[StepEnd, _Mapping]] = ..., step_cancel: _Optional[_Union[StepCancel, _Mapping]] = ..., job_command_reply: _Optional[_Union[JobCommandReply, _Mapping]] = ...) -> None: ...

class Pong(_message.Message):
    __slots__ = ("time", "telemetry_period")
    TIME_FIELD_NUMBER: _ClassVar[int]
    TELEMETRY_PERIOD_FIELD_NUMBER: _ClassVar[int]
    time: float
    telemetry_period: float
    def __init__(self, time: _Optional[float] = ..., telemetry_period: _Optional[float] = ...) -> None: ...

class StepLayout(_message.Message):
    __slots__ = ("nodes", "ntasks", "ntasks_per_node", "gpus_per_task", "label", "nodelist", "kill_on_bad_exit", "wait")
    NODES_FIELD_NUMBER: _ClassVar[int]
    NTASKS_FIELD_NUMBER: _ClassVar[int]
    NTASKS_PER_NODE_FIELD_NUMBER: _ClassVar[int]
    GPUS_PER_TASK_FIELD_NUMBER: _ClassVar[int]
    LABEL_FIELD_NUMBER: _ClassVar[int]
    NODELIST_FIELD_NUMBER: _ClassVar[int]
    KILL_ON_BAD_EXIT_FIELD_NUMBER: _ClassVar[int]
    WAIT_FIELD_NUMBER: _ClassVar[int]
    nodes: int
    ntasks: int
    ntasks_per_node: int
    gpus_per_task: int
    label: bool
    nodelist: str
    kill_on_bad_exit: bool
    wait: int
    def __init__(self, nodes: _Optional[int] = ..., ntasks: _Optional[int] = ..., ntasks_per_node: _Optional[int] = ..., gpus_per_task: _Optional[int] = ..., label: _Optional[bool] = ..., nodelist: _Optional[str] = ..., kill_on_bad_exit: _Optional[bool] = ..., wait: _Optional[int] = ...) -> None: ...

class StepStart(_message.Message):
    __slots__ = ("request_id", "job_id", "attempt", "layout", "argv", "environment", "cwd")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    LAYOUT_FIELD_NUMBER: _ClassVar[int]
    ARGV_FIELD_NUMBER: _ClassVar[int]
    ENVIRONMENT_FIELD_NUMBER: _ClassVar[int]
    CWD_FIELD_NUMBER: _ClassVar[int]
    request_id: int
    job_id: int
    attempt: int
    layout: StepLayout
    argv: _containers.RepeatedScalarFieldContainer[str]
    environment: bytes
    cwd: str
    def __init__(self, request_id: _Optional[int] = ..., job_id: _Optional[int] = ..., attempt: _Optional[int] = ..., layout: _Optional[_Union[StepLayout, _Mapping]] = ..., argv: _Optional[_Iterable[str]] = ..., environment: _Optional[bytes] = ..., cwd: _Optional[str] = ...) -> None: ...

class StepTask(_message.Message):
    __slots__ = ("rank", "local_id", "gpu_indices")
    RANK_FIELD_NUMBER: _ClassVar[int]
    LOCAL_ID_FIELD_NUMBER: _ClassVar[int]
    GPU_INDICES_FIELD_NUMBER: _ClassVar[int]
    rank: int
    local_id: int
    gpu_indices: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, rank: _Optional[int] = ..., local_id: _Optional[int] = ..., gpu_indices: _Optional[_Iterable[int]] = ...) -> None: ...

class StepLaunch(_message.Message):
    __slots__ = ("request_id", "job_id", "attempt", "step", "node_id", "nnodes", "ntasks", "tasks", "argv", "environment", "cwd", "nodelist", "tasks_per_node", "label", "window", "kill_on_bad_exit", "wait")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    NNODES_FIELD_NUMBER: _ClassVar[int]
    NTASKS_FIELD_NUMBER: _ClassVar[int]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    ARGV_FIELD_NUMBER: _ClassVar[int]
    ENVIRONMENT_FIELD_NUMBER: _ClassVar[int]
    CWD_FIELD_NUMBER: _ClassVar[int]
    NODELIST_FIELD_NUMBER: _ClassVar[int]
    TASKS_PER_NODE_FIELD_NUMBER: _ClassVar[int]
    LABEL_FIELD_NUMBER: _ClassVar[int]
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    KILL_ON_BAD_EXIT_FIELD_NUMBER: _ClassVar[int]
    WAIT_FIELD_NUMBER: _ClassVar[int]
    request_id: int
    job_id: int
    attempt: int
    step: int
    node_id: int
    nnodes: int
    ntasks: int
    tasks: _containers.RepeatedCompositeFieldContainer[StepTask]
    argv: _containers.RepeatedScalarFieldContainer[str]
    environment: bytes
    cwd: str
    nodelist: str
    tasks_per_node: str
    label: bool
    window: int
    kill_on_bad_exit: bool
    wait: int
    def __init__(self, request_id: _Optional[int] = ..., job_id: _Optional[int] = ..., attempt: _Optional[int] = ..., step: _Optional[int] = ..., node_id: _Optional[int] = ..., nnodes: _Optional[int] = ..., ntasks: _Optional[int] = ..., tasks: _Optional[_Iterable[_Union[StepTask, _Mapping]]] = ..., argv: _Optional[_Iterable[str]] = ..., environment: _Optional[bytes] = ..., cwd: _Optional[str] = ..., nodelist: _Optional[str] = ..., tasks_per_node: _Optional[str] = ..., label: _Optional[bool] = ..., window: _Optional[int] = ..., kill_on_bad_exit: _Optional[bool] = ..., wait: _Optional[int] = ...) -> None: ...

class StepOutput(_message.Message):
    __slots__ = ("request_id", "data", "stderr", "ack")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    STDERR_FIELD_NUMBER: _ClassVar[int]
    ACK_FIELD_NUMBER: _ClassVar[int]
    request_id: int
    data: bytes
    stderr: bool
    ack: int
    def __init__(self, request_id: _Optional[int] = ..., data: _Optional[bytes] = ..., stderr: _Optional[bool] = ..., ack: _Optional[int] = ...) -> None: ...

class StepEnd(_message.Message):
    __slots__ = ("request_id", "exit_code", "error", "timed_out", "step", "failed_task", "reported")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    TIMED_OUT_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    FAILED_TASK_FIELD_NUMBER: _ClassVar[int]
    REPORTED_FIELD_NUMBER: _ClassVar[int]
    request_id: int
    exit_code: int
    error: str
    timed_out: bool
    step: int
    failed_task: str
    reported: bool
    def __init__(self, request_id: _Optional[int] = ..., exit_code: _Optional[int] = ..., error: _Optional[str] = ..., timed_out: _Optional[bool] = ..., step: _Optional[int] = ..., failed_task: _Optional[str] = ..., reported: _Optional[bool] = ...) -> None: ...

class StepCancel(_message.Message):
    __slots__ = ("request_id", "kill", "named")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    KILL_FIELD_NUMBER: _ClassVar[int]
    NAMED_FIELD_NUMBER: _ClassVar[int]
    request_id: int
    kill: bool
    named: bool
    def __init__(self, request_id: _Optional[int] = ..., kill: _Optional[bool] = ..., named: _Optional[bool] = ...) -> None: ...

class JobRequeue(_message.Message):
    __slots__ = ("job_id", "attempt")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    job_id: int
    attempt: int
    def __init__(self, job_id: _Optional[int] = ..., attempt: _Optional[int] = ...) -> None: ...

class JobCommand(_message.Message):
    __slots__ = ("request_id", "job_id", "attempt", "tool", "argv", "script", "script_index", "cwd", "environment")
    class EnvironmentEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    ARGV_FIELD_NUMBER: _ClassVar[int]
    SCRIPT_FIELD_NUMBER: _ClassVar[int]
    SCRIPT_INDEX_FIELD_NUMBER: _ClassVar[int]
    CWD_FIELD_NUMBER: _ClassVar[int]
    ENVIRONMENT_FIELD_NUMBER: _ClassVar[int]
    request_id: int
    job_id: int
    attempt: int
    tool: str
    argv: _containers.RepeatedScalarFieldContainer[str]
    script: bytes
    script_index: int
    cwd: str
    environment: _containers.ScalarMap[str, str]
    def __init__(self, request_id: _Optional[int] = ..., job_id: _Optional[int] = ..., attempt: _Optional[int] = ..., tool: _Optional[str] = ..., argv: _Optional[_Iterable[str]] = ..., script: _Optional[bytes] = ..., script_index: _Optional[int] = ..., cwd: _Optional[str] = ..., environment: _Optional[_Mapping[str, str]] = ...) -> None: ...

class JobCommandReply(_message.Message):
    __slots__ = ("request_id", "exit_code", "output", "error", "wait_for", "ended")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    WAIT_FOR_FIELD_NUMBER: _ClassVar[int]
    ENDED_FIELD_NUMBER: _ClassVar[int]
    request_id: int
    exit_code: int
    output: str
    error: str
    wait_for: str
    ended: bool
    def __init__(self, request_id: _Optional[int] = ..., exit_code: _Optional[int] = ..., output: _Optional[str] = ..., error: _Optional[str] = ..., wait_for: _Optional[str] = ..., ended: _Optional[bool] = ...) -> None: ...

class SessionOpen(_message.Message):
    __slots__ = ("request_id", "job_id", "attempt", "kind", "command", "tty", "rows", "cols", "port", "window", "dial_ticket", "dial_port", "dial_tls", "reopen", "replay", "resume_from")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    TTY_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    COLS_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    DIAL_TICKET_FIELD_NUMBER: _ClassVar[int]
    DIAL_PORT_FIELD_NUMBER: _ClassVar[int]
    DIAL_TLS_FIELD_NUMBER: _ClassVar[int]
    REOPEN_FIELD_NUMBER: _ClassVar[int]
    REPLAY_FIELD_NUMBER: _ClassVar[int]
    RESUME_FROM_FIELD_NUMBER: _ClassVar[int]
    request_id: int
    job_id: int
    attempt: int
    kind: str
    command: _containers.RepeatedScalarFieldContainer[str]
    tty: bool
    rows: int
    cols: int
    port: int
    window: int
    dial_ticket: str
    dial_port: int
    dial_tls: bool
    reopen: bool
    replay: str
    resume_from: int
    def __init__(self, request_id: _Optional[int] = ..., job_id: _Optional[int] = ..., attempt: _Optional[int] = ..., kind: _Optional[str] = ..., command: _Optional[_Iterable[str]] = ..., tty: _Optional[bool] = ..., rows: _Optional[int] = ..., cols: _Optional[int] = ..., port: _Optional[int] = ..., window: _Optional[int] = ..., dial_ticket: _Optional[str] = ..., dial_port: _Optional[int] = ..., dial_tls: _Optional[bool] = ..., reopen: _Optional[bool] = ..., replay: _Optional[str] = ..., resume_from: _Optional[int] = ...) -> None: ...

class SessionInput(_message.Message):
    __slots__ = ("request_id", "data", "eof", "rows", "cols", "ack", "close")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    EOF_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    COLS_FIELD_NUMBER: _ClassVar[int]
    ACK_FIELD_NUMBER: _ClassVar[int]
    CLOSE_FIELD_NUMBER: _ClassVar[int]
    request_id: int
    data: bytes
    eof: bool
    rows: int
    cols: int
    ack: int
    close: bool
    def __init__(self, request_id: _Optional[int] = ..., data: _Optional[bytes] = ..., eof: _Optional[bool] = ..., rows: _Optional[int] = ..., cols: _Optional[int] = ..., ack: _Optional[int] = ..., close: _Optional[bool] = ...) -> None: ...

class SessionOutput(_message.Message):
    __slots__ = ("request_id", "stream", "data", "ack", "exited", "exit_code", "error", "dial_error", "offset", "detached")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    STREAM_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    ACK_FIELD_NUMBER: _ClassVar[int]
    EXITED_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    DIAL_ERROR_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    DETACHED_FIELD_NUMBER: _ClassVar[int]
    request_id: int
    stream: int
    data: bytes
    ack: int
    exited: bool
    exit_code: int
    error: str
    dial_error: str
    offset: int
    detached: bool
    def __init__(self, request_id: _Optional[int] = ..., stream: _Optional[int] = ..., data: _Optional[bytes] = ..., ack: _Optional[int] = ..., exited: _Optional[bool] = ..., exit_code: _Optional[int] = ..., error: _Optional[str] = ..., dial_error: _Optional[str] = ..., offset: _Optional[int] = ..., detached: _Optional[bool] = ...) -> None: ...

class User(_message.Message):
    __slots__ = ("name", "admin", "accounts", "default_account", "uid", "gid", "revoked", "created")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ADMIN_FIELD_NUMBER: _ClassVar[int]
    ACCOUNTS_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_ACCOUNT_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    GID_FIELD_NUMBER: _ClassVar[int]
    REVOKED_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    name: str
    admin: bool
    accounts: _containers.RepeatedScalarFieldContainer[str]
    default_account: str
    uid: int
    gid: int
    revoked: bool
    created: float
    def __init__(self, name: _Optional[str] = ..., admin: _Optional[bool] = ..., accounts: _Optional[_Iterable[str]] = ..., default_account: _Optional[str] = ..., uid: _Optional[int] = ..., gid: _Optional[int] = ..., revoked: _Optional[bool] = ..., created: _Optional[float] = ...) -> None: ...

class AddUserRequest(_message.Message):
    __slots__ = ("name", "admin", "accounts", "default_account", "uid", "gid")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ADMIN_FIELD_NUMBER: _ClassVar[int]
    ACCOUNTS_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_ACCOUNT_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    GID_FIELD_NUMBER: _ClassVar[int]
    name: str
    admin: bool
    accounts: _containers.RepeatedScalarFieldContainer[str]
    default_account: str
    uid: int
    gid: int
    def __init__(self, name: _Optional[str] = ..., admin: _Optional[bool] = ..., accounts: _Optional[_Iterable[str]] = ..., default_account: _Optional[str] = ..., uid: _Optional[int] = ..., gid: _Optional[int] = ...) -> None: ...

class UserTokenResponse(_message.Message):
    __slots__ = ("user", "token")
    USER_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    user: User
    token: str
    def __init__(self, user: _Optional[_Union[User, _Mapping]] = ..., token: _Optional[str] = ...) -> None: ...

class ListUsersRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListUsersResponse(_message.Message):
    __slots__ = ("users",)
    USERS_FIELD_NUMBER: _ClassVar[int]
    users: _containers.RepeatedCompositeFieldContainer[User]
    def __init__(self, users: _Optional[_Iterable[_Union[User, _Mapping]]] = ...) -> None: ...

class UserNameRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class AuditEntry(_message.Message):
    __slots__ = ("time", "user", "action", "target", "peer", "allowed", "detail")
    TIME_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    PEER_FIELD_NUMBER: _ClassVar[int]
    ALLOWED_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    time: float
    user: str
    action: str
    target: str
    peer: str
    allowed: bool
    detail: str
    def __init__(self, time: _Optional[float] = ..., user: _Optional[str] = ..., action: _Optional[str] = ..., target: _Optional[str] = ..., peer: _Optional[str] = ..., allowed: _Optional[bool] = ..., detail: _Optional[str] = ...) -> None: ...

class ListAuditRequest(_message.Message):
    __slots__ = ("since", "limit")
    SINCE_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    since: float
    limit: int
    def __init__(self, since: _Optional[float] = ..., limit: _Optional[int] = ...) -> None: ...

class ListAuditResponse(_message.Message):
    __slots__ = ("entries",)
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[AuditEntry]
    def __init__(self, entries: _Optional[_Iterable[_Union[AuditEntry, _Mapping]]] = ...) -> None: ...

class WhoAmIRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class UpdateUserRequest(_message.Message):
    __slots__ = ("name", "set_accounts", "accounts", "set_default_account", "default_account", "set_ids", "uid", "gid", "set_admin", "admin")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SET_ACCOUNTS_FIELD_NUMBER: _ClassVar[int]
    ACCOUNTS_FIELD_NUMBER: _ClassVar[int]
    SET_DEFAULT_ACCOUNT_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_ACCOUNT_FIELD_NUMBER: _ClassVar[int]
    SET_IDS_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    GID_FIELD_NUMBER: _ClassVar[int]
    SET_ADMIN_FIELD_NUMBER: _ClassVar[int]
    ADMIN_FIELD_NUMBER: _ClassVar[int]
    name: str
    set_accounts: bool
    accounts: _containers.RepeatedScalarFieldContainer[str]
    set_default_account: bool
    default_account: str
    set_ids: bool
    uid: int
    gid: int
    set_admin: bool
    admin: bool
    def __init__(self, name: _Optional[str] = ..., set_accounts: _Optional[bool] = ..., accounts: _Optional[_Iterable[str]] = ..., set_default_account: _Optional[bool] = ..., default_account: _Optional[str] = ..., set_ids: _Optional[bool] = ..., uid: _Optional[int] = ..., gid: _Optional[int] = ..., set_admin: _Optional[bool] = ..., admin: _Optional[bool] = ...) -> None: ...

class ReservedGpus(_message.Message):
    __slots__ = ("node", "indices")
    NODE_FIELD_NUMBER: _ClassVar[int]
    INDICES_FIELD_NUMBER: _ClassVar[int]
    node: str
    indices: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, node: _Optional[str] = ..., indices: _Optional[_Iterable[int]] = ...) -> None: ...

class Reservation(_message.Message):
    __slots__ = ("name", "start", "end", "gpus", "users", "accounts", "flags", "lend", "created_by", "created_at", "running_jobs", "booked_gpu_seconds", "owner_gpu_seconds", "lent_gpu_seconds", "unused", "given_back", "released_gpu_seconds")
    NAME_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    GPUS_FIELD_NUMBER: _ClassVar[int]
    USERS_FIELD_NUMBER: _ClassVar[int]
    ACCOUNTS_FIELD_NUMBER: _ClassVar[int]
    FLAGS_FIELD_NUMBER: _ClassVar[int]
    LEND_FIELD_NUMBER: _ClassVar[int]
    CREATED_BY_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    RUNNING_JOBS_FIELD_NUMBER: _ClassVar[int]
    BOOKED_GPU_SECONDS_FIELD_NUMBER: _ClassVar[int]
    OWNER_GPU_SECONDS_FIELD_NUMBER: _ClassVar[int]
    LENT_GPU_SECONDS_FIELD_NUMBER: _ClassVar[int]
    UNUSED_FIELD_NUMBER: _ClassVar[int]
    GIVEN_BACK_FIELD_NUMBER: _ClassVar[int]
    RELEASED_GPU_SECONDS_FIELD_NUMBER: _ClassVar[int]
    name: str
    start: float
    end: float
    gpus: _containers.RepeatedCompositeFieldContainer[ReservedGpus]
    users: _containers.RepeatedScalarFieldContainer[str]
    accounts: _containers.RepeatedScalarFieldContainer[str]
    flags: _containers.RepeatedScalarFieldContainer[str]
    lend: bool
    created_by: str
    created_at: float
    running_jobs: _containers.RepeatedScalarFieldContainer[str]
    booked_gpu_seconds: float
    owner_gpu_seconds: float
    lent_gpu_seconds: float
    unused: str
    given_back: float
    released_gpu_seconds: float
    def __init__(self, name: _Optional[str] = ..., start: _Optional[float] = ..., end: _Optional[float] = ..., gpus: _Optional[_Iterable[_Union[ReservedGpus, _Mapping]]] = ..., users: _Optional[_Iterable[str]] = ..., accounts: _Optional[_Iterable[str]] = ..., flags: _Optional[_Iterable[str]] = ..., lend: _Optional[bool] = ..., created_by: _Optional[str] = ..., created_at: _Optional[float] = ..., running_jobs: _Optional[_Iterable[str]] = ..., booked_gpu_seconds: _Optional[float] = ..., owner_gpu_seconds: _Optional[float] = ..., lent_gpu_seconds: _Optional[float] = ..., unused: _Optional[str] = ..., given_back: _Optional[float] = ..., released_gpu_seconds: _Optional[float] = ...) -> None: ...

class CreateReservationRequest(_message.Message):
    __slots__ = ("name", "start", "end", "nodes", "gpus", "gpu_type", "gpus_per_node", "users", "accounts", "flags", "no_lend", "unused", "gpu_indices")
    NAME_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    GPUS_FIELD_NUMBER: _ClassVar[int]
    GPU_TYPE_FIELD_NUMBER: _ClassVar[int]
    GPUS_PER_NODE_FIELD_NUMBER: _ClassVar[int]
    USERS_FIELD_NUMBER: _ClassVar[int]
    ACCOUNTS_FIELD_NUMBER: _ClassVar[int]
    FLAGS_FIELD_NUMBER: _ClassVar[int]
    NO_LEND_FIELD_NUMBER: _ClassVar[int]
    UNUSED_FIELD_NUMBER: _ClassVar[int]
    GPU_INDICES_FIELD_NUMBER: _ClassVar[int]
    name: str
    start: float
    end: float
    nodes: _containers.RepeatedScalarFieldContainer[str]
    gpus: int
    gpu_type: str
    gpus_per_node: int
    users: _containers.RepeatedScalarFieldContainer[str]
    accounts: _containers.RepeatedScalarFieldContainer[str]
    flags: _containers.RepeatedScalarFieldContainer[str]
    no_lend: bool
    unused: str
    gpu_indices: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, name: _Optional[str] = ..., start: _Optional[float] = ..., end: _Optional[float] = ..., nodes: _Optional[_Iterable[str]] = ..., gpus: _Optional[int] = ..., gpu_type: _Optional[str] = ..., gpus_per_node: _Optional[int] = ..., users: _Optional[_Iterable[str]] = ..., accounts: _Optional[_Iterable[str]] = ..., flags: _Optional[_Iterable[str]] = ..., no_lend: _Optional[bool] = ..., unused: _Optional[str] = ..., gpu_indices: _Optional[_Iterable[int]] = ...) -> None: ...

class ListReservationsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListReservationsResponse(_message.Message):
    __slots__ = ("reservations",)
    RESERVATIONS_FIELD_NUMBER: _ClassVar[int]
    reservations: _containers.RepeatedCompositeFieldContainer[Reservation]
    def __init__(self, reservations: _Optional[_Iterable[_Union[Reservation, _Mapping]]] = ...) -> None: ...

class GetReservationRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class DeleteReservationRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class DeleteReservationResponse(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class UpdateReservationRequest(_message.Message):
    __slots__ = ("name", "changes", "fields")
    NAME_FIELD_NUMBER: _ClassVar[int]
    CHANGES_FIELD_NUMBER: _ClassVar[int]
    FIELDS_FIELD_NUMBER: _ClassVar[int]
    name: str
    changes: CreateReservationRequest
    fields: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, name: _Optional[str] = ..., changes: _Optional[_Union[CreateReservationRequest, _Mapping]] = ..., fields: _Optional[_Iterable[str]] = ...) -> None: ...

class ImportReservationsRequest(_message.Message):
    __slots__ = ("rows", "dry_run", "skip_bad")
    ROWS_FIELD_NUMBER: _ClassVar[int]
    DRY_RUN_FIELD_NUMBER: _ClassVar[int]
    SKIP_BAD_FIELD_NUMBER: _ClassVar[int]
    rows: _containers.RepeatedCompositeFieldContainer[CreateReservationRequest]
    dry_run: bool
    skip_bad: bool
    def __init__(self, rows: _Optional[_Iterable[_Union[CreateReservationRequest, _Mapping]]] = ..., dry_run: _Optional[bool] = ..., skip_bad: _Optional[bool] = ...) -> None: ...

class ImportReservationsResponse(_message.Message):
    __slots__ = ("errors", "created")
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    errors: _containers.RepeatedScalarFieldContainer[str]
    created: bool
    def __init__(self, errors: _Optional[_Iterable[str]] = ..., created: _Optional[bool] = ...) -> None: ...

class AccountingFilter(_message.Message):
    __slots__ = ("ids", "users", "accounts", "states", "start", "end", "user", "limit")
    IDS_FIELD_NUMBER: _ClassVar[int]
    USERS_FIELD_NUMBER: _ClassVar[int]
    ACCOUNTS_FIELD_NUMBER: _ClassVar[int]
    STATES_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    ids: _containers.RepeatedScalarFieldContainer[str]
    users: _containers.RepeatedScalarFieldContainer[str]
    accounts: _containers.RepeatedScalarFieldContainer[str]
    states: _containers.RepeatedScalarFieldContainer[JobState]
    start: float
    end: float
    user: str
    limit: int
    def __init__(self, ids: _Optional[_Iterable[str]] = ..., users: _Optional[_Iterable[str]] = ..., accounts: _Optional[_Iterable[str]] = ..., states: _Optional[_Iterable[_Union[JobState, str]]] = ..., start: _Optional[float] = ..., end: _Optional[float] = ..., user: _Optional[str] = ..., limit: _Optional[int] = ...) -> None: ...

class FinishedJob(_message.Message):
    __slots__ = ("id", "name", "user", "account", "state", "exit_code", "submit_time", "start_time", "end_time", "elapsed", "gpus", "gpu_hours", "nodes", "reservation", "gpu_utilization", "gpu_memory_peak", "gpu_memory_total", "gpu_samples", "has_exit_code", "reason")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    ACCOUNT_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    SUBMIT_TIME_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    END_TIME_FIELD_NUMBER: _ClassVar[int]
    ELAPSED_FIELD_NUMBER: _ClassVar[int]
    GPUS_FIELD_NUMBER: _ClassVar[int]
    GPU_HOURS_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    RESERVATION_FIELD_NUMBER: _ClassVar[int]
    GPU_UTILIZATION_FIELD_NUMBER: _ClassVar[int]
    GPU_MEMORY_PEAK_FIELD_NUMBER: _ClassVar[int]
    GPU_MEMORY_TOTAL_FIELD_NUMBER: _ClassVar[int]
    GPU_SAMPLES_FIELD_NUMBER: _ClassVar[int]
    HAS_EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    id: str
    name: str
    user: str
    account: str
    state: JobState
    exit_code: int
    submit_time: float
    start_time: float
    end_time: float
    elapsed: float
    gpus: int
    gpu_hours: float
    nodes: _containers.RepeatedScalarFieldContainer[str]
    reservation: str
    gpu_utilization: float
    gpu_memory_peak: int
    gpu_memory_total: int
    gpu_samples: int
    has_exit_code: bool
    reason: str
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., user: _Optional[str] = ..., account: _Optional[str] = ..., state: _Optional[_Union[JobState, str]] = ..., exit_code: _Optional[int] = ..., submit_time: _Optional[float] = ..., start_time: _Optional[float] = ..., end_time: _Optional[float] = ..., elapsed: _Optional[float] = ..., gpus: _Optional[int] = ..., gpu_hours: _Optional[float] = ..., nodes: _Optional[_Iterable[str]] = ..., reservation: _Optional[str] = ..., gpu_utilization: _Optional[float] = ..., gpu_memory_peak: _Optional[int] = ..., gpu_memory_total: _Optional[int] = ..., gpu_samples: _Optional[int] = ..., has_exit_code: _Optional[bool] = ..., reason: _Optional[str] = ...) -> None: ...

class ListFinishedResponse(_message.Message):
    __slots__ = ("jobs",)
    JOBS_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[FinishedJob]
    def __init__(self, jobs: _Optional[_Iterable[_Union[FinishedJob, _Mapping]]] = ...) -> None: ...

class UsageTotal(_message.Message):
    __slots__ = ("name", "jobs", "gpu_hours", "gpu_utilization", "gpu_samples", "booked_unused_gpu_hours")
    NAME_FIELD_NUMBER: _ClassVar[int]
    JOBS_FIELD_NUMBER: _ClassVar[int]
    GPU_HOURS_FIELD_NUMBER: _ClassVar[int]
    GPU_UTILIZATION_FIELD_NUMBER: _ClassVar[int]
    GPU_SAMPLES_FIELD_NUMBER: _ClassVar[int]
    BOOKED_UNUSED_GPU_HOURS_FIELD_NUMBER: _ClassVar[int]
    name: str
    jobs: int
    gpu_hours: float
    gpu_utilization: float
    gpu_samples: int
    booked_unused_gpu_hours: float
    def __init__(self, name: _Optional[str] = ..., jobs: _Optional[int] = ..., gpu_hours: _Optional[float] = ..., gpu_utilization: _Optional[float] = ..., gpu_samples: _Optional[int] = ..., booked_unused_gpu_hours: _Optional[float] = ...) -> None: ...

class SummaryResponse(_message.Message):
    __slots__ = ("users", "accounts", "start", "end")
    USERS_FIELD_NUMBER: _ClassVar[int]
    ACCOUNTS_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    users: _containers.RepeatedCompositeFieldContainer[UsageTotal]
    accounts: _containers.RepeatedCompositeFieldContainer[UsageTotal]
    start: float
    end: float
    def __init__(self, users: _Optional[_Iterable[_Union[UsageTotal, _Mapping]]] = ..., accounts: _Optional[_Iterable[_Union[UsageTotal, _Mapping]]] = ..., start: _Optional[float] = ..., end: _Optional[float] = ...) -> None: ...

class InteractRequest(_message.Message):
    __slots__ = ("job_id", "kind", "command", "tty", "rows", "cols", "port", "node", "data", "eof", "reopen", "replay", "resume_from")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    TTY_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    COLS_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    EOF_FIELD_NUMBER: _ClassVar[int]
    REOPEN_FIELD_NUMBER: _ClassVar[int]
    REPLAY_FIELD_NUMBER: _ClassVar[int]
    RESUME_FROM_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    kind: str
    command: _containers.RepeatedScalarFieldContainer[str]
    tty: bool
    rows: int
    cols: int
    port: int
    node: str
    data: bytes
    eof: bool
    reopen: bool
    replay: str
    resume_from: int
    def __init__(self, job_id: _Optional[str] = ..., kind: _Optional[str] = ..., command: _Optional[_Iterable[str]] = ..., tty: _Optional[bool] = ..., rows: _Optional[int] = ..., cols: _Optional[int] = ..., port: _Optional[int] = ..., node: _Optional[str] = ..., data: _Optional[bytes] = ..., eof: _Optional[bool] = ..., reopen: _Optional[bool] = ..., replay: _Optional[str] = ..., resume_from: _Optional[int] = ...) -> None: ...

class InteractReply(_message.Message):
    __slots__ = ("state", "reason", "estimated_start", "started", "stream", "data", "exited", "exit_code", "error", "offset", "detached")
    STATE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    ESTIMATED_START_FIELD_NUMBER: _ClassVar[int]
    STARTED_FIELD_NUMBER: _ClassVar[int]
    STREAM_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    EXITED_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    DETACHED_FIELD_NUMBER: _ClassVar[int]
    state: str
    reason: str
    estimated_start: float
    started: bool
    stream: int
    data: bytes
    exited: bool
    exit_code: int
    error: str
    offset: int
    detached: bool
    def __init__(self, state: _Optional[str] = ..., reason: _Optional[str] = ..., estimated_start: _Optional[float] = ..., started: _Optional[bool] = ..., stream: _Optional[int] = ..., data: _Optional[bytes] = ..., exited: _Optional[bool] = ..., exit_code: _Optional[int] = ..., error: _Optional[str] = ..., offset: _Optional[int] = ..., detached: _Optional[bool] = ...) -> None: ...
