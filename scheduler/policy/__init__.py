"""Pure scheduling policy: ``decide(snapshot) -> Plan``.

No database, gRPC, Docker, wall clock or unseeded randomness here; the daemon and the simulator
run the same code. ``POLICIES`` maps a policy name (config ``policy:``) to its decide function.
Policies keep caches between passes (queue order, cluster state; see docs/policy.md): they
save work and never change a plan.
"""

from __future__ import annotations

from collections.abc import Callable

from rota.scheduler.policy import fifo, first_fit, multifactor, sjf_oracle
from rota.scheduler.policy.snapshot import Plan, Snapshot

Decide = Callable[[Snapshot], Plan]

POLICIES: dict[str, Decide] = {
    "rota": multifactor.decide,
    "fifo": fifo.decide_fifo,
    "fifo-backfill": fifo.decide_fifo_backfill,
    "sjf-oracle": sjf_oracle.decide,
    "first-fit": first_fit.decide,
}
DEFAULT_POLICY = "rota"


def clear_caches() -> None:
    """Empty the caches policies keep between passes (plans do not depend on them; a cold
    pass only takes longer). For benchmarks and tests."""
    with multifactor._LOCK:
        multifactor._CACHE.clear()
        multifactor._STATE.clear()
    with fifo._LOCK:
        fifo._ORDER.clear()
        for cache in fifo._STATE.values():
            cache.clear()
    with sjf_oracle._LOCK:
        sjf_oracle._ORDER.clear()
        sjf_oracle._STATE.clear()


def get_policy(name: str) -> Decide:
    """The decide function for ``name``; ValueError lists the known names."""
    try:
        return POLICIES[name]
    except KeyError:
        raise ValueError(f"unknown policy {name!r}; known: {', '.join(sorted(POLICIES))}") from None
