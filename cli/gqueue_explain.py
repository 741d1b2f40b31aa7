"""``gqueue --explain ID``: why a pending job waits (priority breakdown, rank, reason)."""

from __future__ import annotations

import json
from typing import Any


def explain(job_id: str, scheduler: str | None, as_json: bool, ca: str | None = None) -> int:
    """Print the scheduler's explanation of one job; 1 when the job does not exist."""
    from rota.cli.client import connect, state_of

    with connect(scheduler, ca) as client:
        reply = client.explain_job(job_id)
    data = _as_dict(reply, state_of(reply.job).value)
    if as_json:
        print(json.dumps(data, indent=2))
    else:
        print(render(data))
    return 0


def _as_dict(reply: Any, state: str) -> dict[str, Any]:
    from rota.jobview import iso

    job = reply.job
    out: dict[str, Any] = {"id": job.id, "state": state, "pending": reply.pending}
    if not reply.pending:
        out["nodes"] = list(job.nodes)
        return out
    out.update(
        policy=reply.policy,
        priority=reply.priority,
        rank=reply.rank,
        pending_jobs=reply.pending_jobs,
        starts_now=reply.starts_now,
        reason=reply.reason or None,
        reason_detail=reply.reason_detail or None,
        estimated_start=iso(reply.estimated_start),
        order_by=reply.order_by,
        reservation=reply.reservation or None,
        attained=reply.attained.splitlines(),
        factors=[
            {
                "name": f.name,
                "value": f.value,
                "weight": f.weight,
                "contribution": f.contribution,
            }
            for f in reply.factors
        ],
    )
    return out


def render(data: dict[str, Any]) -> str:
    """The readable form: a header, the reason, then the factor table."""
    from rota.cli.render import table

    if not data["pending"]:
        where = f" on {','.join(data['nodes'])}" if data["nodes"] else ""
        return f"job {data['id']} is {data['state']}{where}, not pending: nothing holds it back"
    if data["starts_now"]:
        why = "none: the next scheduling pass starts it"
    else:
        why = data["reason"] or "None"
        if data["reason_detail"]:
            why += f": {data['reason_detail']}"
    lines = [
        f"job {data['id']} is PENDING (policy {data['policy']})",
        f"  reason:          {why}",
        f"  estimated start: {data['estimated_start'] or 'unknown'}",
    ]
    if data.get("reservation"):
        lines.append(f"  reservation:     {data['reservation']}")
    lines += [
        f"  rank:            {data['rank']} of {data['pending_jobs']} pending job(s), "
        f"by {data['order_by']}",
    ]
    if data.get("attained"):
        head, *rest = data["attained"]
        lines.append(f"  attained:        {head}")
        lines.extend(f"                   {line}" for line in rest)
    if not data["factors"]:
        return "\n".join(lines)
    lines.append(f"  priority:        {data['priority']:.1f} = sum of:")
    rows = [
        (f["name"], f"{f['value']:.4f}", f"{f['weight']:g}", f"{f['contribution']:.1f}")
        for f in data["factors"]
    ]
    factors = table(
        ["FACTOR", "VALUE", "WEIGHT", "CONTRIBUTION"],
        rows,
        right=["VALUE", "WEIGHT", "CONTRIBUTION"],
    )
    lines.extend("    " + line for line in factors.splitlines())
    return "\n".join(lines)
