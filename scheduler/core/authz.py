"""Who may do what: every permission decision of the scheduler, in this one module.

``authorize(action, principal, target)`` decides the actions of ``ACTIONS`` (one table: the
engine asks it for every call a principal makes, whichever edge, gRPC or the web API, made
it); ``require`` raises its refusal as ``AccessDenied`` (PERMISSION_DENIED). The ``may_*``
functions behind the table, and those for what is not a single yes or no (a submission's
fields, a booking's users and flags, what an agent's node token may report), return "" when
allowed, else the reason (one line, naming the job, field or rule). Like SLURM with
PrivateData: everyone sees the queue and the nodes, only the owner or an admin sees a job's
environment, mounts and output, and acts on it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection
from typing import Any

from rota.inputs import normal_flags
from rota.jobspec import JobSpec
from rota.scheduler.cluster.model import RESERVATION_HOLD, REVOKED_HOLD, JobEvent, JobRecord
from rota.scheduler.cluster.reservation import DAILY, IGNORE_JOBS, MAINT, WEEKLY
from rota.scheduler.cluster.users import Principal
from rota.scheduler.core.errors import AccessDenied
from rota.scheduler.policy import reasons
from rota.states import JobState


def owns(principal: Principal, job: JobRecord) -> bool:
    """The owner or an admin: who may see a job's private parts and act on it."""
    return principal.admin or job.user == principal.user


def may_see_private(principal: Principal, job: JobRecord) -> bool:
    """Environment and mounts of ``job`` are shown to its owner and admins only."""
    return owns(principal, job)


def may_act(principal: Principal, job: JobRecord, action: str) -> str:
    """Cancel, hold, release or requeue ``job``. A job held by an admin (``held == "admin"``)
    is released by an admin only."""
    if not owns(principal, job):
        return (
            f"job {job.display_id} belongs to {job.user}; only its owner or an admin may "
            f"{action} it"
        )
    if action == "release" and job.held == "admin" and not principal.admin:
        return f"job {job.display_id} is held by an admin; only an admin may release it"
    return ""


def hold_kind(principal: Principal, job: JobRecord) -> str:
    """What a hold by ``principal`` is: "admin" when an admin holds another user's job (only
    an admin releases it, SLURM's JobHeldAdmin), else "user"."""
    return "admin" if principal.admin and job.user != principal.user else "user"


def hold_reason(held: str) -> str:
    """The pending reason a job held as ``held`` ("user", "admin", a deleted reservation's)
    shows: set by the hold itself and by every pass after it."""
    if held == "admin":
        return reasons.HELD_ADMIN
    if held == RESERVATION_HOLD:
        return reasons.RESERVATION_DELETED
    if held == REVOKED_HOLD:
        return reasons.USER_REVOKED
    return reasons.HELD_USER


def may_read_logs(principal: Principal, job: JobRecord) -> str:
    if owns(principal, job):
        return ""
    return f"job {job.display_id} belongs to {job.user}; only its owner or an admin may read its output"


SESSION_ACTIONS = {
    "attach": "attach to",  # grun's session (the job's own process)
    "exec": "open a shell or run a command in",  # gattach
    "forward": "forward a port of",  # rota forward, rota proxy
}


def may_enter(principal: Principal, job: JobRecord, kind: str) -> str:
    """An interactive session in ``job``'s container (``kind`` of ``SESSION_ACTIONS``): its
    owner or an admin only, as SLURM lets only a job's user (or root) srun into it."""
    if owns(principal, job):
        return ""
    return (
        f"job {job.display_id} belongs to {job.user}; only its owner or an admin may "
        f"{SESSION_ACTIONS[kind]} it"
    )


def may_administer(principal: Principal, what: str) -> str:
    """Nodes, GPUs, partitions, users, tokens and the audit log: admins only."""
    if principal.admin:
        return ""
    return f"{what} is for admins only; {principal.user} is not an admin"


def job_account(principal: Principal, spec: JobSpec) -> str:
    """A job's account: ``account:`` of its file, else the user's default account, else the
    user's name."""
    return spec.account or principal.account


def may_submit(principal: Principal, spec: JobSpec, user_qos: Collection[str]) -> tuple[str, str]:
    """("", "") when a job with this spec (its account already resolved) may be submitted, else
    (field, why). Admins may use any account, priority and QoS; others only their accounts,
    no priority above 0, and a QoS in ``user_qos`` (or none)."""
    if principal.admin:
        return "", ""
    if spec.account not in principal.allowed_accounts:
        return "account", (
            f"{principal.user} is not a member of account {spec.account!r} "
            f"(theirs: {', '.join(principal.allowed_accounts)})"
        )
    if spec.priority > 0:
        return "priority", f"{spec.priority} is above 0; only admins may raise a job's priority"
    if spec.qos and spec.qos not in user_qos:
        allowed = ", ".join(sorted(user_qos)) or "none"
        return (
            "qos",
            f"{spec.qos!r} is not allowed for users (scheduler setting user_qos: {allowed})",
        )
    return "", ""


def private_view(principal: Principal, job: JobRecord) -> JobRecord:
    """``job`` as ``principal`` may see it: another user's job without its command (a batch
    script travels whole in it, with its arguments), environment, mounts, working, submit and
    output directories, submit host and webhook URL (which may hold secrets, private paths and
    tokens), and with its reason only when it is a reason code (``Resources``; a node's words
    for a failure name the job's output files and mounts). As SLURM shows no one else's batch
    script."""
    if may_see_private(principal, job):
        return job
    hidden = dataclasses.replace(
        job.spec,
        command=(),
        env={},
        mounts=(),
        workdir="",
        submit_dir="",
        submit_host="",
        output="",
        error="",
        notify_url="",
    )
    return dataclasses.replace(job, spec=hidden, reason=public_reason(job.reason))


def private_history(principal: Principal, job: JobRecord, events: list[JobEvent]) -> list[JobEvent]:
    """``job``'s events as ``principal`` may see them: another user's with their times, kinds
    and states, their words only when a reason code (``public_reason``): the node's words name
    output files, mounts and webhook hosts, and warnings quote the job's own messages."""
    if may_see_private(principal, job):
        return events
    return [dataclasses.replace(e, reason=public_reason(e.reason)) for e in events]


def public_reason(reason: str) -> str:
    """``reason`` when it is a reason code (letters only, as SLURM spells them), else ""."""
    return reason if reason.isascii() and reason.isalpha() else ""


ADMIN_FLAGS = frozenset({MAINT, IGNORE_JOBS})
"""Reservation flags only admins may set."""

REPEAT_FLAGS = frozenset({DAILY, WEEKLY})
"""Reservation flags users may set when ``reservations.users_may_repeat`` is on."""


def may_book(
    principal: Principal,
    users: Collection[str],
    accounts: Collection[str],
    flags: Collection[str] = (),
    may_repeat: bool = True,
) -> str:
    """Book a reservation for ``users`` and ``accounts``: admins for anyone, others for
    themselves and their allowed accounts only (caps aside: ``core.booking``). The flags that
    reach beyond a booking's own GPUs' free time (MAINT blocks everyone, IGNORE_JOBS books over
    running jobs) are for admins only; DAILY and WEEKLY too unless ``may_repeat`` (the setting
    ``reservations.users_may_repeat``)."""
    if principal.admin:
        return ""
    asked = set(normal_flags(flags))
    reserved = sorted(asked & ADMIN_FLAGS)
    if reserved:
        return f"flags: {', '.join(reserved)} is for admins only; {principal.user} is not an admin"
    repeats = sorted(asked & REPEAT_FLAGS)
    if repeats and not may_repeat:
        return (
            f"flags: {', '.join(repeats)} is for admins only here (setting "
            f"reservations.users_may_repeat is false); {principal.user} is not an admin"
        )
    strangers = [u for u in users if u != principal.user]
    if strangers:
        return (
            f"users: {principal.user} may book only for themselves, not "
            f"{', '.join(strangers)} (admins book for anyone)"
        )
    foreign = [a for a in accounts if a not in principal.allowed_accounts]
    if foreign:
        return (
            f"accounts: {principal.user} may book only for their accounts "
            f"({', '.join(principal.allowed_accounts)}), not {', '.join(foreign)}"
        )
    return ""


def may_change_reservation(principal: Principal, name: str, created_by: str) -> str:
    """Change or delete reservation ``name``: the user who made it, or an admin."""
    if principal.admin or created_by == principal.user:
        return ""
    return (
        f"reservation {name!r} was made by {created_by or 'someone else'}; only they and "
        "admins may change or delete it"
    )


def may_report(node: str, job: JobRecord | None, attempt: int) -> str:
    """A node's token speaks for its node only: "" when ``node`` may report on ``attempt`` of
    ``job``, else why not. Reports on ended or unknown jobs and on earlier attempts are
    harmless (they only get an acknowledgement); a report on the current or a later attempt of
    a live job that does not run on ``node`` is refused."""
    if job is None or job.state.terminal or attempt < job.attempt:
        return ""
    if attempt == job.attempt and node in job.node_names:
        return ""
    return f"node {node} reported on job {job.display_id} attempt {attempt}, which it does not run"


def may_start_step(node: str, job: JobRecord | None, attempt: int) -> str:
    """An srun step is asked for by a node the job's current attempt runs on, and by no
    other: "" when ``node`` may, else why not."""
    if job is None or job.state.terminal:
        return f"node {node} asked for a step of a job that is not running"
    if attempt == job.attempt and node in job.node_names:
        return ""
    return f"node {node} asked for a step of job {job.display_id} attempt {attempt}, which it does not run"


def may_requeue_itself(node: str, job: JobRecord | None, attempt: int) -> str:
    """``scontrol requeue`` inside a job is asked for by a node its current attempt runs (or,
    when the script ended right after asking, ran) on, and by no other: "" when ``node`` may,
    else why not. The job is then requeued as its own user would requeue it."""
    if job is None:
        return f"node {node} asked to requeue a job that does not exist"
    if attempt == job.attempt and node in job.node_names:
        return ""
    return f"node {node} asked to requeue job {job.display_id} attempt {attempt}, which it does not run"


def may_command_from_job(node: str, job: JobRecord | None, attempt: int) -> str:
    """``sbatch`` and ``scancel`` inside a job are relayed by a node its current attempt runs
    on while it runs (CONFIGURING too: the node's report that it started may lag its first
    command), and by no other (a finished or requeued attempt's container can no longer
    ask): "" when ``node`` may, else why not."""
    if job is None:
        return f"node {node} sent a command from a job that does not exist"
    if job.state not in (JobState.CONFIGURING, JobState.RUNNING):
        return f"node {node} sent a command from job {job.display_id}, which is {job.state.value}"
    if attempt == job.attempt and node in job.node_names:
        return ""
    return (
        f"node {node} sent a command from job {job.display_id} attempt {attempt}, which it "
        "does not run"
    )


def job_principal(owner: Principal) -> Principal:
    """Who a command inside a job acts as: the job's owner with their accounts, never with
    admin rights (a container holds no token: an admin's job submits and cancels as any
    user would)."""
    return dataclasses.replace(owner, admin=False)


def may_pick_jobs_of(principal: Principal, user: str) -> str:
    """``scancel -u USER`` inside a job picks among its owner's jobs only, whoever the owner
    is (admins included: a job never acts with admin rights): "" for the owner's own name."""
    if user == principal.user:
        return ""
    return f"{user[:40]!r}: inside a job, scancel acts on {principal.user}'s own jobs only"


def may_wait_for(principal: Principal, job: JobRecord) -> str:
    """``sbatch --wait`` inside a job follows jobs of the job's owner only."""
    if job.user == principal.user:
        return ""
    return f"job {job.display_id} belongs to {job.user}; sbatch --wait follows your own jobs only"


def may_send_data(node: str, asked_of: str) -> str:
    """Data (log output) answers a request made of one node; only that node may answer it."""
    if node == asked_of:
        return ""
    return f"node {node} sent output for a request made of node {asked_of}"


def finished_scope(principal: Principal) -> str:
    """Whose finished jobs and usage ``principal`` sees (``gacct``, the web API): admins
    everyone's (""), others only their own (SLURM's PrivateData for sacct)."""
    return "" if principal.admin else principal.user


def _admins(what: str) -> Callable[[Principal, Any], str]:
    return lambda principal, target: may_administer(principal, what)


def _on_job(action: str) -> Callable[[Principal, Any], str]:
    return lambda principal, job: may_act(principal, job, action)


# action -> rule(principal, target): "" when allowed, else why not
ACTIONS: dict[str, Callable[[Principal, Any], str]] = {
    "nodes.manage": _admins("managing nodes"),
    "gpus.manage": _admins("managing GPUs"),
    "partitions.manage": _admins("managing partitions"),
    "users.manage": _admins("managing users, tokens and the audit log"),
    "job.cancel": _on_job("cancel"),
    "job.hold": _on_job("hold"),
    "job.release": _on_job("release"),
    "job.requeue": _on_job("requeue"),
    "job.read_logs": may_read_logs,
    "job.attach": lambda principal, job: may_enter(principal, job, "attach"),
    "job.exec": lambda principal, job: may_enter(principal, job, "exec"),
    "job.forward": lambda principal, job: may_enter(principal, job, "forward"),
    "reservation.change": lambda principal, r: may_change_reservation(
        principal, r.name, r.created_by
    ),
}


def authorize(action: str, principal: Principal, target: Any = None) -> str:
    """ "" when ``principal`` may do ``action`` (a key of ``ACTIONS``) to ``target`` (a job, a
    reservation, or None), else why not. KeyError for an action not in the table."""
    return ACTIONS[action](principal, target)


def require(action: str, principal: Principal, target: Any = None) -> None:
    """``authorize``, raising its refusal as AccessDenied."""
    why = authorize(action, principal, target)
    if why:
        raise AccessDenied(why)
