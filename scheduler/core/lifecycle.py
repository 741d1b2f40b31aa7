"""Job life-cycle transitions and the orders they produce, shared by every service.

Transitions change the job record they are given, which is a new record the caller built
(``dataclasses.replace`` of the model's), and return the event to commit; the caller commits it
(``ClusterModel.commit``: written, then swapped into the model, then fed to the usage book)
before the orders go out.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from rota.messages import AgentOrder, KillOrder, LaunchOrder
from rota.scheduler.cluster.model import REVOKED_HOLD, HistoryKind, JobEvent, JobRecord
from rota.scheduler.config import SchedulerConfig
from rota.scheduler.core.model import ClusterModel
from rota.scheduler.core.slurm_env import slurm_job_env, slurm_node_env
from rota.scheduler.policy import reasons
from rota.states import JobState

Orders = list[tuple[str, AgentOrder]]
LAUNCH_PREFIX = "launch ordered on "  # event reason of a launch; the node list follows
KEEP_PREEMPTIONS = 8  # preemption times kept per job (the hourly budget reads them)


def script_once(job: JobRecord) -> bool:
    """A batch script on several nodes runs once, on the first; the others host its steps."""
    return job.spec.slurm_env and len(job.allocation) > 1


class Lifecycle:
    """State changes of new records of jobs in ``model`` (never the model's own records)."""

    def __init__(
        self,
        model: ClusterModel,
        config: SchedulerConfig,
        clock: Callable[[], float],
        ids_of: Callable[[str], tuple[int, int] | None],
    ) -> None:
        """``ids_of``: the (uid, gid) an admin set for a user (``gadmin user --uid --gid``)."""
        self.model = model
        self.config = config
        self.clock = clock
        self.ids_of = ids_of

    def transition(self, job: JobRecord, new: JobState, why: str) -> JobEvent:
        old = job.state
        job.state = new
        now = self.clock()
        return JobEvent(job.id, now, job.attempt, old.value, new.value, why)

    def note(self, job: JobRecord, kind: HistoryKind, text: str) -> JobEvent:
        """An event that changes no state."""
        return JobEvent(
            job.id, self.clock(), job.attempt, job.state.value, job.state.value, text, kind
        )

    def hold_revoked(self, job: JobRecord) -> JobEvent:
        """Hold pending ``job`` because its user is revoked (reason UserRevoked); the event to
        commit. It stays held when the user is re-enabled, until released or cancelled."""
        job.held = REVOKED_HOLD
        job.reason = reasons.USER_REVOKED
        return self.note(job, HistoryKind.INFO, f"held: user {job.user} was revoked")

    def warn(self, job: JobRecord, text: str) -> JobEvent:
        """A warning event; the job shows it until its attempt ends or another replaces it."""
        job.warning = text
        return self.note(job, HistoryKind.WARNING, text)

    def finish(self, job: JobRecord, final: JobState, why: str) -> JobEvent:
        """End ``job`` in state ``final``; it leaves the model once committed."""
        ev = self.transition(job, final, why)
        job.reason = why
        job.end_time = self.clock()
        job.stop_state = ""
        return ev

    def stop(self, job: JobRecord, final: JobState, why: str) -> tuple[JobEvent, Orders]:
        """Order a configuring or running job stopped: COMPLETING now, ``final`` once the
        agents confirm."""
        ev = self.transition(job, JobState.COMPLETING, why)
        job.stop_state = final.value
        return ev, self.kill_orders(job, why)

    def attempt_ended(
        self, job: JobRecord, final: JobState, why: str, orders: Orders
    ) -> list[JobEvent]:
        """End the current attempt: requeue NODE_FAIL/PREEMPTED when allowed, and PENDING (a
        requeue that was ordered) always; otherwise finish the job. A job whose cancel was
        ordered ends CANCELLED however its attempt ended."""
        if job.stop_state == JobState.CANCELLED.value and final is not JobState.CANCELLED:
            final, why = JobState.CANCELLED, job.reason or why
        self._attain(job, final)
        if final is JobState.PENDING:
            return [self.requeue(job, why)]
        if final in (JobState.NODE_FAIL, JobState.PREEMPTED):
            allowed = final is JobState.PREEMPTED or (
                job.spec.requeue and job.attempt <= self.config.max_requeue
            )
            if allowed:
                ev = self.transition(job, final, why)
                return [ev, self.requeue(job, f"requeued after {final.value}: {why}")]
        if len(job.allocation) > 1:
            orders.extend(self.kill_orders(job, why))
        return [self.finish(job, final, why)]

    def _attain(self, job: JobRecord, final: JobState) -> None:
        """Add the ending attempt's GPU-seconds to the job's attained service (kept across
        requeues), and the time of a preemption."""
        now = self.clock()
        if job.start_time is not None:
            gpus = sum(len(a.gpus) for a in job.allocation)
            job.attained += gpus * max(0.0, now - job.start_time)
        if final is JobState.PREEMPTED:
            job.preempted_at = (*job.preempted_at, now)[-KEEP_PREEMPTIONS:]

    def preempt_orders(self, job: JobRecord, why: str) -> Orders:
        """Kill orders that warn first: the job's ``signal`` (else SIGTERM)
        ``preemption_grace`` seconds before the stop."""
        name = job.spec.signal.partition("@")[0] if job.spec.signal else "TERM"
        warn = self.config.preemption_grace
        grace = self.config.kill_grace
        return [
            (a.node, KillOrder(job.id, job.attempt, why, grace, name, warn)) for a in job.allocation
        ]

    def requeue(self, job: JobRecord, why: str) -> JobEvent:
        ev = self.transition(job, JobState.PENDING, why)
        job.allocation = []
        job.ranks_ended = ()
        job.stop_state = ""
        job.start_time = None
        job.reason = ""
        return ev

    def kill_orders(self, job: JobRecord, why: str) -> Orders:
        return [
            (a.node, KillOrder(job.id, job.attempt, why, self.config.kill_grace))
            for a in job.allocation
        ]

    def launch_orders(self, job: JobRecord) -> Orders:
        nodes = job.node_names
        env = {
            "ROTA_JOB_ID": job.display_id,
            "ROTA_ATTEMPT": str(job.attempt),
            "ROTA_JOB_NAME": job.name,
            "ROTA_USER": job.user,
            "ROTA_ACCOUNT": job.account,
            "ROTA_NODELIST": ",".join(nodes),
        }
        if job.array_job_id is not None:
            env["ROTA_ARRAY_JOB_ID"] = str(job.array_job_id)
            env["ROTA_ARRAY_TASK_ID"] = str(job.array_task_id)
        gang = len(job.allocation) > 1
        if gang:
            master = self.model.nodes[nodes[0]].address or nodes[0]
            env.update(
                MASTER_ADDR=master,
                MASTER_PORT=str(job.allocation[0].port or self.master_port(job.id)),
                WORLD_SIZE=str(len(nodes)),
                ROTA_NNODES=str(len(nodes)),
                ROTA_GPUS_PER_NODE=str(job.spec.gpus),
            )
        if job.spec.slurm_env:
            env.update(slurm_job_env(job))
        ids = self.ids_of(job.user)
        uid, gid = ids if ids is not None else (None, None)
        spec = job.spec
        if not spec.memory and self.config.default_memory:  # a limit, not counted as a request
            spec = dataclasses.replace(spec, memory=self.config.default_memory)
        if not spec.open_mode:  # SLURM's JobFileAppend, read when the attempt starts
            mode = "append" if self.config.job_file_append else "truncate"
            spec = dataclasses.replace(spec, open_mode=mode)
        orders: Orders = []
        for rank, alloc in enumerate(job.allocation):
            node_env = dict(env)
            node_env["ROTA_GPU_UUIDS"] = ",".join(alloc.uuids)
            node_env["ROTA_GPU_INDICES"] = ",".join(str(i) for i in alloc.gpus)
            if gang:
                node_env["NODE_RANK"] = str(rank)
            if job.spec.slurm_env:
                node_env.update(slurm_node_env(rank, alloc))
            orders.append(
                (
                    alloc.node,
                    LaunchOrder(
                        job_id=job.id,
                        attempt=job.attempt,
                        display_id=job.display_id,
                        spec=spec,
                        gpu_indices=alloc.gpus,
                        gpu_uuids=alloc.uuids,
                        env=node_env,
                        time_limit=job.time_limit,
                        host_network=gang,
                        user=job.user,
                        uid=uid,
                        gid=gid,
                        steps_only=rank > 0 and script_once(job),
                    ),
                )
            )
        return orders

    def master_port(self, job_id: int, node: str = "", placed: Sequence[JobRecord] = ()) -> int:
        """A gang's MASTER_PORT: from its id, moved on past the ports of other live gangs
        whose first node is ``node`` (while the range has one free); ``placed``: jobs placed
        but not yet committed and swapped into the model."""
        low, high = self.config.master_port_range
        span = high - low + 1
        if not node:
            return low + job_id % span
        taken = {
            j.allocation[0].port or low + j.id % span
            for j in [*self.model.jobs.values(), *placed]
            if j.id != job_id and len(j.allocation) > 1 and j.allocation[0].node == node
        }
        for step in range(span):
            port = low + (job_id + step) % span
            if port not in taken:
                return port
        return low + job_id % span
