"""Bind-mount sources opened once, then mounted from what was opened (no check-then-use race).

``policy.admit`` resolves each source and checks it against the node's rules; a path can still
be swapped for a symbolic link before Docker mounts it. So the agent opens the resolved path as
the job's user (``useropen.open_source_as``: a directory the user cannot search is not reached),
from ``/`` one component at a time without following any link (``O_PATH|O_NOFOLLOW``), checks what it
got (a directory or a regular file, still at the resolved path), bind-mounts that open file
(``/proc/self/fd/N``) onto a private staging entry under its data directory (0700, root's), and
gives Docker the staging path. Docker copies the mount into the container at start; the staging
entry is then unmounted (lazily) and removed. Needs the agent to run as root in the mount
namespace of the Docker engine; without mount(2) the mount fails, never the racy path.
"""

from __future__ import annotations

import ctypes
import errno
import logging
import os
import stat
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from rota.agent.runtime.useropen import open_source_as
from rota.inputs import SpecError
from rota.jobspec import Mount

log = logging.getLogger("rota.agent")

MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 0x40000
MNT_DETACH = 0x2
UMOUNT_NOFOLLOW = 0x8
SYS_MOUNT_SETATTR = 442  # the same number on every architecture (added after the unified table)
AT_FDCWD = -100
AT_SYMLINK_NOFOLLOW = 0x100
AT_RECURSIVE = 0x8000
MOUNT_ATTR_RDONLY = 0x1
_MAX_UNMOUNTS = 8  # mounts stacked on one staging entry (never more than one unless tampered)


class _MountAttr(ctypes.Structure):
    """``struct mount_attr`` of mount_setattr(2)."""

    _fields_ = [
        ("attr_set", ctypes.c_uint64),
        ("attr_clr", ctypes.c_uint64),
        ("propagation", ctypes.c_uint64),
        ("userns_fd", ctypes.c_uint64),
    ]


class _Libc:
    """mount(2) and umount2(2), raising OSError with the errno."""

    def __init__(self) -> None:
        self._libc = ctypes.CDLL(None, use_errno=True)

    def mount(self, source: str | None, target: str, flags: int) -> None:
        src = source.encode() if source is not None else None
        if self._libc.mount(src, target.encode(), None, ctypes.c_ulong(flags), None) != 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err), target)

    def read_only_tree(self, target: str) -> None:
        """Make the mount at ``target`` and every mount beneath it read-only
        (``mount_setattr(2)`` with ``AT_RECURSIVE``, Linux 5.12 and later)."""
        attr = _MountAttr(MOUNT_ATTR_RDONLY, 0, 0, 0)
        flags = AT_RECURSIVE | AT_SYMLINK_NOFOLLOW
        path = target.encode()
        done = self._libc.syscall(
            SYS_MOUNT_SETATTR, AT_FDCWD, path, flags, ctypes.byref(attr), ctypes.sizeof(attr)
        )
        if done != 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err), target)

    def umount(self, target: str) -> None:
        if self._libc.umount2(target.encode(), MNT_DETACH | UMOUNT_NOFOLLOW) != 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err), target)


class MountStager:
    """Stages the bind mounts of launches under ``root`` (one folder per launch key).

    Made with the agent: ``root`` is created 0700 and cleared of the entries an agent that
    crashed left behind. Thread-safe for distinct keys.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self._libc = _Libc()
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not stat.S_ISDIR(os.lstat(root).st_mode):
            raise OSError(errno.ENOTDIR, "the mount staging folder is not a directory", str(root))
        os.chmod(root, 0o700)
        for leftover in sorted(root.iterdir()):
            log.info("removing mount staging entries left by an earlier agent: %s", leftover)
            self.release(leftover.name)

    def stage(self, key: str, mounts: Sequence[Mount], uid: int, gid: int) -> tuple[Mount, ...]:
        """``mounts`` (sources resolved and admitted by ``policy.admit``) with each source
        replaced by a private staging bind of what is at that path now, as ``uid:gid`` reaches
        it (``useropen.open_source_as``); read-only mounts are read-only there too, mounts
        beneath them included. SpecError naming ``mounts[i].source`` when one cannot be staged
        (then nothing of ``key`` stays staged)."""
        if not mounts:
            return ()
        folder = self.root / key
        self.release(key)  # a previous try of this launch left it
        folder.mkdir(mode=0o700)
        staged = []
        try:
            for i, mount in enumerate(mounts):
                target = folder / str(i)
                self._stage_one(f"mounts[{i}].source", mount, str(target), uid, gid)
                staged.append(replace(mount, source=str(target)))
        except BaseException:
            self.release(key)
            raise
        return tuple(staged)

    def _stage_one(self, field: str, mount: Mount, target: str, uid: int, gid: int) -> None:
        try:
            fd = open_source_as(mount.source, uid, gid)
        except OSError as exc:
            raise SpecError(field, _open_problem(mount.source, exc)) from None
        try:
            mode = os.fstat(fd).st_mode
            if os.readlink(f"/proc/self/fd/{fd}") != mount.source:
                raise SpecError(field, f"{mount.source} was moved while it was being opened")
            if stat.S_ISDIR(mode):
                os.mkdir(target, 0o700)
            elif stat.S_ISREG(mode):
                os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            else:
                raise SpecError(
                    field, f"{mount.source} is not a directory or a regular file; not mounted"
                )
            self._bind(field, fd, target, mount.read_only)
        except OSError as exc:
            raise SpecError(field, f"cannot be staged on the node: {exc.strerror}") from None
        finally:
            os.close(fd)

    def _bind(self, field: str, fd: int, target: str, read_only: bool) -> None:
        try:
            self._libc.mount(f"/proc/self/fd/{fd}", target, MS_BIND | MS_REC)
        except OSError as exc:
            hint = " (the agent must run as root to bind-mount)" if exc.errno == errno.EPERM else ""
            raise SpecError(
                field, f"cannot be bind-mounted on the node: {exc.strerror}{hint}"
            ) from None
        try:
            self._libc.mount(None, target, MS_PRIVATE | MS_REC)
            if read_only:
                self._libc.read_only_tree(target)
                if not os.statvfs(target).f_flag & os.ST_RDONLY:
                    raise OSError(errno.EROFS, "the read-only remount did not hold", target)
        except OSError as exc:
            raise SpecError(field, f"cannot be staged on the node: {exc.strerror}") from None

    def release(self, key: str) -> None:
        """Unmount (lazily) and remove the staging entries of ``key``; never raises, never
        removes anything still mounted or not empty (those are logged and left)."""
        folder = self.root / key
        try:
            entries = sorted(os.listdir(folder))
        except FileNotFoundError:
            return
        except OSError as exc:
            log.warning("cannot list mount staging folder %s: %s", folder, exc.strerror)
            return
        for name in entries:
            self._remove(str(folder / name))
        self._remove(str(folder))

    def _remove(self, path: str) -> None:
        try:
            for _ in range(_MAX_UNMOUNTS):
                try:
                    self._libc.umount(path)
                except OSError as exc:
                    if exc.errno == errno.EINVAL:  # not (or no longer) a mount point
                        break
                    raise
            if stat.S_ISDIR(os.lstat(path).st_mode):
                os.rmdir(path)  # only ever empty: never a recursive removal
            else:
                os.unlink(path)
        except FileNotFoundError:
            pass
        except OSError as exc:
            log.warning("cannot remove mount staging entry %s: %s", path, exc.strerror)


def _open_problem(source: str, exc: OSError) -> str:
    if exc.errno == errno.ENOENT:
        return f"{source} does not exist on the node"
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        return (
            f"{source} changed after it was checked: a part of it is now a symbolic link "
            "or not a directory"
        )
    return f"{source} cannot be opened on the node: {exc.strerror}"
