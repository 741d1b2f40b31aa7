"""``gqueue -s`` and ``gqueue -j 12.0``: running srun steps, as ``squeue -s`` lists them
(STEPID NAME PARTITION USER TIME NODELIST; a step id is ``JOBID.STEP``, ``12.0``, ``12_3.1``)."""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from rota.cli.errors import CliError

HEADERS = ["STEPID", "NAME", "PARTITION", "USER", "TIME", "NODELIST"]


def show_steps(args: argparse.Namespace) -> int:
    """Print the running steps of the jobs the filters select (``-j``: of these jobs, or
    these steps), a table or ``--json``."""
    if args.format or args.states or args.start:
        raise CliError("-o, -t and --start do not apply to steps (-s, -j JOBID.STEP)", 2)
    wanted = _split(args.jobs)
    step_ids = {i for i in wanted if "." in i}
    for step_id in step_ids:
        job, _, number = step_id.rpartition(".")
        if not job or not number.isdigit():
            raise CliError(f"-j: {step_id!r} is not a step id (JOBID.STEP, e.g. 12.0)", 2)
    whole = {i for i in wanted if "." not in i}
    ids = sorted(whole | {i.rpartition(".")[0] for i in step_ids})
    jobs, steps = _fetch(args, ids, _split(args.user), _split(args.account))
    if wanted:
        steps = [s for s in steps if s["id"] in step_ids or _in_jobs(s["job_id"], whole)]
    if args.json:
        print(json.dumps(steps, indent=2))
        return 0
    from rota.cli.gqueue_letters import PARTITION
    from rota.cli.render import elapsed, table

    by_id = {j["id"]: j for j in jobs}
    now = time.time()
    rows = []
    for step in steps:
        owner = by_id.get(step["job_id"], {})
        rows.append(
            [
                step["id"],
                step["name"],
                owner.get("partition") or PARTITION,
                owner.get("user", ""),
                elapsed(step["start_time"], 0, now),
                step["nodelist"],
            ]
        )
    lines = table(HEADERS, rows, right=["STEPID", "TIME"]).split("\n")
    print("\n".join(lines[1:] if args.noheader else lines))
    return 0


def _in_jobs(job_id: str, whole: set[str]) -> bool:
    """Whether a step's job is one named (``12`` names every task of array 12)."""
    return job_id in whole or job_id.partition("_")[0] in whole


def _fetch(
    args: argparse.Namespace, ids: list[str], users: list[str], accounts: list[str]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(jobs, steps) as ``--json`` objects: over the HTTP API when it answers, else gRPC."""
    from rota.cli.http_client import http_client

    fast = http_client(args.scheduler, args.ca)
    if fast is not None:
        me = fast.whoami() if args.me else ""
        if me is not None:
            listed = fast.steps(ids, [*users, me] if me else users, accounts)
            if listed is not None:
                return listed
    from rota.cli.client import connect, state_of
    from rota.cli.render import job_json

    with connect(args.scheduler, args.ca) as client:
        if args.me:
            users = [*users, client.whoami()]
        jobs, steps = client.list_steps(ids, users, accounts)
    fields = ("id", "job_id", "name", "nodelist", "ntasks", "start_time")
    return (
        [job_json(j, state_of(j)) for j in jobs],
        [{f: getattr(s, f) for f in fields} for s in steps],
    )


def _split(text: str | None) -> list[str]:
    return [t.strip() for t in (text or "").split(",") if t.strip()]
