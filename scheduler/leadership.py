"""A scheduler in a high-availability group (``ha``, PostgreSQL): standing by until it leads,
then keeping the lease.

A standby serves its port with health NOT_SERVING and refuses every other call with
UNAVAILABLE naming the leader's address (clients and agents given several addresses move on to
the next); it asks for the lease every ``lease / 6`` seconds. The leader renews every
``lease / 3`` seconds; when another scheduler took over, or no renewal succeeded for ``lease``
seconds, it is deposed: ``on_deposed`` is called (the daemon exits at once; its writes are
fenced in any case, ``store/lease.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

import grpc

from rota.scheduler.api.standard import add_standard_services
from rota.scheduler.store.lease import Fence, Lease

log = logging.getLogger("rota.scheduler")

UNREFUSED = ("/grpc.health.v1.Health/", "/grpc.reflection.")  # what a standby still answers


class Leadership:
    """``lease``: this scheduler's side of the election; ``on_deposed(why)``: called once, from
    any thread, when this leader is deposed."""

    def __init__(self, lease: Lease, on_deposed: Callable[[str], None]) -> None:
        self.lease = lease
        self._on_deposed = on_deposed
        self._leader = ""  # the leader's address, as a standby last read it
        self._renewing: asyncio.Task[None] | None = None

    async def acquire(
        self,
        bind: Callable[[grpc.aio.Server], int],
        stop: asyncio.Event,
        options: Sequence[tuple[str, int]] = (),
    ) -> bool:
        """Lead, standing by meanwhile on a server made with ``options`` (the leader's caps
        against connection floods) that ``bind`` adds the port to; False when ``stop`` was set
        first."""
        if await asyncio.to_thread(self._take):
            return True
        server = grpc.aio.server(options=list(options))
        await add_standard_services(server)  # every service NOT_SERVING
        server.add_generic_rpc_handlers([_Refusal(lambda: self._leader)])
        bind(server)
        await server.start()
        log.info(
            "standing by: the leader is %s; taking over when its lease (%gs) lapses",
            self._leader or "unknown",
            self.lease.lease,
        )
        try:
            while not stop.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), self.lease.lease / 6)
                if not stop.is_set() and await asyncio.to_thread(self._take):
                    return True
            return False
        finally:
            await server.stop(0)

    def fence(self) -> Fence:
        """The fence of the epoch this scheduler leads at."""
        return self.lease.fence(
            lambda now: self._on_deposed(f"a write was fenced: epoch {now} leads now")
        )

    def start_renewing(self) -> None:
        self._renewing = asyncio.create_task(self._renew())

    async def stop(self) -> None:
        """Stop renewing and close the lease connection (a standby may take over at once)."""
        if self._renewing is not None:
            self._renewing.cancel()
        await asyncio.to_thread(self.lease.close)

    def _take(self) -> bool:
        try:
            if self.lease.take():
                return True
            self._leader = self.lease.leader()[0]
        except Exception as exc:  # the database is away: stand by and ask again
            log.warning("cannot reach the lease in the database: %s", exc)
        return False

    async def _renew(self) -> None:
        renewed = time.monotonic()
        while True:
            await asyncio.sleep(self.lease.lease / 3)
            try:
                if not await asyncio.to_thread(self.lease.renew):
                    self._on_deposed("another scheduler took the lease over")
                    return
                renewed = time.monotonic()
            except Exception as exc:  # the database is away: the lease may lapse
                silent = time.monotonic() - renewed
                log.warning(
                    "cannot renew the lease (%.1fs since the last renewal): %s", silent, exc
                )
                if silent > self.lease.lease:
                    self._on_deposed(f"the lease was not renewed for {silent:.1f}s")
                    return


class _Refusal(grpc.GenericRpcHandler):  # type: ignore[misc]
    """Refuses every call but health and reflection with UNAVAILABLE naming the leader."""

    def __init__(self, leader: Callable[[], str]) -> None:
        self._leader = leader

    def service(self, details: Any) -> grpc.RpcMethodHandler | None:
        if str(details.method).startswith(UNREFUSED):
            return None
        return grpc.stream_stream_rpc_method_handler(self._refuse)

    async def _refuse(self, _requests: Any, context: grpc.aio.ServicerContext) -> None:
        leader = self._leader()
        await context.abort(
            grpc.StatusCode.UNAVAILABLE,
            f"this rota scheduler is a standby; the leader is at {leader}"
            if leader
            else "this rota scheduler is a standby; no scheduler leads yet",
        )
