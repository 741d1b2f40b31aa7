"""One channel over several schedulers (a leader and its standbys): a call that finds one
unavailable (down, or a standby that answers UNAVAILABLE naming the leader) is made again on the
next, and the one that answered is tried first from then on.

Only calls with one reply fail over; a call whose reply streams (``glogs -f``, a session) goes
to the scheduler that answered last, or the next one after ``skip``. A call that timed out is not made again elsewhere (it may have
been done), but the next call starts at the next scheduler.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import grpc


class FailoverChannel(grpc.Channel):  # type: ignore[misc]
    """``channels``: one per scheduler address, in the order given."""

    def __init__(self, channels: Sequence[grpc.Channel]) -> None:
        self._channels = list(channels)
        self.at = 0  # the scheduler tried first

    def unary_unary(self, method: str, *args: Any, **kwargs: Any) -> _FailoverCall:
        calls = [channel.unary_unary(method, *args, **kwargs) for channel in self._channels]
        return _FailoverCall(self, calls)

    def unary_stream(self, method: str, *args: Any, **kwargs: Any) -> Any:
        calls = [channel.unary_stream(method, *args, **kwargs) for channel in self._channels]
        return lambda *a, **k: calls[self.at](*a, **k)

    def stream_unary(self, method: str, *args: Any, **kwargs: Any) -> Any:
        return self._channels[self.at].stream_unary(method, *args, **kwargs)

    def stream_stream(self, method: str, *args: Any, **kwargs: Any) -> Any:
        calls = [channel.stream_stream(method, *args, **kwargs) for channel in self._channels]
        return lambda *a, **k: calls[self.at](*a, **k)

    def skip(self) -> None:
        """The scheduler tried first lost a stream (streams do not fail over by themselves):
        the next call starts at the next one."""
        self.at = (self.at + 1) % len(self._channels)

    def subscribe(self, callback: Callable[..., None], try_to_connect: bool = False) -> None:
        self._channels[self.at].subscribe(callback, try_to_connect)

    def unsubscribe(self, callback: Callable[..., None]) -> None:
        self._channels[self.at].unsubscribe(callback)

    def close(self) -> None:
        for channel in self._channels:
            channel.close()

    def __enter__(self) -> FailoverChannel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _FailoverCall:
    """One unary method on every scheduler; called like a gRPC multi-callable."""

    def __init__(self, owner: FailoverChannel, calls: list[Any]) -> None:
        self._owner = owner
        self._calls = calls

    def __call__(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        count = len(self._calls)
        order = [(self._owner.at + tried) % count for tried in range(count)]
        for at in order[:-1]:
            try:
                return self._attempt(at, request, *args, **kwargs)
            except grpc.RpcError as exc:
                if _code(exc) is not grpc.StatusCode.UNAVAILABLE:
                    raise
        return self._attempt(order[-1], request, *args, **kwargs)

    def _attempt(self, at: int, request: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            reply = self._calls[at](request, *args, **kwargs)
        except grpc.RpcError as exc:
            if _code(exc) is grpc.StatusCode.DEADLINE_EXCEEDED:
                self._owner.at = (at + 1) % len(self._calls)
            raise
        self._owner.at = at
        return reply


def _code(exc: grpc.RpcError) -> grpc.StatusCode | None:
    return exc.code() if hasattr(exc, "code") else None
