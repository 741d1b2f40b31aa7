"""A submission's partitions: which of those it names it may use, and their defaults.

``admit_partitions`` is called once per submitted item, before anything is stored. A job
naming several partitions (``a,b``) keeps those it may use and whose limits it meets, in its
order; the first of them supplies the defaults (time limit, GPUs). It is refused when none is
left, with the first partition's refusal: an unknown name (INVALID_ARGUMENT naming the
partitions), a user or account the partition does not admit (PERMISSION_DENIED naming the
rule), a time limit or GPU count over its maximum (INVALID_ARGUMENT naming the limit).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from rota.jobspec import JobSpec
from rota.scheduler.core.errors import AccessDenied, UserError
from rota.scheduler.policy.partitions import Partition, PartitionTable


@dataclass(frozen=True, slots=True)
class Admitted:
    """The spec as stored (``partition`` the usable names, ``gpus`` defaulted) and the time
    limit it gets when it names none (seconds)."""

    spec: JobSpec
    default_time_limit: float


def admit_partitions(
    spec: JobSpec,
    user: str,
    account: str,
    table: PartitionTable,
    default_time_limit: float,
    source: str,
) -> Admitted:
    """See the module docstring; ``source`` starts every message."""
    try:
        named = table.resolve(spec.partition)
    except ValueError as exc:
        raise UserError(f"{source}: partition: {exc}") from None
    usable: list[Partition] = []
    refusals: list[Exception] = []
    for part in named:
        why = _refusal(spec, user, account, part, source)
        if why is None:
            usable.append(part)
        else:
            refusals.append(why)
    if not usable:
        raise refusals[0]
    first = usable[0]
    gpus = spec.gpus or first.default_gpus
    stored = dataclasses.replace(spec, partition=",".join(p.name for p in usable), gpus=gpus)
    return Admitted(stored, first.default_time or default_time_limit)


def _refusal(
    spec: JobSpec, user: str, account: str, part: Partition, source: str
) -> Exception | None:
    denied = part.admits(user, account)
    if denied is not None:
        return AccessDenied(f"{source}: partition: {denied}")
    limit = spec.time_limit or part.default_time
    if part.max_time and limit > part.max_time:
        return UserError(
            f"{source}: time_limit: {limit:.0f}s exceeds the max_time of partition "
            f"{part.name!r} ({part.max_time:.0f}s)"
        )
    gpus = (spec.gpus or part.default_gpus) * spec.nodes
    if part.max_gpus_per_job and gpus > part.max_gpus_per_job:
        return UserError(
            f"{source}: resources.gpus: {gpus} GPUs in all exceeds the max_gpus_per_job of "
            f"partition {part.name!r} ({part.max_gpus_per_job})"
        )
    return None
