"""Partitions at run time: those of the settings file, read-only here, and those admins make
with ``gadmin partition``, stored so that they survive a restart (docs/admin.md "Partitions").

How the two combine:

- The settings file's partitions (or, when it sets none, the implicit ``default`` partition of
  every node) are always there; they are changed only by editing the file and restarting.
  Admins' partitions come after them, in creation order, each with a name of its own (a stored
  partition whose name the file now defines is left out at start, with a warning: the file
  wins).
- Jobs naming no partition go to the file's default, unless an admin partition is marked
  ``default``; at most one is.
- A partition is removed only while no pending or running job names it. A change applies to
  the next submission and the next pass: a pending job is placed on its partitions' nodes as
  they are then; a running job stays where it is.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from rota.inputs import SpecError, check_account, check_labels, check_name, normal_name
from rota.scheduler.cluster.model import JobRecord
from rota.scheduler.config import SchedulerConfig
from rota.scheduler.core.errors import AlreadyExists, Conflict, NotFound, UserError
from rota.scheduler.core.model import ClusterModel
from rota.scheduler.partition_settings import PartitionSettings, partition_table, to_partition
from rota.scheduler.policy.partitions import PartitionTable
from rota.scheduler.store.protocols import PartitionRepository, StoredPartition
from rota.settings import SettingsError, build

log = logging.getLogger("rota.scheduler")
SETTINGS, ADMIN, IMPLICIT = "settings", "admin", "implicit"  # where a partition comes from
FIELDS = tuple(PartitionSettings.model_fields)  # what add and update may set


@dataclass(frozen=True, slots=True)
class PartitionEntry:
    """One partition as ``gadmin partition list`` shows it: its settings as set, where it
    comes from, whether it is the default now, and (admins' only) who changed it last."""

    name: str
    settings: PartitionSettings
    source: str
    is_default: bool
    changed_by: str = ""
    changed: float = 0.0


class PartitionService:
    """The lab's partitions. ``table`` is the one ``PartitionTable`` the snapshot builder, the
    job service and the node service hold: every change resets it in place, after the store
    has committed it."""

    def __init__(
        self,
        store: PartitionRepository,
        model: ClusterModel,
        config: SchedulerConfig,
        clock: Callable[[], float],
    ) -> None:
        self.store = store
        self.model = model
        self.clock = clock
        self._times = (config.default_time_limit, config.max_time_limit)
        self._file = dict(config.partitions)
        self._stored: dict[str, StoredPartition] = {}
        self._settings: dict[str, PartitionSettings] = {}
        for stored in store.all():
            if stored.name in self._file:
                log.warning(
                    "partition %s is defined in the settings file; the stored one (gadmin "
                    "partition) is left out",
                    stored.name,
                )
                continue
            self._stored[stored.name] = stored
            self._settings[stored.name] = PartitionSettings.model_validate(stored.settings)
        self.table = PartitionTable()
        self._reset()

    def entries(self) -> list[PartitionEntry]:
        """Every partition: the settings file's (or the implicit one), then admins'."""
        default = self.table.default.name
        out = [PartitionEntry(name, p, SETTINGS, name == default) for name, p in self._file.items()]
        if not self._file:
            implicit = self.table.partitions[0].name
            out.append(PartitionEntry(implicit, PartitionSettings(), IMPLICIT, implicit == default))
        for name, stored in self._stored.items():
            settings = self._settings[name]
            out.append(
                PartitionEntry(
                    name, settings, ADMIN, name == default, stored.changed_by, stored.changed
                )
            )
        return out

    def settings(self, name: str) -> PartitionSettings | None:
        """The settings of partition ``name`` (the file's, else an admin's); None for the
        implicit partition and unknown names."""
        return self._file.get(name) or self._settings.get(name)

    def entry(self, name: str) -> PartitionEntry:
        """The partition ``name``; NotFound naming the partitions when there is none."""
        for entry in self.entries():
            if entry.name == name:
                return entry
        raise NotFound(f"partition {name!r} does not exist; partitions: {self.table.names()}")

    def add(self, name: str, fields: Mapping[str, Any], user: str) -> PartitionEntry:
        """Make partition ``name`` with ``fields`` (``PartitionSettings``' names; the others
        take their defaults). UserError naming the field, AlreadyExists for a known name,
        Conflict for a second default."""
        name = normal_name(name)
        try:
            check_name("name", name)
        except SpecError as exc:
            raise UserError(str(exc)) from None
        if not name:
            raise UserError("name: a partition needs a name")
        if name in self.table.by_name:
            where = "gadmin partition add" if name in self._stored else "the settings file"
            raise AlreadyExists(f"partition {name!r} exists already (made by {where})")
        settings = self._checked(name, fields)
        position = max((s.position for s in self._stored.values()), default=0) + 1
        return self._save(name, settings, position, user)

    def update(self, name: str, fields: Mapping[str, Any], user: str) -> PartitionEntry:
        """Change the ``fields`` given of admin partition ``name``; the others stay."""
        stored = self._admin(name, "changed")
        merged = {**self._settings[name].model_dump(), **fields}
        return self._save(name, self._checked(name, merged), stored.position, user)

    def remove(self, name: str, user: str) -> str:
        """Remove admin partition ``name``; Conflict while a pending or running job names it."""
        self._admin(name, "removed")
        named = sorted(
            (j for j in self.model.jobs.values() if not j.state.terminal and _names(j, name)),
            key=lambda j: j.id,
        )
        if named:
            ids = ", ".join(j.display_id for j in named[:10]) + (", ..." if named[10:] else "")
            raise Conflict(
                f"partition {name!r} is named by {len(named)} pending or running job(s) ({ids}); "
                "cancel them or wait until they end"
            )
        self.store.delete(name)
        del self._stored[name], self._settings[name]
        self._reset()
        log.info("partition %s removed by %s", name, user)
        return f"Partition {name} removed; the default is {self.table.default.name}"

    # ------------------------------------------------------------ helpers

    def _checked(self, name: str, fields: Mapping[str, Any]) -> PartitionSettings:
        unknown = sorted(set(fields) - set(FIELDS))
        if unknown:
            raise UserError(f"{', '.join(unknown)}: unknown; partition fields: {', '.join(FIELDS)}")
        try:
            settings = build(PartitionSettings, "partition", fields)
            check_labels("labels", settings.labels)
            for field in ("allow_users", "allow_accounts"):
                for value in getattr(settings, field):
                    (check_account if field == "allow_accounts" else check_name)(field, value)
        except (SettingsError, SpecError) as exc:
            raise UserError(str(exc)) from None
        for pattern in settings.nodes:
            if not pattern.isprintable() or len(pattern) > 253:
                raise UserError(f"nodes: {pattern[:80]!r} is not a node name or glob pattern")
        if settings.default:
            others = [n for n, p in self._settings.items() if p.default and n != name]
            if others:
                raise Conflict(
                    f"default: partition {others[0]!r} is the default; `gadmin partition update "
                    f"{others[0]} --no-default` first"
                )
        return settings

    def _save(
        self, name: str, settings: PartitionSettings, position: int, user: str
    ) -> PartitionEntry:
        stored = StoredPartition(
            name, settings.model_dump(mode="json"), position, user, self.clock()
        )
        self.store.save(stored)
        self._stored[name] = stored
        self._settings[name] = settings
        self._stored = dict(sorted(self._stored.items(), key=lambda kv: kv[1].position))
        self._reset()
        log.info("partition %s set by %s", name, user)
        return self.entry(name)

    def _admin(self, name: str, what: str) -> StoredPartition:
        stored = self._stored.get(name)
        if stored is not None:
            return stored
        if name in self.table.by_name:
            raise Conflict(
                f"partition {name!r} comes from the scheduler's settings file and is {what} "
                "only there (then restart the scheduler)"
            )
        raise NotFound(f"partition {name!r} does not exist; partitions: {self.table.names()}")

    def _reset(self) -> None:
        """Rebuild ``table`` in place from the file's and the stored partitions."""
        default_time, max_time = self._times
        base = partition_table(self._file, default_time, max_time).partitions
        admin_default = any(p.default for p in self._settings.values())
        if admin_default:
            base = tuple(dataclasses.replace(p, default=False) for p in base)
        added = [
            to_partition(name, p, p.default, default_time, max_time)
            for name, p in self._settings.items()
        ]
        self.table.reset([*base, *added])
        self.model.bump()


def _names(job: JobRecord, name: str) -> bool:
    return name in job.spec.partition.split(",")
