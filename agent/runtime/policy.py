"""What a job container may do on this node, decided before it is created.

The node checks every launch itself, whatever the scheduler allowed: mounts only under the
node's ``allowed_mounts`` (symbolic links resolved here, the Docker socket, ``/`` and system
directories never), images on the node's allow-list, no user value for the GPU variables. The
container runs as a non-root uid:gid with every capability dropped, ``no-new-privileges``, a
pids limit and Docker's default seccomp profile. Who it runs as (``identity``): the uid:gid
``gadmin user`` set, else this node's passwd entry of the job's user, with that entry's
supplementary groups and home directory (the same groups the agent opens mounts and output files
with, ``useropen``).
"""

from __future__ import annotations

import pwd
from dataclasses import dataclass
from typing import Any

from rota.agent.runtime.useropen import supplementary_groups
from rota.allowlists import check_image, resolve_mount_source
from rota.inputs import SpecError
from rota.jobspec import Mount
from rota.messages import LaunchOrder
from rota.validate import RESERVED_ENV, check_shm


@dataclass(frozen=True, slots=True)
class Identity:
    """Who a job's container runs as: uid, gid, supplementary groups and the home directory of
    the uid's passwd entry on this node ("" without one)."""

    uid: int
    gid: int
    groups: tuple[int, ...] = ()
    home: str = ""


@dataclass(frozen=True)
class ContainerPolicy:
    """The node's rules for job containers (``rota agent`` flags)."""

    allowed_mounts: tuple[str, ...] = ()
    allowed_images: tuple[str, ...] = ()
    allowed_registries: tuple[str, ...] = ("*",)
    default_uid: int = 65534
    default_gid: int = 65534
    allow_root: bool = False
    pids_limit: int = 4096

    def admit(self, order: LaunchOrder) -> tuple[Mount, ...]:
        """SpecError for what this node never runs (an image off its list, a user value for
        the GPU variables, a refused mount, a /dev/shm beyond ``check_shm``); else the order's
        mounts with sources resolved."""
        check_image("image", order.spec.image, self.allowed_images, self.allowed_registries)
        check_shm("shm_size", order.spec.shm_size, order.spec.memory)
        for key in RESERVED_ENV:
            if key in order.spec.env:
                raise SpecError(f"env.{key}", "is set by rota and cannot be overridden")
        return tuple(
            Mount(
                resolve_mount_source(f"mounts[{i}].source", m.source, self.allowed_mounts),
                m.target,
                m.read_only,
            )
            for i, m in enumerate(order.spec.mounts)
        )

    def run_as(self, order: LaunchOrder) -> tuple[int, int]:
        """(uid, gid): the scheduler's, else this node's passwd entry of the job's user, else
        the default; root (uid or gid 0) only where ``allow_root`` says so."""
        if order.uid is not None:
            uid, gid = order.uid, order.gid if order.gid is not None else order.uid
        else:
            try:
                entry = pwd.getpwnam(order.user) if order.user else None
            except KeyError:
                entry = None
            uid, gid = (entry.pw_uid, entry.pw_gid) if entry else (-1, -1)
        if uid < 0 or ((uid == 0 or gid == 0) and not self.allow_root):
            return self.default_uid, self.default_gid
        return uid, gid

    def identity(self, order: LaunchOrder) -> Identity:
        """``run_as`` with the supplementary groups and home of the uid's passwd entry here
        (none for the default user, group 0 only where ``allow_root`` says so)."""
        uid, gid = self.run_as(order)
        if (uid, gid) == (self.default_uid, self.default_gid):
            return Identity(uid, gid)
        try:
            home = pwd.getpwuid(uid).pw_dir
        except KeyError:
            return Identity(uid, gid)
        groups = tuple(g for g in supplementary_groups(uid, gid) if g or self.allow_root)
        return Identity(uid, gid, groups, home if home.startswith("/") else "")

    def hardening(self) -> dict[str, Any]:
        """docker-py ``containers.create`` arguments every job container gets."""
        return {
            "cap_drop": ["ALL"],
            "security_opt": ["no-new-privileges:true"],
            "pids_limit": self.pids_limit,
            "privileged": False,
        }
