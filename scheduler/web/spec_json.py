"""A job spec sent as JSON (``POST /api/v1/jobs``): the object ``rota.wire.spec_fields`` makes,
read back as protobuf would read ``rota.v1.JobSpec``.

Only the shape is checked here, as protobuf's decoder checks it for gRPC: every field has its
wire type (a string, a whole number, a number, true/false, a list of strings, a string-to-string
mapping, the ``resources`` object, ``mounts`` objects), a missing field is its zero value and an
unknown one is ignored. The engine then checks the values, whichever door the spec came through
(``core.submission.check_items``). The expected types are those of ``spec_fields`` itself, so a
field added to the wire form is read here without a change.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

from rota.inputs import SpecError
from rota.jobspec import JobSpec
from rota.wire import spec_fields, spec_from_message

WIDEST = (-(2**63), 2**64)  # the whole numbers some protobuf integer field can hold
_MOUNT = {"source": "", "target": "", "read_only": False}


def spec_from_json(data: object, where: str) -> JobSpec:
    """The JobSpec of a JSON object; SpecError naming ``where`` + the field (``resources.gpus``)
    when a value has the wrong type."""
    template = spec_fields(JobSpec(image="", command=()))
    fields = _message(data, template, where, "")
    fields["mounts"] = [
        SimpleNamespace(**_message(m, _MOUNT, where, f"mounts[{i}]."))
        for i, m in enumerate(fields["mounts"])
    ]
    return spec_from_message(SimpleNamespace(**fields))


def _message(data: object, template: Mapping[str, Any], where: str, prefix: str) -> dict[str, Any]:
    """The fields of ``template`` read from ``data`` (a JSON object), each of the template's type
    (zero when missing); nested objects become namespaces."""
    if not isinstance(data, dict):
        raise SpecError(f"{where}{prefix}".rstrip(".: "), "must be a JSON object")
    out: dict[str, Any] = {}
    for key, zero in template.items():
        field = f"{where}{prefix}{key}"
        value = data.get(key)
        if value is None:
            out[key] = _zero(zero)
        elif isinstance(zero, dict) and zero:  # a message (resources); {} is a map
            out[key] = SimpleNamespace(**_message(value, zero, where, f"{prefix}{key}."))
        else:
            out[key] = _typed(field, value, zero)
    return out


def _zero(template: Any) -> Any:
    if isinstance(template, dict) and template:
        return SimpleNamespace(**{k: _zero(v) for k, v in template.items()})
    return type(template)()


def _typed(field: str, value: object, zero: Any) -> Any:
    """``value`` when it has the type of ``zero`` (a whole number is a number too)."""
    if isinstance(zero, bool):
        if isinstance(value, bool):
            return value
        raise SpecError(field, "must be true or false")
    if isinstance(zero, int):
        if (
            isinstance(value, int)
            and not isinstance(value, bool)
            and WIDEST[0] <= value < WIDEST[1]
        ):
            return value
        raise SpecError(field, "must be a whole number (64 bits)")
    if isinstance(zero, float):
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        raise SpecError(field, "must be a number")
    if isinstance(zero, str):
        if isinstance(value, str):
            return value
        raise SpecError(field, "must be a string")
    if isinstance(zero, dict):
        if isinstance(value, dict) and all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()
        ):
            return value
        raise SpecError(field, "must be a mapping of strings to strings")
    strings = isinstance(value, list) and all(isinstance(v, str) for v in value)
    if strings or (isinstance(value, list) and field.endswith("mounts")):  # mounts: objects
        return value
    raise SpecError(field, "must be a list of strings")
