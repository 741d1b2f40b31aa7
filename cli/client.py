"""The CLI's connection to the scheduler: where it is, the stubs, and error handling.

This is the only CLI module that imports generated protobuf code. Errors become one line on
stderr and an exit code (CONVENTIONS.md): 1 runtime (unreachable, unknown id), 2 invalid input.
"""

from __future__ import annotations

import getpass
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NoReturn, TypeVar

import grpc
import yaml

from rota.paths import DEFAULT_ADDRESS, config_file
from rota.tls import TLSFileError, channel_credentials
from rota.v1 import rota_pb2_grpc as pb_grpc

T = TypeVar("T")
RPC_TIMEOUT = 30.0


class CliError(Exception):
    """An error to print as one line, with the exit code to use."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def die(message: str, code: int) -> NoReturn:
    prog = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "rota"
    print(f"{prog}: error: {message}", file=sys.stderr)
    raise SystemExit(code)


def run_main(body: Callable[[], int]) -> int:
    """Run a command body, turning CliError and Ctrl-C into one line and an exit code."""
    try:
        return body()
    except CliError as exc:
        die(str(exc), exc.code)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


def current_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return str(os.getuid())


@dataclass(frozen=True)
class Target:
    """The scheduler address and where it came from (shown when it cannot be reached), and
    TLS: the CA that verifies the scheduler ("" = plaintext) and an optional client
    certificate and key for schedulers that require one."""

    address: str
    source: str
    ca: str = ""
    cert: str = ""
    key: str = ""


def _config() -> dict[str, Any]:
    path = config_file()
    if not path.exists():
        return {}
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise CliError(f"{path}: invalid YAML: {exc}", 2) from None
    return data if isinstance(data, dict) else {}


def resolve_target(flag: str | None, ca: str | None = None) -> Target:
    """``--scheduler``, else ``ROTA_SCHEDULER``, else the config file's ``scheduler:``, else the
    default loopback address. TLS likewise: ``--ca``, else ``ROTA_CA``, else ``ca:``; the client
    certificate from ``ROTA_CERT``/``ROTA_KEY``, else ``cert:``/``key:``."""
    config = _config()

    def pick(flag_value: str | None, env: str, key: str) -> str:
        return flag_value or os.environ.get(env) or str(config.get(key) or "")

    tls = {
        "ca": pick(ca, "ROTA_CA", "ca"),
        "cert": pick(None, "ROTA_CERT", "cert"),
        "key": pick(None, "ROTA_KEY", "key"),
    }
    if flag:
        return Target(flag, "--scheduler", **tls)
    env = os.environ.get("ROTA_SCHEDULER")
    if env:
        return Target(env, "ROTA_SCHEDULER", **tls)
    if config.get("scheduler"):
        return Target(str(config["scheduler"]), str(config_file()), **tls)
    return Target(DEFAULT_ADDRESS, "the default", **tls)


class Client:
    """Stubs over one channel; every call maps gRPC errors to CliError."""

    def __init__(self, target: Target) -> None:
        self.target = target
        if target.ca:
            try:
                creds = channel_credentials(target.ca, target.cert, target.key)
            except TLSFileError as exc:
                raise CliError(str(exc), 2) from None
            self.channel = grpc.secure_channel(target.address, creds)
        else:
            self.channel = grpc.insecure_channel(target.address)
        self.jobs = pb_grpc.JobServiceStub(self.channel)
        self.nodes = pb_grpc.NodeServiceStub(self.channel)
        self.admin = pb_grpc.AdminServiceStub(self.channel)
        self.gpus = pb_grpc.GpuServiceStub(self.channel)

    def close(self) -> None:
        self.channel.close()

    def call(self, method: Callable[..., T], request: Any, timeout: float = RPC_TIMEOUT) -> T:
        with self.errors():
            return method(request, timeout=timeout)

    @contextmanager
    def errors(self) -> Iterator[None]:
        try:
            yield
        except grpc.RpcError as exc:
            raise self.translate(exc) from None

    def translate(self, exc: grpc.RpcError) -> CliError:
        code = exc.code() if hasattr(exc, "code") else None
        details = exc.details() if hasattr(exc, "details") else str(exc)
        if code is grpc.StatusCode.UNAVAILABLE and self.target.ca and _tls_failure(details):
            return CliError(
                f"TLS with the rota scheduler at {self.target.address} failed (CA "
                f"{self.target.ca}; a scheduler name not in its certificate, a wrong CA, or a "
                "missing client certificate)",
                1,
            )
        if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
            return CliError(
                f"cannot reach the rota scheduler at {self.target.address} "
                f"(address from {self.target.source}; set --scheduler or ROTA_SCHEDULER): "
                f"{'timed out' if code is grpc.StatusCode.DEADLINE_EXCEEDED else 'unavailable'}",
                1,
            )
        if code is grpc.StatusCode.INVALID_ARGUMENT:
            return CliError(details or "invalid request", 2)
        return CliError(details or str(code), 1)


def _tls_failure(details: str | None) -> bool:
    text = (details or "").lower()
    return any(word in text for word in ("ssl", "handshake", "certificate", "tls"))


@contextmanager
def connect(flag: str | None, ca: str | None = None) -> Iterator[Client]:
    client = Client(resolve_target(flag, ca))
    try:
        yield client
    finally:
        client.close()
