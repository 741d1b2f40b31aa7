"""The dashboard's accounting routes: ``GET /api/v1/accounting/summary`` (GPU-hours per user
and account) and ``GET /api/v1/accounting/efficiency`` (``gacct --efficiency``)."""

from __future__ import annotations

from rota.efficiency import IDLE_BELOW
from rota.scheduler.engine import Engine
from rota.scheduler.http import Request, Response, Route
from rota.scheduler.web import views
from rota.scheduler.web.api import Api, Caller, reply
from rota.scheduler.web.query import query_float, query_period


class Accounting:
    """The accounting routes, behind the API's caller checks."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def routes(self, api: Api) -> list[Route]:
        v1 = "/api/v1/accounting"
        return [
            api.route("GET", f"{v1}/summary", self.summary),
            api.route("GET", f"{v1}/efficiency", self.efficiency),
        ]

    async def summary(self, request: Request, caller: Caller) -> Response:
        """GPU-hours per user and per account of jobs that ended in ``start``..``end``."""
        users, accounts = await self.engine.jobs.usage_summary(
            query_period(request.query), caller.who
        )
        return reply(
            {
                "users": [views.total_json(t) for t in users],
                "accounts": [views.total_json(t) for t in accounts],
            }
        )

    async def efficiency(self, request: Request, caller: Caller) -> Response:
        """Finished jobs of the period whose GPUs stayed mostly idle (below ``idle_below``
        percent) or nearly ran out of memory: ``gacct --efficiency``."""
        idle_below = query_float(request.query, "idle_below", IDLE_BELOW)
        rows = await self.engine.jobs.list_finished(query_period(request.query), caller.who)
        listed = [views.finished_json(r, idle_below) for r in rows]
        return reply({"jobs": [r for r in listed if r["flags"]]})
