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

from rota.paths import DEFAULT_ADDRESS, config_file
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
    """The scheduler address and where it came from (shown when it cannot be reached)."""

    address: str
    source: str


def resolve_target(flag: str | None) -> Target:
    """``--scheduler``, else ``ROTA_SCHEDULER``, else the config file's ``scheduler:``, else the
    default loopback address."""
    if flag:
        return Target(flag, "--scheduler")
    env = os.environ.get("ROTA_SCHEDULER")
    if env:
        return Target(env, "ROTA_SCHEDULER")
    path = config_file()
    if path.exists():
        import yaml  # only when there is a config file: it costs every command ~20 ms

        try:
            data = yaml.safe_load(path.read_text()) or {}
        except yaml.YAMLError as exc:
            raise CliError(f"{path}: invalid YAML: {exc}", 2) from None
        if isinstance(data, dict) and data.get("scheduler"):
            return Target(str(data["scheduler"]), str(path))
    return Target(DEFAULT_ADDRESS, "the default")


class Client:
    """Stubs over one channel; every call maps gRPC errors to CliError."""

    def __init__(self, target: Target) -> None:
        self.target = target
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


@contextmanager
def connect(flag: str | None) -> Iterator[Client]:
    client = Client(resolve_target(flag))
    try:
        yield client
    finally:
        client.close()
