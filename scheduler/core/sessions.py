"""Interactive sessions (grun, gattach, rota forward/proxy) as the core sees them: the job a
session enters once ``authz`` allows it, the job's state while a session waits for it, and
the record of who entered a job (a job event and an audit entry)."""

from __future__ import annotations

from collections.abc import Callable

from rota.scheduler.cluster.model import HistoryKind, JobRecord
from rota.scheduler.cluster.users import AuditEntry, Principal
from rota.scheduler.core import authz
from rota.scheduler.core.errors import NotFound, UserError
from rota.scheduler.core.lifecycle import Lifecycle
from rota.scheduler.core.lookup import JobLookup
from rota.scheduler.core.model import ClusterModel
from rota.scheduler.core.users import UsersService


class SessionService:
    """Core-thread steps of interactive sessions."""

    def __init__(
        self,
        model: ClusterModel,
        lookup: JobLookup,
        lifecycle: Lifecycle,
        users: UsersService,
        clock: Callable[[], float],
    ) -> None:
        self.model = model
        self.lookup = lookup
        self.lifecycle = lifecycle
        self.users = users
        self.clock = clock

    def target(self, display_id: str, who: Principal, kind: str) -> JobRecord:
        """The job (a copy) ``who`` opens a ``kind`` session in: AccessDenied unless its owner
        or an admin, UserError when grun's session is asked of a job grun did not start."""
        jobs = self.lookup.resolve(display_id)
        if len(jobs) != 1:
            if not jobs:
                raise NotFound(f"job {display_id} does not exist")
            raise UserError(f"id: {display_id} is an array job; name one task like {display_id}_0")
        job = jobs[0]
        authz.require(f"job.{kind}", who, job)
        if kind == "attach" and not job.spec.interactive:
            raise UserError(
                f"job_id: job {display_id} is a batch job, not a grun session; gattach "
                f"{display_id} opens a shell in it"
            )
        return job

    def current(self, job: JobRecord) -> JobRecord:
        """The job's record now (a copy): live in the model, else as stored."""
        live = self.model.jobs.get(job.id)
        if live is not None:
            return self.lookup.copy(live)
        found = self.lookup.resolve(job.display_id)
        return found[0] if found else job

    def entered(self, job: JobRecord, who: Principal, kind: str, node: str, peer: str) -> None:
        """Record that ``who`` opened a ``kind`` session in ``job`` on ``node``: an event in
        the job's history and an entry in the audit log."""
        what = {"exec": "gattach", "forward": "port forward", "attach": "grun attach"}[kind]
        text = f"{what} by {who.user} on {node}"
        event = self.lifecycle.note(job, HistoryKind.INFO, text)
        self.model.commit([], [event])
        self.users.record(
            AuditEntry(
                time=self.clock(),
                user=who.user,
                action=f"Interact/{kind}",
                target=f"id={job.display_id} node={node}",
                peer=peer,
                detail=text,
            )
        )
