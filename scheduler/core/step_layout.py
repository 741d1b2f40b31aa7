"""Where a step's tasks run (pure): srun's options over the job's task layout.

As SLURM's srun inside an allocation: without options a step has the job's tasks on all its
nodes; ``-N`` takes the first nodes of the allocation; ``-n`` alone uses as few nodes as the
job's tasks per node allow; tasks are spread in blocks (ranks in order, node by node, the
first nodes taking one more when they do not divide evenly); ``-w`` names the nodes (with ``-N``
larger than the list, the allocation's first other nodes are added). A task with
``--gpus-per-task``
owns that many of its node's GPUs, in order; without it every task sees all its node's GPUs.
"""

from __future__ import annotations

from dataclasses import dataclass

from rota.hostlist import compress, expand
from rota.messages import StepLayout, StepTask
from rota.scheduler.cluster.model import JobRecord, NodeAlloc
from rota.scheduler.core.errors import UserError
from rota.validate import MAX_TASKS_PER_NODE, tasks_per_node


@dataclass(frozen=True, slots=True)
class NodeTasks:
    """The tasks of a step on one node (``node_id``: its rank among the step's nodes)."""

    node: str
    node_id: int
    tasks: tuple[StepTask, ...]


@dataclass(frozen=True, slots=True)
class StepPlan:
    """A step's tasks, node by node."""

    nodes: tuple[NodeTasks, ...]

    @property
    def ntasks(self) -> int:
        return sum(len(n.tasks) for n in self.nodes)

    @property
    def tasks_per_node(self) -> str:
        """SLURM's form: ``2(x3)`` or ``3,2``."""
        return counts_text([len(n.tasks) for n in self.nodes])


def spread(ntasks: int, nodes: int) -> list[int]:
    """Tasks per node in blocks: the first nodes take one more when they do not divide."""
    base, extra = divmod(ntasks, nodes)
    return [base + (1 if i < extra else 0) for i in range(nodes)]


def counts_text(counts: list[int]) -> str:
    """Tasks per node as SLURM writes them: ``2(x3)``, ``3,2``."""
    parts: list[str] = []
    i = 0
    while i < len(counts):
        j = i
        while j < len(counts) and counts[j] == counts[i]:
            j += 1
        parts.append(f"{counts[i]}(x{j - i})" if j - i > 1 else str(counts[i]))
        i = j
    return ",".join(parts)


def plan(job: JobRecord, layout: StepLayout) -> StepPlan:
    """The step's tasks; UserError (srun's message) when the allocation cannot hold them."""
    spec = job.spec
    pool = _pool(job.allocation, layout)
    have = len(pool)
    whole = len(job.allocation)
    job_per_node = tasks_per_node(whole, spec.ntasks, spec.ntasks_per_node)
    if layout.nodes > have:
        raise UserError(f"-N {layout.nodes}: the job has {have} node(s)")
    if layout.ntasks_per_node:
        nodes = layout.nodes or (
            -(-layout.ntasks // layout.ntasks_per_node) if layout.ntasks else have
        )
        ntasks = layout.ntasks or nodes * layout.ntasks_per_node
    elif layout.ntasks:
        ntasks = layout.ntasks
        nodes = layout.nodes or min(have, -(-ntasks // job_per_node))
    else:
        nodes = layout.nodes or have
        ntasks = (spec.ntasks or whole * job_per_node) if nodes == whole else nodes * job_per_node
    if nodes > have:
        raise UserError(f"{ntasks} tasks need {nodes} nodes; the job has {have}")
    if ntasks < nodes:
        raise UserError(f"-n {ntasks}: fewer tasks than the {nodes} nodes of the step")
    counts = spread(ntasks, nodes)
    if counts[0] > MAX_TASKS_PER_NODE:
        raise UserError(f"at most {MAX_TASKS_PER_NODE} tasks per node")
    gpus_each = layout.gpus_per_task or spec.gpus_per_task
    out: list[NodeTasks] = []
    rank = 0
    for node_id, alloc in enumerate(pool[:nodes]):
        count = counts[node_id]
        if gpus_each and gpus_each * count > len(alloc.gpus):
            raise UserError(
                f"--gpus-per-task={gpus_each} with {count} task(s) on node {alloc.node} needs "
                f"{gpus_each * count} GPU(s); the job holds {len(alloc.gpus)} there"
            )
        tasks = tuple(
            StepTask(
                rank + local,
                local,
                alloc.gpus[local * gpus_each : (local + 1) * gpus_each]
                if gpus_each
                else alloc.gpus,
            )
            for local in range(count)
        )
        out.append(NodeTasks(alloc.node, node_id, tasks))
        rank += count
    return StepPlan(tuple(out))


def _pool(allocation: list[NodeAlloc], layout: StepLayout) -> list[NodeAlloc]:
    """The nodes a step may use, in the allocation's order: all of them, or those ``-w``
    lists (and, for a larger ``-N``, the first others)."""
    if not layout.nodelist:
        return allocation
    try:
        wanted = set(expand(layout.nodelist))
    except ValueError as exc:
        raise UserError(f"-w {layout.nodelist}: {exc}") from None
    names = [a.node for a in allocation]
    missing = sorted(wanted - set(names))
    if missing:
        raise UserError(
            f"-w {layout.nodelist}: {compress(missing)} not among the job's nodes "
            f"({compress(names)})"
        )
    if layout.nodes and layout.nodes < len(wanted):
        raise UserError(
            f"-w {layout.nodelist} names {len(wanted)} nodes but -N asks {layout.nodes}"
        )
    listed = [a for a in allocation if a.node in wanted]
    others = [a for a in allocation if a.node not in wanted]
    extra = {a.node for a in others[: max(0, layout.nodes - len(listed))]}
    return [a for a in allocation if a.node in wanted or a.node in extra]
