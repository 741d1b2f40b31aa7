"""gsub's name for the sbatch option reader, which lives in ``rota.sbatch_options`` (shared
with the scheduler, see ``rota.sbatch``)."""

from rota.sbatch_options import (
    ScriptError,
    long_name,
    slurm_begin,
    slurm_export,
    slurm_memory,
    split_options,
    takes_value,
)

__all__ = [
    "ScriptError",
    "long_name",
    "slurm_begin",
    "slurm_export",
    "slurm_memory",
    "split_options",
    "takes_value",
]
