"""The dashboard's **Start session**: ``POST /api/v1/interactive`` submits an interactive
session as ``grun --pty`` does (a shell, ``/bin/sh``, with a terminal, marked interactive), so
it is queued, limited, fair-shared and placed in reservations like grun's; the page then opens
its terminal once it runs.

The body names the session: ``image`` (required), ``gpus`` (default 0), ``time_limit``,
``reservation``, ``partition``, ``account`` (each optional, in the job file's forms), and
``client_request_id`` (a retry with the same one is not submitted twice). Each field is
checked as a job file's is and then by the engine, as every submission is (400 naming the
field; a limit such as ``interactive_max_sessions`` refuses it with 400 as well).
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any

from rota.jobspec import parse_job_file
from rota.scheduler.core.errors import UserError
from rota.scheduler.core.submission import SubmitItem
from rota.scheduler.engine import Engine
from rota.scheduler.http import Request, Response, Route
from rota.scheduler.web.api import Api, Caller, reply

SHELL = ["/bin/sh"]
OPTIONAL = ("time_limit", "reservation", "partition", "account")


class SessionLauncher:
    """The route."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def routes(self, api: Api) -> list[Route]:
        return [api.route("POST", "/api/v1/interactive", self.start)]

    async def start(self, request: Request, caller: Caller) -> Response:
        """Submit the session: 201 ``{"id": JOB}``."""
        body = _object(request.body)
        request_id = body.get("client_request_id") or os.urandom(16).hex()
        if not isinstance(request_id, str):
            raise UserError("client_request_id: must be a string")
        job: dict[str, Any] = {
            "name": "interactive",
            "image": body.get("image", ""),
            "command": SHELL,
            "resources": {"gpus": body.get("gpus", 0)},
        }
        for key in OPTIONAL:
            if body.get(key) not in (None, ""):
                job[key] = body[key]
        try:
            spec = parse_job_file(job)
            spec = dataclasses.replace(spec, interactive=True, tty=True)
            items = [SubmitItem(spec, request_id, "web")]
            results = await self.engine.jobs.submit(items, caller.who, False)
        except ValueError as exc:  # SpecError names the field
            raise UserError(str(exc)) from None
        return reply({"id": results[0].job_ids[0]}, 201)


def _object(body: bytes) -> dict[str, Any]:
    try:
        data = json.loads(body or b"{}")
    except (ValueError, RecursionError):  # RecursionError: nested too deep
        data = None
    if not isinstance(data, dict):
        raise UserError("body: must be a JSON object")
    return data
