"""The routes ``gsub`` and ``gqueue`` take instead of gRPC, so that they start without importing
it (docs/web.md, "Routes for the commands"):

- ``POST /api/v1/jobs``: ``SubmitJobs``. The body is ``{"items": [{"client_request_id",
  "source", "spec"}], "test_only"}`` (``spec`` as ``rota.wire.spec_fields`` writes it); the
  answer ``{"jobs": [{"client_request_id", "job_ids", "duplicate", "reason", "warnings"}]}``.
- ``GET /api/v1/queue``: ``ListJobs``, every page. Query ``ids``, ``users``, ``accounts`` and
  ``states`` (comma-separated; states by name or code), ``all_states=1`` and
  ``with_priority=1``, ``with_steps=1``; the answer ``{"jobs": [...]}``, the objects of
  ``gqueue --json`` (with ``priority`` when asked, as gqueue adds it for ``%p``/``%Q``), and
  with ``with_steps`` ``"steps": [...]``, the listed jobs' running srun steps (``gqueue -s``).

Both call the same engine methods as the servicers with the caller of the bearer token (the
``Api``'s guard, ``as_rpc``), so the same checks, permissions and refusals apply: a refused
spec is 400 with the message that names the field, as gRPC's INVALID_ARGUMENT carries it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from typing import Any

from rota.scheduler.cluster.model import JobRecord
from rota.scheduler.core.errors import UserError
from rota.scheduler.core.job_steps import RunningStep
from rota.scheduler.core.jobs import JobListing, SubmitItem
from rota.scheduler.core.mail import submission_warnings
from rota.scheduler.engine import Engine
from rota.scheduler.http import Request, Response, Route
from rota.scheduler.web import views
from rota.scheduler.web.api import API_HEADERS, JSON, Api, Caller, reply
from rota.scheduler.web.spec_json import spec_from_json
from rota.states import JobState, parse_state

INLINE_JOBS = 50  # listings up to this many jobs are encoded on the event loop


class CommandRoutes:
    """The commands' routes, behind ``api``'s guard."""

    def __init__(self, engine: Engine, api: Api) -> None:
        self.engine = engine
        self.api = api

    def routes(self) -> list[Route]:
        return [
            self.api.route("POST", "/api/v1/jobs", self.submit, as_rpc=True),
            self.api.route("GET", "/api/v1/queue", self.queue, as_rpc=True),
        ]

    async def submit(self, request: Request, caller: Caller) -> Response:
        body = _object(request.body)
        raw = body.get("items")
        if not isinstance(raw, list):
            raise UserError("items: must be a list of {client_request_id, source, spec}")
        test_only = body.get("test_only", False)
        if not isinstance(test_only, bool):
            raise UserError("test_only: must be true or false")
        try:
            items = [_item(i, item) for i, item in enumerate(raw)]
            results = await self.engine.jobs.submit(items, caller.who, test_only)
        except ValueError as exc:  # SpecError: every door's check of the specs, as gRPC says it
            raise UserError(str(exc)) from None
        warned = submission_warnings(results, items, self.engine.services.config.mail_relay)
        answers = [
            dataclasses.asdict(r) | {"warnings": w} for r, w in zip(results, warned, strict=True)
        ]
        return reply({"jobs": answers})

    async def queue(self, request: Request, caller: Caller) -> Response:
        query = request.query
        listing = JobListing(
            states=tuple(_state(s) for s in _list(query, "states")),
            all_states=query.get("all_states", "") in ("1", "true"),
            ids=_list(query, "ids"),
            users=_list(query, "users"),
            accounts=_list(query, "accounts"),
            with_priority=query.get("with_priority", "") in ("1", "true"),
            with_steps=query.get("with_steps", "") in ("1", "true"),
        )
        page = await self.engine.jobs.list_jobs(listing, caller.who)
        jobs, steps = list(page.jobs), list(page.steps)
        while page.next_page_token:
            listing = dataclasses.replace(listing, page_token=page.next_page_token)
            page = await self.engine.jobs.list_jobs(listing, caller.who)
            jobs.extend(page.jobs)
            steps.extend(page.steps)

        def encode() -> bytes:
            shown: dict[str, Any] = {"jobs": [_listed(j, listing.with_priority) for j in jobs]}
            if listing.with_steps:
                shown["steps"] = [_step(s) for s in steps]
            return views.encode(shown)

        # a long queue is encoded off the loop, as the servicer converts its pages
        body = encode() if len(jobs) <= INLINE_JOBS else await asyncio.to_thread(encode)
        return Response(200, body, JSON, API_HEADERS)


def _listed(job: JobRecord, with_priority: bool) -> dict[str, Any]:
    """The job object; ``with_priority``: with ``priority`` (a pending job's, else null)."""
    shown = views.job_json(job)
    if with_priority:
        shown["priority"] = (job.priority or 0.0) if job.state is JobState.PENDING else None
    return shown


def _step(step: RunningStep) -> dict[str, Any]:
    """A running step as ``gqueue -s --json`` prints it."""
    job_id = step.id.rpartition(".")[0]
    return {
        "id": step.id,
        "job_id": job_id,
        "name": step.name,
        "nodelist": step.nodelist,
        "ntasks": step.ntasks,
        "start_time": step.start,
    }


def _object(body: bytes) -> dict[str, Any]:
    try:
        data = json.loads(body or b"{}")
    except (ValueError, RecursionError):  # RecursionError: nested too deep
        data = None
    if not isinstance(data, dict):
        raise UserError("body: must be a JSON object")
    return data


def _item(index: int, item: object) -> SubmitItem:
    """One submitted item; its spec's fields are named as ``check_items`` names them."""
    if not isinstance(item, dict):
        raise UserError(f"items[{index}]: must be a JSON object")
    request_id, source = item.get("client_request_id", ""), item.get("source", "")
    for name, value in (("client_request_id", request_id), ("source", source)):
        if not isinstance(value, str):
            raise UserError(f"items[{index}].{name}: must be a string")
    where = f"{source}: " if source else f"items[{index}].spec."
    return SubmitItem(spec_from_json(item.get("spec"), where), request_id, source)


def _list(query: dict[str, str], name: str) -> tuple[str, ...]:
    return tuple(p.strip() for p in query.get(name, "").split(",") if p.strip())


def _state(text: str) -> JobState:
    try:
        return parse_state(text)
    except ValueError as exc:
        raise UserError(f"states: {exc}") from None
