"""Open a job's output file, or a bind-mount source, as the job's user, never as root.

``open_as`` returns a descriptor, open for writing, of a regular file owned by ``uid``,
cut to at most ``keep`` bytes (zero by default; all of it kept with ``keep=None``) and placed
at its end. Where the agent runs as root, a child process opens it: the child
starts as root, drops to ``uid:gid`` (and the supplementary groups of ``uid``'s passwd entry
on this host, none without one) before touching the path, and hands the descriptor back over a
socket pair. So the kernel checks every permission as the job's user, and a file or directory
that user cannot write is refused as it would be for them.

The path is walked from ``/`` one component at a time without following any symbolic link
(``O_NOFOLLOW``); the file is opened without blocking (a FIFO is refused at once), checked to be
a regular file owned by ``uid`` and only then cut. An existing file of another owner is
never truncated nor chowned. ``open_source_as`` opens a mount source the same way, as an
``O_PATH`` descriptor that the (root) agent then bind-mounts.

The module uses the standard library only: the child runs this file's source (``python -I
-c``), so it needs no package, only the interpreter, which root can always start.
"""

from __future__ import annotations

import errno
import os
import pwd
import socket
import stat
import subprocess
import sys
from pathlib import Path

_DIR_FLAGS = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
_TIMEOUT = 30.0  # seconds the child may take (a hung network file system fails the open)


def open_as(path: str, uid: int, gid: int, keep: int | None = 0) -> int:
    """A write descriptor of ``path`` (absolute) created as ``uid:gid`` or cut to ``keep``
    bytes (None: not cut), at its end; OSError with the reason when the user may not write it
    or it is not their regular file."""
    if os.geteuid() != 0:
        return open_checked(os.fsencode(path), os.geteuid(), keep)
    return _in_child("file", path, uid, gid, keep)


def open_source_as(path: str, uid: int, gid: int) -> int:
    """An ``O_PATH`` descriptor of ``path`` (absolute) as ``uid:gid`` reaches it: every
    directory on the way searched with that user's permissions, no symbolic link followed
    (``open_no_follow``). So a bind mount of it shows the job nothing its user could not reach."""
    if os.geteuid() != 0:
        return open_no_follow(os.fsencode(path))
    return _in_child("path", path, uid, gid)


def _in_child(mode: str, path: str, uid: int, gid: int, keep: int | None = 0) -> int:
    """The descriptor of ``path`` that a child dropped to ``uid:gid`` opened in ``mode``."""
    parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with parent:
        try:
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-I",
                    "-c",
                    Path(__file__).read_text(),
                    mode,
                    os.fsencode(path),
                    str(child.fileno()),
                    "all" if keep is None else str(keep),
                    str(uid),
                    str(gid),
                    *(str(g) for g in supplementary_groups(uid, gid)),
                ],
                pass_fds=(child.fileno(),),
                cwd="/",
                env={},
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
        finally:
            child.close()
        try:
            parent.settimeout(_TIMEOUT)
            return _receive(parent, proc)
        finally:
            _reap(proc)


def supplementary_groups(uid: int, gid: int) -> list[int]:
    """The supplementary groups of ``uid``'s passwd entry here; none without one."""
    try:
        name = pwd.getpwuid(uid).pw_name
    except KeyError:
        return []
    return [g for g in os.getgrouplist(name, gid) if g != gid]


def _receive(sock: socket.socket, proc: subprocess.Popen[bytes]) -> int:
    try:
        data, fds, _, _ = socket.recv_fds(sock, 4096, 1)
    except TimeoutError:
        raise OSError(errno.ETIMEDOUT, f"no answer within {_TIMEOUT:.0f}s") from None
    if fds and data == b"ok":
        return fds[0]
    for fd in fds:
        os.close(fd)
    if data:
        code, _, text = data.decode(errors="replace").partition(" ")
        raise OSError(int(code) if code.isdigit() else errno.EIO, text)
    proc.wait(timeout=_TIMEOUT)
    stderr = proc.stderr.read().decode(errors="replace").strip() if proc.stderr else ""
    raise OSError(errno.EIO, f"the opener failed: {stderr[-300:] or proc.returncode}")


def _reap(proc: subprocess.Popen[bytes]) -> None:
    try:
        proc.wait(timeout=_TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    if proc.stderr:
        proc.stderr.close()


def _parts(path: bytes) -> tuple[list[bytes], bytes]:
    """(directories, last name) of an absolute, normalized ``path``."""
    if not path.startswith(b"/"):
        raise OSError(errno.EINVAL, "must be an absolute path")
    *folders, name = path[1:].split(b"/")
    if not name or any(part in (b"", b".", b"..") for part in [*folders, name]):
        raise OSError(errno.EINVAL, "must be a normalized path to a file")
    return folders, name


def _walk(folders: list[bytes]) -> int:
    """An ``O_PATH`` descriptor of ``/`` + ``folders``, reached one directory at a time as
    the calling process may, following no symbolic link."""
    fd = os.open(b"/", _DIR_FLAGS)
    where = b""
    for part in folders:
        where += b"/" + part
        try:
            nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
        except OSError as exc:
            os.close(fd)
            raise _reason(exc, f"directory {os.fsdecode(where)}: ") from None
        os.close(fd)
        fd = nxt
    return fd


def open_no_follow(path: bytes) -> int:
    """An ``O_PATH`` descriptor of ``path`` (absolute, normalized), reached as the calling
    process may without following any symbolic link, the last component included."""
    folders, name = _parts(path)
    fd = _walk(folders)
    try:
        out = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
    except OSError as exc:
        raise _reason(exc) from None
    finally:
        os.close(fd)
    if stat.S_ISLNK(os.fstat(out).st_mode):
        os.close(out)
        raise OSError(errno.ELOOP, "is a symbolic link")
    return out


def open_checked(path: bytes, uid: int, keep: int | None = 0) -> int:
    """Open ``path`` as the calling process may: every directory without following links,
    the file without blocking, refused unless a regular file owned by ``uid``; cut to at most
    ``keep`` bytes (None: as it is) and placed at its end."""
    folders, name = _parts(path)
    fd = _walk(folders)
    try:
        out = os.open(name, _FILE_FLAGS, 0o644, dir_fd=fd)
    except OSError as exc:
        raise _reason(exc) from None
    finally:
        os.close(fd)
    try:
        info = os.fstat(out)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "is not a regular file")
        if info.st_uid != uid:
            raise OSError(errno.EPERM, f"belongs to uid {info.st_uid}, not the job's uid {uid}")
        if keep is not None and info.st_size > keep:
            os.ftruncate(out, keep)
        os.lseek(out, 0, os.SEEK_END)
    except BaseException:
        os.close(out)
        raise
    return out


def _reason(exc: OSError, prefix: str = "") -> OSError:
    """``exc`` as a one-line reason: ELOOP/ENOTDIR (a link met with ``O_NOFOLLOW``) as a
    symbolic link, ENXIO (a FIFO without a reader) as not a regular file."""
    text = {
        errno.ELOOP: "is a symbolic link",
        errno.ENOTDIR: "is a symbolic link or not a directory",
        errno.ENXIO: "is not a regular file",
    }.get(exc.errno or 0, exc.strerror or str(exc))
    return OSError(exc.errno, prefix + text)


def _child(argv: list[str]) -> None:
    """The child: drop to the user, open, send the descriptor (or ``"ERRNO reason"``)."""
    mode, path, sock_fd, keep, uid, gid, *groups = argv
    sock = socket.socket(fileno=int(sock_fd))
    try:
        os.setgroups([int(g) for g in groups])
        os.setgid(int(gid))
        os.setuid(int(uid))
        if os.getuid() != int(uid) or os.geteuid() != int(uid):
            raise OSError(errno.EPERM, "could not drop to the job's user")
        if mode == "path":
            fd = open_no_follow(os.fsencode(path))
        else:
            fd = open_checked(os.fsencode(path), int(uid), None if keep == "all" else int(keep))
    except OSError as exc:
        sock.sendall(f"{exc.errno or errno.EIO} {exc.strerror or exc}".encode())
        return
    socket.send_fds(sock, [b"ok"], [fd])


if __name__ == "__main__":
    _child(sys.argv[1:])
