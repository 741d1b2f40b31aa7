"""Pure scheduling policy: ``make_policy(name, config)`` -> a ``Policy`` that decides passes.

No database, gRPC, Docker, wall clock or unseeded randomness here; the daemon and the simulator
build their policy with the same factory and run the same code. A policy keeps caches between
passes (queue order, cluster state; see docs/policy.md) that save work and never change a
plan; they belong to the instance, and nothing here is shared between instances.
"""

from __future__ import annotations

from collections.abc import Callable

from rota.scheduler.policy.base import Policy
from rota.scheduler.policy.config import PolicyConfig
from rota.scheduler.policy.fifo import EasyPolicy, FifoBackfillPolicy, FifoPolicy
from rota.scheduler.policy.first_fit import FirstFitPolicy
from rota.scheduler.policy.las import LasPolicy
from rota.scheduler.policy.multifactor import RotaPolicy
from rota.scheduler.policy.reserve import ReservationGate
from rota.scheduler.policy.sjf_oracle import SjfOraclePolicy

POLICIES: dict[str, Callable[[PolicyConfig], Policy]] = {
    "rota": RotaPolicy,
    "fifo": FifoPolicy,
    "fifo-backfill": FifoBackfillPolicy,
    "sjf-oracle": SjfOraclePolicy,
    "first-fit": FirstFitPolicy,
    "easy": EasyPolicy,
    "las": LasPolicy,
}
DEFAULT_POLICY = "rota"

__all__ = ["DEFAULT_POLICY", "POLICIES", "Policy", "make_policy"]


def make_policy(name: str, config: PolicyConfig | None = None) -> Policy:
    """A new policy ``name`` with ``config`` (default: ``PolicyConfig()``) and empty caches,
    gated by the snapshot's reservations (``reserve.ReservationGate``); ValueError lists the
    known names."""
    try:
        build = POLICIES[name]
    except KeyError:
        raise ValueError(f"unknown policy {name!r}; known: {', '.join(sorted(POLICIES))}") from None
    cfg = config if config is not None else PolicyConfig()
    return ReservationGate(build(cfg), lambda: build(cfg))
