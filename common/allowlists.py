"""The admin's allow-lists of job inputs: bind-mount sources, images and their registries.

``mount_refusal``/``check_mount_source`` are what the scheduler applies to a spec's mounts and
output files, and ``resolve_mount_source`` what the agent applies before a launch, there with
symbolic links resolved on the node. ``check_image`` holds an image reference to the allowed
registries and patterns. Errors are ``SpecError`` (``rota.inputs``).
"""

from __future__ import annotations

import fnmatch
import os
import stat
from collections.abc import Iterable, Sequence

from rota.inputs import MAX_IMAGE, SpecError, check_text

FORBIDDEN_MOUNTS = ("/etc", "/root", "/proc", "/sys", "/dev", "/boot", "/var/run", "/run")
DOCKER_SOCKET = "docker.sock"


def _under(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith(prefix.rstrip("/") + "/")


def mount_refusal(path: str, allowed: Iterable[str] | None) -> str:
    """Why ``path`` (absolute, normalised) may not be bind-mounted; "" when it may.

    Refused always: ``/``, the Docker socket, and anything under, or holding, ``/etc``,
    ``/root``, ``/proc``, ``/sys``, ``/dev``, ``/boot``, ``/var/run`` and ``/run``. Otherwise the
    path must be under one of ``allowed`` (when given).
    """
    if path == "/":
        return "mounting / is never allowed"
    if os.path.basename(path) == DOCKER_SOCKET:
        return "mounting the Docker socket is never allowed"
    for forbidden in FORBIDDEN_MOUNTS:
        if _under(path, forbidden) or _under(forbidden, path):
            return f"mounting {path} is never allowed (it is or holds {forbidden})"
    if allowed is None:
        return ""
    prefixes = [os.path.normpath(p) for p in allowed]
    if not any(_under(path, p) for p in prefixes):
        where = ", ".join(prefixes) if prefixes else "none: bind mounts are disabled"
        return f"{path} is not under an allowed mount prefix (allowed_mounts: {where})"
    return ""


def check_mount_source(field: str, source: str, allowed: Iterable[str] | None) -> str:
    """The normalised source path, or SpecError: relative, ``..`` or a refused path."""
    if not source.startswith("/"):
        raise SpecError(field, f"must be an absolute path, got {source[:80]!r}")
    if ".." in source.split("/"):
        raise SpecError(field, "must not contain '..'")
    path = os.path.normpath(source)
    problem = mount_refusal(path, allowed)
    if problem:
        raise SpecError(field, problem)
    return path


def resolve_mount_source(field: str, source: str, allowed: Iterable[str] | None) -> str:
    """On the node: ``check_mount_source``, then the same rules for the path with every
    symbolic link resolved (and never a socket). Returns the resolved path to mount; a path
    that cannot be looked at (a link loop, no permission) is a SpecError too."""
    check_mount_source(field, source, allowed)
    try:
        real = os.path.realpath(source)
        problem = mount_refusal(real, allowed)
        if problem:
            raise SpecError(field, f"{source} resolves to {real}: {problem}")
        if stat.S_ISSOCK(os.stat(real).st_mode):
            raise SpecError(field, f"{source} is a socket; sockets are never mounted")
    except FileNotFoundError:
        pass  # reported by whoever opens it (the bind mount, the output file)
    except OSError as exc:
        raise SpecError(field, f"{source} cannot be resolved on the node: {exc.strerror}") from None
    return real


DEFAULT_REGISTRIES = ("docker.io", "nvcr.io", "ghcr.io")
"""Where images may come from unless an admin says otherwise (``allowed_registries``)."""
_DOCKER_HUB = frozenset({"docker.io", "index.docker.io", "registry-1.docker.io"})


def image_registry(image: str) -> str:
    """The registry host of an image reference, as Docker reads it: the first path part when
    it has a dot or a port or is ``localhost``, else Docker Hub (``docker.io``)."""
    first, slash, _ = image.partition("/")
    if not slash or not ("." in first or ":" in first or first == "localhost"):
        return "docker.io"
    host = first.lower()
    return "docker.io" if host in _DOCKER_HUB else host


def check_image(
    field: str, image: str, allowed: Sequence[str], registries: Sequence[str] = ("*",)
) -> None:
    """A plausible image reference from one of ``registries`` (``*``: any); with an
    allow-list of patterns, one that matches a pattern of it."""
    if not image.strip():
        raise SpecError(field, "must not be empty")
    check_text(field, image, MAX_IMAGE)
    if any(c.isspace() for c in image):
        raise SpecError(field, "must not contain spaces")
    registry = image_registry(image)
    if "*" not in registries and registry not in {r.lower() for r in registries}:
        raise SpecError(
            field,
            f"images from {registry} are not allowed here "
            f"(allowed_registries: {', '.join(registries) or 'none'})",
        )
    if allowed and not any(fnmatch.fnmatchcase(image, p) for p in allowed):
        raise SpecError(
            field, f"image {image!r} is not allowed here (allowed_images: {', '.join(allowed)})"
        )
