"""What a job's page may do to the job: ``POST /api/v1/jobs/{id}/{action}`` with ``cancel``,
``hold``, ``release`` or ``requeue``, through the engine exactly as ``gcancel`` and ``gcontrol``
do: the same rights (the owner or an admin; an admin's hold is released by an admin), the same
refusals (403) and results."""

from __future__ import annotations

from rota.scheduler.core.errors import Conflict
from rota.scheduler.engine import Engine
from rota.scheduler.http import Request, Response, Route
from rota.scheduler.web.api import Api, ApiError, Caller, reply

JOB_ACTIONS = ("cancel", "hold", "release", "requeue")


class JobActions:
    """``POST /api/v1/jobs/{id}/{action}``."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def routes(self, api: Api) -> list[Route]:
        """The route, behind ``api``'s caller and CSRF checks."""
        return [api.route("POST", "/api/v1/jobs/{id}/{action}", self.act)]

    async def act(self, request: Request, caller: Caller) -> Response:
        """Act on one job (or every task of an array): ``{"results": [{"id", "ok",
        "message"}]}``; 404 for an unknown action, 409 when nothing could be done."""
        action, display_id = request.params["action"], request.params["id"]
        if action not in JOB_ACTIONS:
            raise ApiError(404, f"action: {action!r} is not one of {', '.join(JOB_ACTIONS)}")
        if action == "cancel":
            results = await self.engine.jobs.cancel([display_id], caller.who, "")
        else:
            results = await self.engine.jobs.control(action, [display_id], caller.who)
        if not any(r.ok for r in results):
            raise Conflict("; ".join(r.message for r in results if r.message) or "nothing to do")
        return reply({"results": [{"id": r.id, "ok": r.ok, "message": r.message} for r in results]})
