"""gsub's name for the batch-script reader, which lives in ``rota.sbatch`` (shared: the
scheduler reads with it the scripts ``sbatch`` sends from inside a job)."""

from rota.sbatch import BatchJob, ScriptError, dump_job, is_batch_script, translate, wrap_script

__all__ = ["BatchJob", "ScriptError", "dump_job", "is_batch_script", "translate", "wrap_script"]
