"""rota: a cluster GPU scheduler (scheduler daemon, node agent, SLURM-like commands)."""

__version__ = "0.1.0"
