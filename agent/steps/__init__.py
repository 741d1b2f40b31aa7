"""srun job steps on the node: the commands mounted into a job's container (``tools/``), the
job's spool that they talk to the agent through, and the tasks the agent starts with
``docker exec`` in the job's container."""
