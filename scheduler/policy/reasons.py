"""Pending-reason constants, spelled as SLURM spells them (an open, documented set)."""

PRIORITY = "Priority"  # a higher-priority job is ahead and resources are reserved for it
RESOURCES = "Resources"  # the job is next but no node has enough free resources now
DEPENDENCY = "Dependency"
DEPENDENCY_NEVER_SATISFIED = "DependencyNeverSatisfied"
BEGIN_TIME = "BeginTime"
HELD_USER = "JobHeldUser"
HELD_ADMIN = "JobHeldAdmin"
RESERVATION = "Reservation"
QOS_MAX_GRES_PER_USER = "QOSMaxGRESPerUser"
QOS_MAX_GRES_PER_ACCOUNT = "QOSMaxGRESPerAccount"
ARRAY_TASK_LIMIT = "JobArrayTaskLimit"
NODE_DOWN = "NodeDown"  # no node that could ever run the job is up
NONE = "None"
QOS_MAX_SUBMIT_PER_USER = "QOSMaxSubmitJobPerUserLimit"  # beyond the user's pending-job limit
QOS_MAX_SUBMIT_PER_ACCOUNT = "QOSMaxSubmitJobPerAccountLimit"
BAD_CONSTRAINTS = "BadConstraints"  # no registered node could ever run the job
