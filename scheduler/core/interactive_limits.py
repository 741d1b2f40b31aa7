"""The per-user limits of interactive sessions (grun): at most ``interactive_max_sessions``
live sessions and ``interactive_max_gpus`` GPUs in them (0: no limit). Checked when a session
is submitted, against the user's live sessions (pending or running), so a refusal comes at
once, naming the limit, instead of a session that waits for ever."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rota.jobspec import JobSpec
from rota.scheduler.cluster.model import JobRecord


def gpus_of(spec: JobSpec) -> int:
    return spec.gpus * max(spec.nodes, 1)


def interactive_refusal(
    new: Sequence[JobSpec],
    user: str,
    live: Iterable[JobRecord],
    max_sessions: int,
    max_gpus: int,
) -> str:
    """ "" when ``user`` may start the interactive ones of ``new`` beside their ``live`` jobs,
    else why not (the field and the limit)."""
    sessions = [s for s in new if s.interactive]
    if not sessions:
        return ""
    if any(s.array for s in sessions):
        return "array: an interactive session is one job, not an array"
    mine = [j.spec for j in live if j.user == user and j.spec.interactive]
    count = len(mine) + len(sessions)
    if max_sessions and count > max_sessions:
        return (
            f"interactive: {user} would have {count} interactive sessions; the limit is "
            f"{max_sessions} (scheduler setting interactive_max_sessions)"
        )
    gpus = sum(gpus_of(s) for s in mine) + sum(gpus_of(s) for s in sessions)
    if max_gpus and gpus > max_gpus:
        return (
            f"resources.gpus: {user} would have {gpus} GPUs in interactive sessions; the "
            f"limit is {max_gpus} (scheduler setting interactive_max_gpus)"
        )
    return ""
