"""The CLI's own settings: ``config.yaml`` in the rota config directory, and the environment."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from rota.paths import config_file
from rota.plainyaml import flat_mapping


class ConfigError(ValueError):
    """The config file cannot be read; the message names the file."""


def cli_config() -> dict[str, Any]:
    """The config file's mapping ({} when there is none)."""
    path = config_file()
    if not path.exists():
        return {}
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {' '.join(str(exc).split())}") from None
    flat = flat_mapping(text)  # a file of `key: value` lines needs no yaml
    if flat is not None:
        return flat
    import yaml  # only for another file: it costs every command ~10 ms

    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: cannot read: {' '.join(str(exc).split())}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of settings")
    return data


def default_image(environ: Mapping[str, str] | None = None) -> str:
    """The image of batch scripts without ``#ROTA image=``: ``ROTA_DEFAULT_IMAGE``, else
    ``default_image:`` in the config file, else none ("")."""
    env = os.environ if environ is None else environ
    return env.get("ROTA_DEFAULT_IMAGE") or str(cli_config().get("default_image") or "")
