"""Why no registered node could ever hold a job: the first resource none can hold, with the
largest node's figure for it (for the submit-time refusal).

Checked in this order: the node list and exclusions (``nodelist``, ``exclude``: names not
registered, too few nodes left), then, each against every node left on its own: labels
(``node_selector``), features (``constraint``), ``resources.gpu_type``,
``resources.gpu_memory``, ``resources.gpus``, ``resources.cpus``, ``resources.memory``; then
all of them at once, then ``nodes`` (how many nodes hold it all; for a ``[a|b]`` constraint,
how many that share one alternative; for counts, ``[a*2&b*1]``, whether they can meet them).
A node whose CPUs or memory are unknown (0) is taken to have enough, as ``fit.node_matches``
does.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rota.constraint import node_features
from rota.hostlist import compress
from rota.scheduler.policy.fit import gpu_ok, named_ok, node_matches, same_alternative
from rota.scheduler.policy.snapshot import NodeView, PendingJob
from rota.units import format_size


def _size(num_bytes: int) -> str:
    return f"{format_size(num_bytes)}B"


def _cpus(value: float) -> str:
    return f"{value:g}"


def _named(job: PendingJob, nodes: Sequence[NodeView]) -> str | None:
    """Why the job's node list or exclusions leave too few registered nodes, if they do."""
    if not job.nodelist and not job.exclude:
        return None
    left = sum(named_ok(job, n.name) for n in nodes)
    if left >= job.nodes:
        return None
    field = "nodelist" if job.nodelist else "exclude"
    what = "the listed nodes less the excluded ones" if job.nodelist else "the nodes not excluded"
    return f"{field}: the job needs {job.nodes} node(s), but {what} are {left}"


def _missing(job: PendingJob, nodes: Sequence[NodeView]) -> str | None:
    """The listed node names that are not registered, if any."""
    missing = job.nodelist - {n.name for n in nodes}
    if not missing:
        return None
    names = compress(sorted(missing))
    return f"nodelist: {names} {'is' if len(missing) == 1 else 'are'} not registered"


def _labels(job: PendingJob, nodes: Sequence[NodeView]) -> str | None:
    for key, value in sorted(job.node_selector.items()):
        if any(n.labels.get(key) == value for n in nodes):
            continue
        seen = sorted({n.labels[key] for n in nodes if key in n.labels})
        here = f"values of {key} here: {', '.join(seen)}" if seen else f"no node has {key}"
        return f"node_selector: no node has the label {key}={value} ({here})"
    return None


def _features(job: PendingJob, nodes: Sequence[NodeView]) -> str | None:
    """Why no node has the job's features (``constraint``), if none has."""
    if job.constraint is None or any(job.constraint.satisfied_by(n.features) for n in nodes):
        return None
    return (
        f"constraint: no registered node has the features {job.constraint.text} ({_known(nodes)})"
    )


def _known(nodes: Sequence[NodeView]) -> str:
    here = sorted(set().union(*(node_features(n.labels) for n in nodes)))
    return f"features here: {', '.join(here)}" if here else "no node has features"


def _self(node: NodeView) -> NodeView:
    return node


def _gpus(job: PendingJob, nodes: Sequence[NodeView]) -> str | None:
    if not job.gpus and not job.gpu_type and not job.gpu_memory:
        return None
    every = [g for n in nodes for g in n.gpus]
    names = sorted({g.name for g in every})
    typed = [g for g in every if not job.gpu_type or job.gpu_type.lower() in g.name.lower()]
    if job.gpu_type and not typed:
        here = f"types here: {', '.join(names)}" if names else "no node has GPUs"
        return f"resources.gpu_type: no node has {job.gpu_type} GPUs ({here})"
    if job.gpu_memory and typed and not any(g.memory_total >= job.gpu_memory for g in typed):
        kind = f" {job.gpu_type}" if job.gpu_type else ""
        top = max(g.memory_total for g in typed)
        return (
            f"resources.gpu_memory: {_size(job.gpu_memory)} per GPU, but the largest{kind} "
            f"GPU has {_size(top)}"
        )
    most, biggest = max(
        (sum(gpu_ok(job, g.name, g.memory_total) for g in n.gpus), n.name) for n in nodes
    )
    if most < job.gpus:
        kind = f" {job.gpu_type}" if job.gpu_type else ""
        big = f" of at least {_size(job.gpu_memory)}" if job.gpu_memory else ""
        return (
            f"resources.gpus: {job.gpus}{kind} GPU(s){big} per node, but the largest node, "
            f"{biggest}, has {most}"
        )
    return None


def _totals(job: PendingJob, nodes: Sequence[NodeView]) -> str | None:
    if job.cpus and all(n.cpus and n.cpus < job.cpus for n in nodes):
        cpus, name = max((n.cpus, n.name) for n in nodes)
        return (
            f"resources.cpus: {_cpus(job.cpus)} per node, but the largest node, {name}, "
            f"has {_cpus(cpus)}"
        )
    if job.memory and all(n.memory and n.memory < job.memory for n in nodes):
        memory, name = max((n.memory, n.name) for n in nodes)
        return (
            f"resources.memory: {_size(job.memory)} per node, but the largest node, {name}, "
            f"has {_size(memory)}"
        )
    return None


def _asked(job: PendingJob) -> str:
    parts = [f"{job.gpus} GPU(s)" + (f" of type {job.gpu_type}" if job.gpu_type else "")]
    if job.cpus:
        parts.append(f"{_cpus(job.cpus)} CPUs")
    if job.memory:
        parts.append(f"{_size(job.memory)} memory")
    if job.node_selector:
        parts.append("labels " + ",".join(f"{k}={v}" for k, v in sorted(job.node_selector.items())))
    if job.constraint is not None:
        parts.append(f"features {job.constraint.text}")
    return ", ".join(parts)


def never_fits(job: PendingJob, every: Iterable[NodeView]) -> str | None:
    """Why no ``job.nodes`` of ``every`` registered node (whatever its state) could ever hold
    ``job`` (field first), or None when enough could. Reads nodes only until enough match,
    unless the job lists nodes (every name listed must be registered, as with sbatch -w)."""
    nodes: list[NodeView] = []
    fit: list[NodeView] = []
    if job.nodelist:
        every = list(every)
        missing = _missing(job, every)
        if missing is not None:
            return missing
    counted = job.constraint is not None and bool(job.constraint.counts)
    alike = counted or (job.nodes > 1 and job.constraint is not None and job.constraint.matching)
    for node in every:
        nodes.append(node)
        if node_matches(job, node):
            fit.append(node)
            if len(fit) >= job.nodes and not alike:
                return None
    if alike and same_alternative(job, fit, _self) is not None:
        return None
    capable = len(fit)
    if not nodes:
        return "no node is registered yet, so nothing could ever run this job"
    named = _named(job, nodes)
    if named is not None:
        return named
    if job.nodelist or job.exclude:
        nodes = [n for n in nodes if named_ok(job, n.name)]
    alone = _labels(job, nodes) or _features(job, nodes) or _gpus(job, nodes) or _totals(job, nodes)
    if alone is not None:
        return alone
    if counted and capable >= job.nodes and job.constraint is not None:
        return (
            f"constraint: {job.constraint.text}: no {job.nodes} registered nodes that could "
            f"hold it meet its counts ({_known(nodes)})"
        )
    if alike and capable >= job.nodes and job.constraint is not None:
        return (
            f"constraint: {job.constraint.text}: no {job.nodes} registered nodes that could "
            f"hold it share one alternative of its [...] group ({_known(nodes)})"
        )
    if not capable:
        return f"resources: no node has all of {_asked(job)} at once (each alone fits some node)"
    return f"nodes: {job.nodes} nodes with {_asked(job)} each, but only {capable} node(s) have that"
