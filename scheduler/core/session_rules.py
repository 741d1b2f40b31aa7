"""The rules of one grun session: its longest time limit and its idle window, each from the
first of its partitions that sets it (``partitions: {P: {interactive_max_time, ...}}``), else
its QoS class's (``interactive_qos: {Q: {...}}``), else the scheduler settings of the same
names (docs/interactive.md)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rota.scheduler.config import SchedulerConfig, SessionQosSettings
from rota.scheduler.partition_settings import PartitionSettings

FIELDS = ("interactive_max_time", "interactive_idle_after", "interactive_idle_warning")


@dataclass(frozen=True, slots=True)
class SessionRules:
    """Seconds, 0: none. ``*_from``: the setting that gave the value, for messages."""

    max_time: float
    max_time_from: str
    idle_after: float
    idle_after_from: str
    idle_warning: float


class SessionRuleBook:
    """Resolves ``SessionRules`` for a job's partition list (``a,b``)."""

    def __init__(
        self, config: SchedulerConfig, partitions: Callable[[str], PartitionSettings | None]
    ) -> None:
        self.config = config
        self.partitions = partitions  # a partition's settings; None: implicit or unknown

    def rules(self, partition: str, qos: str = "") -> SessionRules:
        """The rules of a session in ``partition`` (comma-separated names; "" the default)
        of QoS class ``qos``."""
        found: dict[str, tuple[float, str]] = {}
        sources: list[tuple[str, PartitionSettings | SessionQosSettings | None]] = [
            (f"partition {name!r}", self.partitions(name))
            for name in filter(None, partition.split(","))
        ]
        sources.append((f"interactive_qos {qos!r}", self.config.interactive_qos.get(qos)))
        for where, settings in sources:
            if settings is None:
                continue
            for field in FIELDS:
                value = getattr(settings, field)
                if value is not None and field not in found:
                    found[field] = (value, f"{where} {field}")
        for field in FIELDS:
            found.setdefault(field, (getattr(self.config, field), field))
        return SessionRules(
            max_time=found["interactive_max_time"][0],
            max_time_from=found["interactive_max_time"][1],
            idle_after=found["interactive_idle_after"][0],
            idle_after_from=found["interactive_idle_after"][1],
            idle_warning=found["interactive_idle_warning"][0],
        )
