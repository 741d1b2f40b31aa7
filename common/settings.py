"""Typed settings shared by the scheduler's and the agent's models (pydantic v2).

A settings model subclasses ``Settings`` (unknown keys refused, frozen) and declares each
setting as one annotated line with one of the value types below, for example
``kill_grace: Seconds = 10.0``. ``load_settings`` reads a YAML file (its section named after the
daemon, or the whole file), applies overrides (command-line flags; None means "not given") and
validates; every problem becomes one ``SettingsError`` line that names the setting and what it
accepts.

In settings files a bare number of seconds is a duration (``heartbeat_interval: 0.5``); strings
take the forms of ``rota.units`` (``90s``, ``30m``, ``2h``, ``3d``, ``HH:MM:SS``, ``D-HH:MM``).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, TypeVar

import yaml
from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from rota.units import DURATION_HELP, SIZE_HELP, parse_duration, parse_size


class SettingsError(ValueError):
    """A setting is unknown or invalid; the message is one line naming it."""


class SettingsFileError(SettingsError):
    """The settings file cannot be read or is not a YAML map."""


class Settings(BaseModel):
    """Base of settings models: unknown keys are refused, instances are immutable."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, validate_default=True, allow_inf_nan=False
    )


# ---------------------------------------------------------------- value types


def _not_bool(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError(f"must be a number, got {_show(value)}")
    return value


def _seconds(value: Any) -> Any:
    """Seconds from a number (seconds) or a duration string; negatives are left to ``ge``."""
    _not_bool(value)
    if not isinstance(value, str):
        return value
    text = value.strip()
    try:
        return float(text)  # a bare number is seconds here, not SLURM's minutes
    except ValueError:
        pass
    try:
        return parse_duration(text)
    except ValueError:
        raise ValueError(
            f"must be {DURATION_HELP} (a bare number is seconds), got {_show(value)}"
        ) from None


def _bytes(value: Any) -> Any:
    _not_bool(value)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and value < 0:
        return value  # left to ``ge``
    if not isinstance(value, int | str):
        raise ValueError(f"must be {SIZE_HELP}, got {_show(value)}")
    try:
        return parse_size(value)
    except ValueError:
        raise ValueError(f"must be {SIZE_HELP}, got {_show(value)}") from None


def _names(value: Any) -> Any:
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) and v for v in value):
        raise ValueError(f"must be a list of names, e.g. [low, scavenger], got {_show(value)}")
    return tuple(value)


_LABEL = r"[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?"
_HOSTNAME = re.compile(rf"^(?=.{{1,253}}$){_LABEL}(\.{_LABEL})*\.?$")


def _host(text: str) -> str:
    """``text`` if it is a host name or an IP address (IPv6 in brackets or bare)."""
    bracketed = text.startswith("[") and text.endswith("]")
    try:
        ipaddress.ip_address(text[1:-1] if bracketed else text)
        return text
    except ValueError:
        pass
    if not bracketed and _HOSTNAME.match(text):
        return text
    raise ValueError(f"must be a host name or an IP address, got {_show(text)}")


def _host_port(value: str) -> str:
    host, sep, port = value.rpartition(":")
    problem = f"must be HOST:PORT (e.g. 127.0.0.1:9717, [::]:9717), got {_show(value)}"
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise ValueError(problem)
    if ":" in host and not host.startswith("["):
        raise ValueError(problem)  # an IPv6 address needs brackets here
    try:
        _host(host)
    except ValueError:
        raise ValueError(problem) from None
    return value


def _host_ports(value: str) -> str:
    parts = [one.strip() for one in value.split(",")]
    for one in parts:
        _host_port(one)
    return ",".join(parts)


def _optional_host_port(value: str) -> str:
    return _host_port(value) if value else value


def _address(value: str) -> str:
    return _host(value) if value else value


NonNegativeNumber = Annotated[float, BeforeValidator(_not_bool), Field(ge=0)]
Count = Annotated[int, BeforeValidator(_not_bool), Field(ge=0)]
PositiveNumber = Annotated[float, BeforeValidator(_not_bool), Field(gt=0)]
Fraction = Annotated[float, BeforeValidator(_not_bool), Field(ge=0, le=1)]
Seconds = Annotated[float, BeforeValidator(_seconds), Field(ge=0)]
"""A duration in seconds, >= 0 (0 usually means "off"; say so where it is used)."""
PositiveSeconds = Annotated[float, BeforeValidator(_seconds), Field(gt=0)]
Bytes = Annotated[int, BeforeValidator(_bytes), Field(ge=0)]
Port = Annotated[int, BeforeValidator(_not_bool), Field(ge=1, le=65535)]
HostPort = Annotated[str, AfterValidator(_host_port)]
"""``HOST:PORT``; port 0 lets the system choose (listen addresses)."""
HostPorts = Annotated[str, AfterValidator(_host_ports)]
"""One ``HOST:PORT`` or several, comma-separated (schedulers to fail over between)."""
OptionalHostPort = Annotated[str, AfterValidator(_optional_host_port)]
"""``HOST:PORT``, or empty for "not set"."""
Host = Annotated[str, AfterValidator(_address)]
"""A host name or IP address; empty means "not set"."""
Names = Annotated[tuple[str, ...], BeforeValidator(_names)]


# ---------------------------------------------------------------- loading

M = TypeVar("M", bound=Settings)


def read_section(path: Path, section: str) -> dict[str, Any]:
    """The map under ``section:`` in the YAML file ``path``, or the whole file's map.

    SettingsFileError (one line) when it cannot be read, parsed, or is not a map.
    """
    try:
        raw = yaml.safe_load(path.read_text()) or {}
    except OSError as exc:
        raise SettingsFileError(exc.strerror or str(exc)) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or "not YAML"
        raise SettingsFileError(f"invalid YAML{where}: {problem}") from None
    values = raw.get(section, raw) if isinstance(raw, dict) else raw
    if not isinstance(values, dict):
        raise SettingsFileError(
            f"settings must be a map (under `{section}:` or not), got {_show(values)}"
        )
    return values


def load_settings(model: type[M], section: str, path: Path | None, *layers: Mapping[str, Any]) -> M:
    """``model`` from the file's settings with each layer (environment, flags) on top in turn;
    None values in a layer mean "not given"."""
    values = read_section(path, section) if path is not None else {}
    for layer in layers:
        values.update({k: v for k, v in layer.items() if v is not None})
    return build(model, section, values)


def build(model: type[M], section: str, values: Mapping[str, Any]) -> M:
    """Validate ``values`` into ``model``; SettingsError lists every problem on one line."""
    try:
        return model.model_validate(dict(values))
    except ValidationError as exc:
        unknown: dict[tuple[str, ...], list[str]] = {}
        problems: list[str] = []
        for error in exc.errors():
            loc = tuple(str(part) for part in error["loc"])
            if error["type"] == "extra_forbidden":
                unknown.setdefault(loc[:-1], []).append(repr(loc[-1]))
            else:
                problems.append(describe(error))
        for parent, names in unknown.items():
            what = f"{section} setting" if not parent else f"{'.'.join(parent)} key"
            plural = "s" if len(names) > 1 else ""
            known = ", ".join(_fields_at(model, parent))
            problems.insert(0, f"unknown {what}{plural} {', '.join(names)}; known: {known}")
        raise SettingsError("; ".join(problems)) from None


_PHRASES = {
    "int_type": "must be a number (an integer)",
    "int_parsing": "must be a number (an integer)",
    "int_from_float": "must be a number (an integer)",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "finite_number": "must be a finite number",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "string_type": "must be a string",
    "dict_type": "must be a map",
    "model_type": "must be a map",
    "model_attributes_type": "must be a map",
    "tuple_type": "must be a list",
    "list_type": "must be a list",
    "missing": "is required",
}


def describe(error: Mapping[str, Any]) -> str:
    """One phrase for one pydantic error: ``NAME must be ..., got VALUE``."""
    loc = error["loc"]
    name = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".")
    kind, ctx = error["type"], error.get("ctx") or {}
    if kind == "value_error" and "error" in ctx:  # raised by our validators: "must be ..."
        return f"{name} {ctx['error']}" if loc else str(ctx["error"])
    if kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        ops = {"greater_than": ">", "greater_than_equal": ">=", "less_than": "<"}
        op, bound = ops.get(kind, "<="), next(iter(ctx.values()))
        return f"{name} must be {op} {bound}, got {_show(error['input'])}"
    if kind == "literal_error":
        return f"{name} must be one of {ctx['expected']}, got {_show(error['input'])}"
    if kind in ("too_long", "too_short"):
        return f"{name} must have {ctx.get('max_length', ctx.get('min_length'))} items"
    phrase = _PHRASES.get(kind, error["msg"])
    return f"{name} {phrase}, got {_show(error['input'])}"


def _fields_at(model: type[BaseModel], loc: tuple[str, ...]) -> list[str]:
    """Names of the fields of the (sub)model at ``loc``."""
    for part in loc:
        annotation = model.model_fields[part].annotation
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return []
        model = annotation
    return sorted(model.model_fields)


def _show(value: Any) -> str:
    """A value as users wrote it in YAML, shortened to keep the message one line."""
    if isinstance(value, bool):
        text = str(value).lower()
    else:
        text = " ".join((repr(value) if isinstance(value, str) else str(value)).split())
    return text if len(text) <= 60 else text[:57] + "..."
