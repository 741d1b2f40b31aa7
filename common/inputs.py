"""The small checks of request values, shared by the CLI, the scheduler and the agent.

- ``check_text``, ``check_name``, ``check_number``: free text, names and numbers of any field.
- ``check_job_ids``, ``is_job_id``, ``check_page_token``: job ids and listing tokens.
- ``check_node_name``, ``check_labels``, ``check_host_id``: node names (as agents register),
  admin labels, uids/gids.
- ``normal_name``, ``normal_names``, ``normal_flags``: the one normalisation of request values
  (stripped; flags upper-cased), applied before any permission check so that the value
  checked is the value stored.
- ``check_message(msg)``: the shape of any protobuf request (string lengths and control
  characters, finite floats, list and map sizes), walked through its descriptor.

Errors are ``SpecError(field, message)``: the field's dotted path and what is allowed. The job
spec's own checks are ``rota.validate``; mounts, images and registries ``rota.allowlists``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

MAX_NAME = 128
MAX_IMAGE = 512
MAX_COMMAND_BYTES = 256 * 1024
MAX_ENV_VALUE = 32 * 1024
MAX_LABELS = 64
MAX_LABEL = 253
MAX_PATH = 4096
MAX_REASON = 1024
MAX_STRING = 4096  # any other string of a request
MAX_LIST = 100_000  # any other repeated field or map of a request
MAX_HOST_ID = 2**32 - 1  # uid, gid
# Per-field string limits of requests (by field name); anything else gets MAX_STRING.
_FIELD_LIMITS = {
    "command": MAX_COMMAND_BYTES,
    "env": MAX_ENV_VALUE,
    "reason": MAX_REASON,
    "page_token": 32,
}
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:+-]*\Z")  # \Z: "$" allows a final newline
_ACCOUNT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:+@-]*\Z")
_JOB_ID = re.compile(r"[0-9]{1,18}(_[0-9]{1,9})?")  # ids fit a 64-bit integer
_PAGE_TOKEN = re.compile(r"[0-9]{1,18}")
NODE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,252}")  # fullmatch: agents' --node too
LABEL_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,252}")  # fullmatch: agents' --label too
# C0 and C1 controls, and the bidirectional overrides and isolates that reorder what a terminal
# shows (a field could otherwise forge rows of another user's gqueue).
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_CONTROL_EXCEPT_SPACE = re.compile(
    r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]"
)


class SpecError(ValueError):
    """An input field is invalid; ``field`` names it (dotted path)."""

    def __init__(self, field_name: str, message: str) -> None:
        super().__init__(f"{field_name}: {message}")
        self.field = field_name


def check_text(field: str, value: str, max_len: int = MAX_STRING, multiline: bool = False) -> None:
    """At most ``max_len`` characters and no control characters (tabs and newlines only when
    ``multiline``)."""
    if len(value) > max_len:
        raise SpecError(field, f"is {len(value)} characters long; at most {max_len} are allowed")
    pattern = _CONTROL_EXCEPT_SPACE if multiline else _CONTROL
    if pattern.search(value):
        raise SpecError(field, "must not contain control characters")


def check_name(field: str, value: str, max_len: int = MAX_NAME) -> None:
    """Empty, or up to ``max_len`` letters, digits and ``_ . : + -`` starting alphanumeric."""
    if not value:
        return
    if len(value) > max_len or not _NAME.match(value):
        raise SpecError(
            field,
            f"use up to {max_len} letters, digits and _ . : + - (starting alphanumeric)",
        )


def check_account(field: str, value: str, max_len: int = MAX_NAME) -> None:
    """A name (``check_name``) that may also hold ``@``, as SLURM accounts do (``six@gpu``)."""
    if not value:
        return
    if len(value) > max_len or not _ACCOUNT.match(value):
        raise SpecError(
            field,
            f"use up to {max_len} letters, digits and _ . : + - @ (starting alphanumeric)",
        )


def check_number(field: str, value: float, low: float, high: float) -> None:
    """A finite number with ``low <= value <= high``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SpecError(field, f"expected a number, got {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise SpecError(field, f"must be a finite number, got {value!r}")
    if not low <= value <= high:
        if isinstance(value, int) and abs(value) > 2**64:  # too large to write as a float
            raise SpecError(field, f"must be between {low:g} and {high:g}")
        raise SpecError(field, f"must be between {low:g} and {high:g}, got {value:g}")


def check_job_ids(field: str, ids: Sequence[str], max_ids: int, steps: bool = False) -> None:
    """At most ``max_ids`` ids, each like ``123`` or ``123_4`` (with ``steps``, also a job
    step like ``123.0`` or ``123_4.0``, or a batch script's line ``123.batch``)."""
    if len(ids) > max_ids:
        raise SpecError(field, f"{len(ids)} ids given; at most {max_ids} per request")
    for i, job_id in enumerate(ids):
        head, dot, step = job_id.partition(".")
        if (
            steps
            and dot
            and is_job_id(head)
            and (step == "batch" or (step.isascii() and step.isdigit() and len(step) < 10))
        ):
            continue
        if not is_job_id(job_id):
            like = "123, 123_4 or a step 123.0, 123.batch" if steps else "123 or 123_4"
            raise SpecError(f"{field}[{i}]", f"{job_id[:40]!r} is not a job id like {like}")


def is_job_id(text: str) -> bool:
    """``text`` is a job id like ``123`` or ``123_4`` (ASCII digits, at most 18 and 9 of them,
    so it fits the database's 64-bit integers)."""
    return _JOB_ID.fullmatch(text) is not None


def check_page_token(field: str, token: str) -> None:
    """Empty, or a job listing's ``next_page_token``: up to 18 digits."""
    if token and not _PAGE_TOKEN.fullmatch(token):
        raise SpecError(field, "must be a token from an earlier answer (up to 18 digits)")


def check_node_name(field: str, value: str) -> None:
    """A node name as agents register: 1 to 253 letters, digits and ``. _ -``, starting
    alphanumeric (so never a path like ``../x``)."""
    if not NODE_NAME.fullmatch(value):
        raise SpecError(
            field,
            f"{value[:80]!r} is not a node name: use 1 to 253 letters, digits and . _ - "
            "(starting alphanumeric)",
        )


def check_labels(field: str, labels: Mapping[str, str]) -> None:
    """At most ``MAX_LABELS`` labels; keys like ``rack`` or ``lab.example/ib`` (letters,
    digits, ``. _ / -``, starting alphanumeric), values up to ``MAX_LABEL`` characters."""
    if len(labels) > MAX_LABELS:
        raise SpecError(field, f"{len(labels)} labels; at most {MAX_LABELS} are allowed")
    for key, value in labels.items():
        if not LABEL_KEY.fullmatch(key):
            raise SpecError(
                f"{field} key",
                f"{key[:80]!r}: use 1 to 253 letters, digits and . _ / - (starting alphanumeric)",
            )
        check_text(f"{field}.{key}", value, MAX_LABEL)


def check_host_id(field: str, value: int) -> None:
    """A uid or gid: 0 to 2**32-1."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_HOST_ID:
        raise SpecError(field, f"must be a uid/gid from 0 to {MAX_HOST_ID}, got {value!r}")


def normal_name(value: str) -> str:
    """A name as it is checked and stored: without surrounding white space."""
    return value.strip()


def normal_names(values: Iterable[str]) -> tuple[str, ...]:
    """Names as they are checked and stored: each stripped, empty ones dropped, each once."""
    return tuple(dict.fromkeys(v for v in (normal_name(x) for x in values) if v))


def normal_flags(values: Iterable[str]) -> tuple[str, ...]:
    """Flags as they are checked and stored: each stripped and upper-cased, empty ones
    dropped, each once, in order. Every check of a flag uses this value, never the raw one."""
    return tuple(dict.fromkeys(v for v in (x.strip().upper() for x in values) if v))


def check_message(msg: Any, prefix: str = "") -> None:
    """The shape of a protobuf request (any message; walked through its descriptor): strings within their field's limit and free of control
    characters (tabs and newlines allowed in commands and environment values), finite floats,
    repeated fields and maps of at most ``MAX_LIST`` entries, nested messages likewise."""
    for fd, value in msg.ListFields():
        where = f"{prefix}{fd.name}"
        if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
            if len(value) > MAX_LIST:
                raise SpecError(where, f"at most {MAX_LIST} entries are allowed")
            value_fd = fd.message_type.fields_by_name["value"]
            for key, item in value.items():
                _check_scalar(f"{where} key", key, fd.name, key=True)
                if value_fd.message_type is not None:
                    check_message(item, f"{where}.{key}.")
                else:
                    _check_scalar(f"{where}.{key}", item, fd.name)
            continue
        items = list(value) if _repeated(fd) else [value]
        if len(items) > MAX_LIST:
            raise SpecError(where, f"at most {MAX_LIST} entries are allowed")
        for i, item in enumerate(items):
            label = f"{where}[{i}]" if _repeated(fd) else where
            if fd.message_type is not None:
                check_message(item, f"{label}.")
            else:
                _check_scalar(label, item, fd.name)


def _repeated(fd: Any) -> bool:
    return bool(fd.is_repeated)


def _check_scalar(where: str, value: Any, name: str, key: bool = False) -> None:
    if isinstance(value, str):
        limit = MAX_STRING if key else _FIELD_LIMITS.get(name, MAX_STRING)
        check_text(where, value, limit, multiline=not key and name in ("command", "env"))
    elif isinstance(value, float) and not math.isfinite(value):
        raise SpecError(where, f"must be a finite number, got {value!r}")
