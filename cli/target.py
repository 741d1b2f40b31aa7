"""Which scheduler the CLI talks to and how: the address and TLS files from flags, the
environment or the config file, and the rule that a token never goes in plaintext to another
machine unless the user opted in."""

from __future__ import annotations

import os
import sys
from typing import Any, NamedTuple

from rota.cli.errors import CliError
from rota.paths import DEFAULT_ADDRESS, DEFAULT_HTTP, config_file


class Target(NamedTuple):  # not a dataclass: gqueue starts without importing dataclasses
    """The scheduler address and where it came from (shown when it cannot be reached), and
    TLS: the CA that verifies the scheduler ("" = plaintext) and an optional client
    certificate and key for schedulers that require one. ``http``: the ``HOST:PORT`` of the
    same scheduler's HTTP API, which ``gsub`` and ``gqueue`` use instead of gRPC ("" = none
    known: gRPC only)."""

    address: str
    source: str
    ca: str = ""
    cert: str = ""
    key: str = ""
    insecure: bool = False  # ROTA_INSECURE=1 or ``insecure: true``: a token may go in plaintext
    http: str = ""


def _config() -> dict[str, Any]:
    from rota.plainyaml import flat_mapping

    path = config_file()
    if not path.exists():
        return {}
    text = path.read_text()
    flat = flat_mapping(text)  # a file of `key: value` lines needs no yaml
    if flat is not None:
        return flat
    import yaml  # only for another file: it costs every command ~10-20 ms

    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise CliError(f"{path}: invalid YAML: {exc}", 2) from None
    return data if isinstance(data, dict) else {}


def resolve_target(flag: str | None, ca: str | None = None) -> Target:
    """``--scheduler``, else ``ROTA_SCHEDULER``, else the config file's ``scheduler:``, else the
    default loopback address. TLS likewise: ``--ca``, else ``ROTA_CA``, else ``ca:``; the client
    certificate from ``ROTA_CERT``/``ROTA_KEY``, else ``cert:``/``key:``. The HTTP API's
    address (``http``) comes from no level above the scheduler's: ``ROTA_HTTP`` unless the
    address was a flag, ``http:`` when it came from the file or the default, and the default
    HTTP port when both are the defaults; ``off`` at any level means none."""
    config = _config()

    def pick(flag_value: str | None, env: str, key: str) -> str:
        return flag_value or os.environ.get(env) or str(config.get(key) or "")

    tls: dict[str, Any] = {
        "ca": pick(ca, "ROTA_CA", "ca"),
        "cert": pick(None, "ROTA_CERT", "cert"),
        "key": pick(None, "ROTA_KEY", "key"),
    }
    insecure = os.environ.get("ROTA_INSECURE", "").strip().lower() in ("1", "true", "yes")
    tls["insecure"] = insecure or config.get("insecure") is True
    http = [os.environ.get("ROTA_HTTP", ""), str(config.get("http") or ""), DEFAULT_HTTP]
    if flag:
        return Target(flag, "--scheduler", **tls)
    env = os.environ.get("ROTA_SCHEDULER")
    if env:
        return Target(env, "ROTA_SCHEDULER", **tls, http=_first(http[:1]))
    if config.get("scheduler"):
        return Target(str(config["scheduler"]), str(config_file()), **tls, http=_first(http[:2]))
    return Target(DEFAULT_ADDRESS, "the default", **tls, http=_first(http))


def _first(choices: list[str]) -> str:
    """The first address given ("" when none, or when it is ``off``)."""
    chosen = next((c.strip() for c in choices if c.strip()), "")
    return "" if chosen.lower() == "off" else chosen


def _loopback(address: str) -> bool:
    """Whether every scheduler in ``address`` (``HOST:PORT``, comma-separated, optionally
    ``dns:///``) is this machine (a loopback IP, ``localhost``, or a unix socket), from the
    text alone: nothing is resolved or dialled."""
    from rota.tls import is_loopback  # imports grpc: only when a client is built

    for one in address.split(","):
        one = one.strip()
        if one.startswith(("unix:", "unix-abstract:")):
            continue
        one = one.removeprefix("dns:///").removeprefix("ipv4:").removeprefix("ipv6:")
        if not is_loopback(one if ":" in one else f"{one}:0"):
            return False
    return True


def check_plaintext(target: Target) -> None:
    """Refuse (exit 2) to send a token without TLS to a scheduler that is not on this
    machine, unless the user opted in (``ROTA_INSECURE=1``, ``insecure: true``); then warn."""
    if _loopback(target.address):
        return
    if not target.insecure:
        raise CliError(
            f"refusing to send your rota token without TLS to {target.address} (from "
            f"{target.source}), which is not this machine: anyone on the network could read "
            "it. Give the cluster's CA (--ca, ROTA_CA, or ca: in "
            f"{config_file()}), or set ROTA_INSECURE=1 (insecure: true) to send it anyway",
            2,
        )
    print(
        f"warning: sending your rota token without TLS to {target.address} (ROTA_INSECURE)",
        file=sys.stderr,
    )


def closed_hint(target: Target, details: str | None) -> str:
    """What a connection the scheduler closed at once most likely lacks ("" if not closed):
    gRPC reports a TLS scheduler that a plaintext client, or a client without the certificate
    that ``tls_client_ca`` requires, speaks to only as "Socket closed"."""
    if "socket closed" not in (details or "").lower():
        return ""
    if not target.ca:
        return (
            " (the connection was closed at once: if the scheduler serves TLS, give its CA: "
            "--ca, ROTA_CA or ca: in ~/.config/rota/config.yaml)"
        )
    if not target.cert:
        return (
            " (the connection was closed at once: if the scheduler requires client "
            "certificates, give yours: cert: and key: in ~/.config/rota/config.yaml, or "
            "ROTA_CERT and ROTA_KEY)"
        )
    return ""
