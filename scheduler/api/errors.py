"""The one place where domain errors become gRPC status codes.

UserError, SpecError and ValueError -> INVALID_ARGUMENT; NotFound -> NOT_FOUND; AuthError ->
UNAUTHENTICATED; AccessDenied -> PERMISSION_DENIED; AlreadyExists -> ALREADY_EXISTS; Conflict -> FAILED_PRECONDITION. The details
are the error's one-line message, which names the field or the thing at fault. Anything else (a
database that refused a write, a bug) is logged with its traceback and answered INTERNAL with
``INTERNAL_MESSAGE``: the services commit before they change memory, so such a failure changed
nothing the scheduler shows.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any, NoReturn, TypeVar

import grpc

from rota.jobspec import SpecError
from rota.scheduler.core.errors import (
    AccessDenied,
    AlreadyExists,
    AuthError,
    Conflict,
    NotFound,
    UserError,
)

log = logging.getLogger("rota.scheduler")

INTERNAL_MESSAGE = (
    "the scheduler could not complete this request and changed nothing; its log has the cause"
)

T = TypeVar("T")
S = TypeVar("S")
R = TypeVar("R")

_CODES: tuple[tuple[type[Exception], grpc.StatusCode], ...] = (
    (UserError, grpc.StatusCode.INVALID_ARGUMENT),
    (SpecError, grpc.StatusCode.INVALID_ARGUMENT),
    (ValueError, grpc.StatusCode.INVALID_ARGUMENT),
    (NotFound, grpc.StatusCode.NOT_FOUND),
    (AuthError, grpc.StatusCode.UNAUTHENTICATED),
    (AccessDenied, grpc.StatusCode.PERMISSION_DENIED),
    (AlreadyExists, grpc.StatusCode.ALREADY_EXISTS),  # before Conflict, its base class
    (Conflict, grpc.StatusCode.FAILED_PRECONDITION),
)
_DOMAIN_ERRORS = tuple(kind for kind, _ in _CODES)


def status_of(exc: Exception) -> grpc.StatusCode:
    """The status code a domain error maps to (UNKNOWN for anything else)."""
    return next((code for kind, code in _CODES if isinstance(exc, kind)), grpc.StatusCode.UNKNOWN)


async def abort(context: grpc.aio.ServicerContext, exc: Exception) -> NoReturn:
    """End the call with the status of ``exc`` and its message."""
    await context.abort(status_of(exc), str(exc))
    raise AssertionError("unreachable: abort raises")


def unary(
    method: Callable[[S, R, Any], Awaitable[T]],
) -> Callable[[S, R, Any], Awaitable[T]]:
    """Wrap a unary servicer method: domain errors raised while translating or serving the
    request end the call with their status code."""

    @functools.wraps(method)
    async def wrapper(self: S, request: R, context: Any) -> T:
        try:
            return await method(self, request, context)
        except _DOMAIN_ERRORS as exc:
            await abort(context, exc)
        except grpc.aio.AbortError:
            raise  # the method ended the call itself
        except Exception:
            log.exception("%s failed", method.__qualname__)
            await context.abort(grpc.StatusCode.INTERNAL, INTERNAL_MESSAGE)
            raise AssertionError("unreachable: abort raises") from None

    return wrapper


def streaming(
    method: Callable[[S, R, Any], AsyncGenerator[T, None]],
) -> Callable[[S, R, Any], AsyncGenerator[T, None]]:
    """Like ``unary``, for a servicer method that streams its answer; the method's generator
    is closed with the call (its ``finally`` runs at once, not when garbage-collected)."""

    @functools.wraps(method)
    async def wrapper(self: S, request: R, context: Any) -> AsyncGenerator[T, None]:
        stream = method(self, request, context)
        try:
            async for item in stream:
                yield item
        except _DOMAIN_ERRORS as exc:
            await abort(context, exc)
        except grpc.aio.AbortError:
            raise  # the method ended the call itself
        except Exception:
            log.exception("%s failed", method.__qualname__)
            await context.abort(grpc.StatusCode.INTERNAL, INTERNAL_MESSAGE)
        finally:
            await stream.aclose()

    return wrapper
