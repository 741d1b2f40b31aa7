"""A user's token for the CLI: ``ROTA_TOKEN``, else the credentials file.

The file is ``credentials`` in the rota config directory (``~/.config/rota/credentials``), holds
the token on one line, and must be readable by its owner only: a file group or others can read
is refused, since anyone reading it acts as that user.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from rota.paths import config_dir

FILE_NAME = "credentials"


class CredentialsError(Exception):
    """The credentials file exists but must not be used (or cannot be read)."""


def credentials_file() -> Path:
    return config_dir() / FILE_NAME


def read_token() -> str:
    """``ROTA_TOKEN``, else the credentials file's token, else ""; CredentialsError when the
    file can be read by group or others, or not read at all."""
    token = os.environ.get("ROTA_TOKEN", "").strip()
    if token:
        return token
    path = credentials_file()
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return ""
    except OSError as exc:
        raise CredentialsError(f"cannot read {path}: {exc.strerror}") from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise CredentialsError(
            f"{path} can be read by others (mode {stat.S_IMODE(mode):04o}); "
            f"run `chmod 600 {path}` (and ask an admin for a new token if others read it)"
        )
    try:
        return path.read_text().strip()
    except OSError as exc:
        raise CredentialsError(f"cannot read {path}: {exc.strerror}") from None


def write_credentials(path: Path, token: str) -> Path:
    """Write ``token`` to ``path`` mode 0600 (directories it creates 0700), as this process's
    effective user; a link at the file itself is refused (O_NOFOLLOW)."""
    created = []
    parent = path.parent
    while not parent.exists():
        created.append(parent)
        parent = parent.parent
    for directory in reversed(created):
        directory.mkdir(mode=0o700)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, f"{token}\n".encode())
    finally:
        os.close(fd)
    return path


def install_credentials(path: Path, token: str, uid: int, gid: int) -> Path:
    """``write_credentials`` as user ``uid``:``gid`` (root installing a user's credentials in
    their home): the effective ids are theirs while writing, so the files are theirs and a
    link they planted cannot make root write or truncate anything they could not. OSError
    says why the file could not be written."""
    if os.geteuid() == uid:
        return write_credentials(path, token)
    groups, egid, euid = os.getgroups(), os.getegid(), os.geteuid()
    os.setgroups([gid])
    os.setegid(gid)
    os.seteuid(uid)
    try:
        return write_credentials(path, token)
    finally:
        os.seteuid(euid)
        os.setegid(egid)
        os.setgroups(groups)
