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


def write_credentials(path: Path, token: str, uid: int = -1, gid: int = -1) -> Path:
    """Write ``token`` to ``path`` mode 0600 (its directories 0700), owned by ``uid``:``gid``
    when given (root installing another user's credentials)."""
    created = []
    parent = path.parent
    while not parent.exists():
        created.append(parent)
        parent = parent.parent
    for directory in reversed(created):
        directory.mkdir(mode=0o700)
        if uid >= 0:
            os.chown(directory, uid, gid)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        os.fchmod(fd, 0o600)
        if uid >= 0:
            os.fchown(fd, uid, gid)
        os.write(fd, f"{token}\n".encode())
    finally:
        os.close(fd)
    return path
