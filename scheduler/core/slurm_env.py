"""SLURM's batch-job variables for one node of a launch (pure), for jobs with ``slurm_env``.

The values have SLURM's types and meaning: ``SLURM_JOB_ID`` is the job's integer row id, also
for an array task (every task has its own; task ids are the array's ``SLURM_ARRAY_JOB_ID`` and
``SLURM_ARRAY_TASK_ID``, and the first task's job id is the array's id, as in SLURM). A
variable SLURM leaves unset (array variables outside arrays, ``SLURM_CPUS_PER_TASK`` without
``--cpus-per-task`` ...) is left unset, never set empty. The task counts are the job's layout
(``ntasks``, ``ntasks_per_node``; one task per node when unset), as srun steps use it; the batch
script runs once, on the first node, as task 0.
"""

from __future__ import annotations

import functools
import itertools
import math

from rota.hostlist import compress
from rota.scheduler.cluster.model import JobRecord, NodeAlloc
from rota.scheduler.core.step_layout import counts_text, spread
from rota.validate import array_size, tasks_per_node

MIB = 1 << 20


def slurm_job_env(job: JobRecord) -> dict[str, str]:
    """The variables every node of ``job``'s launch shares."""
    spec = job.spec
    nnodes = str(len(job.allocation))
    per_node = tasks_per_node(len(job.allocation), spec.ntasks, spec.ntasks_per_node)
    counts = spread(spec.ntasks or per_node * len(job.allocation), len(job.allocation))
    ntasks = str(sum(counts))
    env = {
        "SLURM_JOB_ID": str(job.id),
        "SLURM_JOBID": str(job.id),
        "SLURM_JOB_NAME": job.name,
        "SLURM_JOB_USER": job.user,
        "SLURM_JOB_ACCOUNT": job.account,
        "SLURM_JOB_NODELIST": compress(job.node_names),
        "SLURM_NODELIST": compress(job.node_names),
        "SLURM_JOB_NUM_NODES": nnodes,
        "SLURM_NNODES": nnodes,
        "SLURM_NTASKS": ntasks,
        "SLURM_NPROCS": ntasks,
        "SLURM_NTASKS_PER_NODE": str(per_node),
        "SLURM_TASKS_PER_NODE": counts_text(counts),
        "SLURM_RESTART_COUNT": str(max(job.attempt - 1, 0)),
        "USER": job.user,
        "LOGNAME": job.user,
    }
    if job.array_job_id is not None:
        env["SLURM_ARRAY_JOB_ID"] = str(job.array_job_id)
        env["SLURM_ARRAY_TASK_ID"] = str(job.array_task_id)
        if spec.array:
            count, low, high, step = array_shape(spec.array)
            env["SLURM_ARRAY_TASK_COUNT"] = str(count)
            env["SLURM_ARRAY_TASK_MIN"] = str(low)
            env["SLURM_ARRAY_TASK_MAX"] = str(high)
            env["SLURM_ARRAY_TASK_STEP"] = str(step)
    if spec.submit_dir:
        env["SLURM_SUBMIT_DIR"] = spec.submit_dir
    if spec.submit_host:
        env["SLURM_SUBMIT_HOST"] = spec.submit_host
    if spec.cpus:  # per node, as rota counts them: shared out over the node's tasks
        env["SLURM_CPUS_PER_TASK"] = str(max(1, math.floor(spec.cpus / per_node)))
    if spec.memory:
        env["SLURM_MEM_PER_NODE"] = str(max(spec.memory // MIB, 1))
    if spec.gpus:
        env["SLURM_GPUS_PER_NODE"] = str(spec.gpus)
    if spec.qos:
        env["SLURM_JOB_QOS"] = spec.qos
    if spec.reservation:
        env["SLURM_JOB_RESERVATION"] = spec.reservation
    if job.partition:
        env["SLURM_JOB_PARTITION"] = job.partition  # the one it was placed in
    return env


def slurm_node_env(rank: int, alloc: NodeAlloc) -> dict[str, str]:
    """The variables of the node of rank ``rank`` (the batch step's task on it)."""
    env = {
        "SLURMD_NODENAME": alloc.node,
        "SLURM_NODEID": str(rank),
        "SLURM_PROCID": str(rank),
        "SLURM_LOCALID": "0",
    }
    if alloc.gpus:
        env["SLURM_GPUS_ON_NODE"] = str(len(alloc.gpus))
        env["SLURM_JOB_GPUS"] = ",".join(str(i) for i in alloc.gpus)
    if alloc.cpus:
        env["SLURM_CPUS_ON_NODE"] = str(math.ceil(alloc.cpus))
    return env


@functools.lru_cache(maxsize=256)
def array_shape(text: str) -> tuple[int, int, int, int]:
    """(count, first id, last id, step) of an ``array:`` value, read without expanding it (an
    array may name 10,000 tasks, each launched with these): the step is a single range's, or
    the common difference of a list, else 1."""
    body = text.replace(" ", "").split("%", 1)[0]
    lows: list[int] = []
    highs: list[int] = []
    steps: list[int] = []
    for part in body.split(","):
        span, _, step_text = part.partition(":")
        low_text, _, high_text = span.partition("-")
        low, step = int(low_text), int(step_text or 1)
        high = low + (int(high_text or low) - low) // step * step
        lows.append(low)
        highs.append(high)
        steps.append(step if high > low else 0)
    gaps = {b - a for a, b in itertools.pairwise(lows)}
    if len(lows) == 1:
        step = steps[0] or 1
    elif all(s == 0 for s in steps) and len(gaps) == 1:
        step = gaps.pop()
    else:
        step = 1
    return array_size(text), min(lows), max(highs), max(step, 1)
