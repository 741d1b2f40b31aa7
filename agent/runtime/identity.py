"""This agent's identity among the container engine's containers.

One Docker engine may serve several agents with the same node name: two users each running
``rota up`` on one workstation (the node name defaults to the host name), or two clusters'
agents on a shared host. Each agent keeps a random id in its data directory (file
``agent-id``, created at its first start) and labels its containers with it; it adopts, and so
reports, stops and removes, only containers carrying its own id, and the id is part of each
container's name, so two agents' job 1 attempt 1 never collide either.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from rota.private import private_dir

FILE = "agent-id"


def agent_id(data_dir: Path) -> str:
    """The id kept in ``data_dir/agent-id`` (16 hex digits), created there (mode 0600) when
    missing; a file that cannot be read or does not hold such an id (only its first bytes
    are read) is an error naming it (ValueError)."""
    path = private_dir(data_dir) / FILE
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        try:
            with open(path, "rb") as kept:  # a few bytes: an id, a newline, maybe spaces
                text = kept.read(64).decode("ascii", "replace").strip()
        except OSError as exc:  # a directory, unreadable
            raise ValueError(f"{path} cannot be read: {exc.strerror or exc}") from None
        if len(text) != 16 or any(c not in "0123456789abcdef" for c in text):
            raise ValueError(
                f"{path} does not hold an agent id (16 hex digits); remove it only if no job "
                "container of this agent is left (docker ps --filter label=rota.agent)"
            ) from None
        return text
    new = secrets.token_hex(8)
    with os.fdopen(fd, "w") as out:
        out.write(new + "\n")
    return new
