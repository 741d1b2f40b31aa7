"""Discrete-event trace simulator that runs the real policy (no sleeping).

``main(argv)`` is ``rota simulate``; ``simulate`` runs one trace through one policy.
"""

from rota.scheduler.sim.cli import main
from rota.scheduler.sim.engine import SimResult, simulate

__all__ = ["SimResult", "main", "simulate"]
