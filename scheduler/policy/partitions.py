"""Partitions: named node sets with their own limits, defaults, access and priority tier.

Pure values the settings build (``scheduler/partition_settings.py``) and admins change
(``scheduler/core/partitions.py``). A node belongs to a
partition when its name matches one of ``nodes`` (names or glob patterns) or its labels match
``labels``; a partition naming neither holds every node. The node views of a snapshot carry the
names of the partitions they belong to (``NodeView.partitions``), and a pending job the
partitions it may run in (``PendingJob.partitions``, empty: anywhere), so the policy only
compares names.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

DEFAULT_PARTITION = "default"  # the one implicit partition of a lab that configures none


@dataclass(frozen=True, slots=True)
class Partition:
    """One partition. Durations in seconds, 0: no partition value (the scheduler's own
    ``default_time_limit`` / ``max_time_limit`` apply); GPU counts 0: none / unlimited;
    empty ``allow_*``: everyone (when both are set, either admits)."""

    name: str
    nodes: tuple[str, ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)
    default: bool = False
    default_time: float = 0.0
    max_time: float = 0.0
    default_gpus: int = 0
    max_gpus_per_job: int = 0
    allow_users: frozenset[str] = frozenset()
    allow_accounts: frozenset[str] = frozenset()
    priority_tier: int = 0

    def holds(self, node: str, labels: Mapping[str, str]) -> bool:
        """Whether the node named ``node`` with ``labels`` belongs to this partition."""
        if not self.nodes and not self.labels:
            return True
        if any(fnmatch.fnmatchcase(node, pattern) for pattern in self.nodes):
            return True
        return bool(self.labels) and all(labels.get(k) == v for k, v in self.labels.items())

    def admits(self, user: str, account: str) -> str | None:
        """None when ``user`` / ``account`` may submit here, else the rule that refuses."""
        if not self.allow_users and not self.allow_accounts:
            return None
        if user in self.allow_users or account in self.allow_accounts:
            return None
        rules = []
        if self.allow_users:
            rules.append(f"allow_users: {', '.join(sorted(self.allow_users))}")
        if self.allow_accounts:
            rules.append(f"allow_accounts: {', '.join(sorted(self.allow_accounts))}")
        return (
            f"partition {self.name!r} admits only {'; '.join(rules)} "
            f"(user {user}, account {account})"
        )


class PartitionTable:
    """The lab's partitions in settings order, exactly one of them the default."""

    def __init__(self, partitions: Sequence[Partition] = ()) -> None:
        if not partitions:
            partitions = (Partition(DEFAULT_PARTITION, default=True),)
        defaults = [p for p in partitions if p.default]
        if len(defaults) != 1:
            raise ValueError("exactly one partition must be the default")
        self.partitions = tuple(partitions)
        self.by_name = {p.name: p for p in partitions}
        self.default = defaults[0]

    def reset(self, partitions: Sequence[Partition]) -> None:
        """Become the table of ``partitions`` (checked as by the constructor), so that every
        holder of this table sees them (``gadmin partition``)."""
        fresh = PartitionTable(partitions)
        self.partitions, self.by_name, self.default = fresh.partitions, fresh.by_name, fresh.default

    def copy(self) -> PartitionTable:
        """A table of the same partitions that later resets leave as it is."""
        return PartitionTable(self.partitions)

    def names(self) -> str:
        """The partitions' names, comma separated, for messages."""
        return ", ".join(self.by_name)

    def resolve(self, text: str) -> tuple[Partition, ...]:
        """The partitions ``text`` names (``a`` or ``a,b``; empty: the default partition);
        ValueError naming the known partitions for an unknown name."""
        if not text:
            return (self.default,)
        out: list[Partition] = []
        for name in text.split(","):
            part = self.by_name.get(name.strip())
            if part is None:
                raise ValueError(f"unknown partition {name.strip()!r}; partitions: {self.names()}")
            if part not in out:
                out.append(part)
        return tuple(out)

    def of_node(self, node: str, labels: Mapping[str, str]) -> frozenset[str]:
        """The names of the partitions the node belongs to."""
        return frozenset(p.name for p in self.partitions if p.holds(node, labels))

    def tier(self, text: str) -> int:
        """The priority tier of a job that may run in the partitions ``text`` names: the
        lowest of theirs (a job that may also run in a lower tier's nodes does not go ahead
        of that tier's jobs there); 0 if none is known."""
        tiers = [self.by_name[n].priority_tier for n in text.split(",") if n in self.by_name]
        return min(tiers, default=0)
