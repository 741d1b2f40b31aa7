"""Pending-reason constants, spelled as SLURM spells them (an open, documented set)."""

PRIORITY = "Priority"  # a higher-priority job is ahead and resources are reserved for it
RESOURCES = "Resources"  # the job is next but no node has enough free resources now
DEPENDENCY = "Dependency"
DEPENDENCY_NEVER_SATISFIED = "DependencyNeverSatisfied"
BEGIN_TIME = "BeginTime"
HELD_USER = "JobHeldUser"
HELD_ADMIN = "JobHeldAdmin"
RESERVATION = "Reservation"  # the reservation it names has not started yet
RESERVATION_DELETED = "ReservationDeleted"  # the reservation it names was deleted or ended
REQ_NODE_NOT_AVAIL = "ReqNodeNotAvail"  # the GPUs it could use are reserved for others
QOS_MAX_GRES_PER_USER = "QOSMaxGRESPerUser"
QOS_MAX_GRES_PER_ACCOUNT = "QOSMaxGRESPerAccount"
ARRAY_TASK_LIMIT = "JobArrayTaskLimit"
NODE_DOWN = "NodeDown"  # no node that could ever run the job is up
NONE = "None"
QOS_MAX_SUBMIT_PER_USER = "QOSMaxSubmitJobPerUserLimit"  # beyond the user's pending-job limit
QOS_MAX_SUBMIT_PER_ACCOUNT = "QOSMaxSubmitJobPerAccountLimit"
BAD_CONSTRAINTS = "BadConstraints"  # no registered node could ever run the job
USER_REVOKED = "UserRevoked"  # its user was revoked (gadmin user revoke): held, never started

DESCRIPTIONS = {
    PRIORITY: "higher-priority jobs are ahead of it and the free resources are kept for them",
    RESOURCES: "it is next in line, but no node (or set of nodes) has enough free resources",
    DEPENDENCY: "it waits for the jobs named in its dependency",
    DEPENDENCY_NEVER_SATISFIED: "its dependency can no longer be met; cancel it",
    BEGIN_TIME: "its begin time has not come yet",
    HELD_USER: "it is held; `gcontrol release ID` lets it start",
    HELD_ADMIN: "an administrator holds it",
    RESERVATION: "the reservation it names has not started yet",
    RESERVATION_DELETED: (
        "the reservation it names was deleted or has ended; it is held: cancel it, or release "
        "it once a reservation of that name exists again"
    ),
    REQ_NODE_NOT_AVAIL: "the GPUs it could use are reserved for others",
    QOS_MAX_GRES_PER_USER: "starting it would exceed the user's GPU limit (limits.max_gpus_per_user)",
    QOS_MAX_GRES_PER_ACCOUNT: (
        "starting it would exceed the account's GPU limit (limits.max_gpus_per_account)"
    ),
    ARRAY_TASK_LIMIT: "its array already runs as many tasks as its % limit allows",
    NODE_DOWN: "only nodes that are down or draining could run it",
    QOS_MAX_SUBMIT_PER_USER: "the user has more pending jobs than limits.max_pending_per_user",
    QOS_MAX_SUBMIT_PER_ACCOUNT: (
        "the account has more pending jobs than limits.max_pending_per_account"
    ),
    BAD_CONSTRAINTS: "no registered node could ever run it (GPU type, memory, labels or size)",
    USER_REVOKED: (
        "its user was revoked; it is held: cancel it, or release it once the user is re-enabled "
        "(gadmin user token NAME)"
    ),
}


def describe(reason: str) -> str:
    """One sentence about a reason constant (empty for unknown ones)."""
    return DESCRIPTIONS.get(reason, "")
