"""The ``partitions:`` map of the scheduler settings (docs/admin.md "Partitions").

``partitions: {NAME: {nodes, labels, default, default_time, max_time, default_gpus,
max_gpus_per_job, allow_users, allow_accounts, priority_tier, min_runtime,
interactive_max_time, interactive_idle_after, interactive_idle_warning}}``; names as job names; exactly
one ``default: true`` when two or more are set (a single partition is the default by itself);
none set: one implicit partition ``default`` holding every node.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import Field, model_validator

from rota.inputs import SpecError, check_name
from rota.scheduler.policy.partitions import DEFAULT_PARTITION, Partition, PartitionTable
from rota.settings import Count, Names, Seconds, Settings


class PartitionSettings(Settings):
    """One partition; 0 durations and GPU counts: the scheduler's own default / no limit."""

    nodes: Names = ()  # node names or glob patterns (gpu-a*)
    labels: dict[str, str] = Field(default_factory=dict)  # nodes with all these labels
    default: bool = False
    default_time: Seconds = 0.0
    max_time: Seconds = 0.0
    default_gpus: Count = 0
    max_gpus_per_job: Count = 0
    allow_users: Names = ()  # empty (and no allow_accounts): everyone
    allow_accounts: Names = ()
    priority_tier: Count = 0
    min_runtime: Seconds | None = None  # before attained service may preempt; None: global
    # grun sessions here (docs/interactive.md); None: the scheduler setting of the same name
    interactive_max_time: Seconds | None = None
    interactive_idle_after: Seconds | None = None
    interactive_idle_warning: Seconds | None = None

    @model_validator(mode="after")
    def _consistent(self) -> PartitionSettings:
        if self.max_time and self.default_time > self.max_time:
            raise ValueError(
                f"default_time ({self.default_time:g}s) must be <= max_time ({self.max_time:g}s)"
            )
        if self.max_gpus_per_job and self.default_gpus > self.max_gpus_per_job:
            raise ValueError(
                f"default_gpus ({self.default_gpus}) must be <= max_gpus_per_job "
                f"({self.max_gpus_per_job})"
            )
        return self


def check_partitions(partitions: Mapping[str, PartitionSettings]) -> None:
    """Names like job names and one default; ValueError phrased to follow the setting's name
    ("partitions must ...")."""
    for name in partitions:
        if not name:
            raise ValueError("must not have an empty name")
        try:
            check_name("partitions", name)
        except SpecError as exc:
            rule = str(exc).removeprefix("partitions: ")
            raise ValueError(f"must have names as jobs do ({rule}), got {name!r}") from None
    defaults = [name for name, p in partitions.items() if p.default]
    if len(defaults) > 1:
        raise ValueError(f"must have only one default, got {', '.join(defaults)}")
    if len(partitions) > 1 and not defaults:
        raise ValueError(f"must mark one of {', '.join(partitions)} as the default (default: true)")


def partition_table(
    partitions: Mapping[str, PartitionSettings], default_time: float, max_time: float
) -> PartitionTable:
    """The lab's partitions from the (already checked) settings; a partition without its own
    ``default_time`` / ``max_time`` gets the scheduler's (``default_time_limit``,
    ``max_time_limit``), as does the implicit ``default`` partition."""
    if not partitions:
        return PartitionTable(
            [
                Partition(
                    DEFAULT_PARTITION, default=True, default_time=default_time, max_time=max_time
                )
            ]
        )
    single = len(partitions) == 1
    return PartitionTable(
        [
            to_partition(name, p, p.default or single, default_time, max_time)
            for name, p in partitions.items()
        ]
    )


def to_partition(
    name: str, p: PartitionSettings, default: bool, default_time: float, max_time: float
) -> Partition:
    """The partition ``name`` of settings ``p``; its own durations, else the scheduler's (a
    default time limit no longer than its ``max_time``, as SLURM's DefaultTime falls back to
    MaxTime)."""
    if not p.default_time and p.max_time:
        default_time = min(default_time, p.max_time) if default_time else p.max_time
    return Partition(
        name=name,
        nodes=p.nodes,
        labels=dict(p.labels),
        default=default,
        default_time=p.default_time or default_time,
        max_time=p.max_time or max_time,
        default_gpus=p.default_gpus,
        max_gpus_per_job=p.max_gpus_per_job,
        allow_users=frozenset(p.allow_users),
        allow_accounts=frozenset(p.allow_accounts),
        priority_tier=p.priority_tier,
    )
