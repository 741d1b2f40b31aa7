"""``gacct -o/--format``: sacct's field names (``JobID,JobName%30,State,Elapsed``) picking
gacct's columns, in the order given."""

from __future__ import annotations

# sacct's field names (any case) and gacct's own headers, each naming one of gacct's columns
FIELDS = {
    "jobid": "JOBID",
    "jobidraw": "JOBID",
    "jobname": "NAME",
    "name": "NAME",
    "user": "USER",
    "account": "ACCOUNT",
    "state": "STATE",
    "exitcode": "EXIT",
    "exit": "EXIT",
    "submit": "SUBMIT",
    "start": "START",
    "end": "END",
    "elapsed": "ELAPSED",
    "gpus": "GPUS",
    "gpu_hours": "GPU_HOURS",
    "gpu_util": "GPU_UTIL",
    "gpu_mem_peak": "GPU_MEM_PEAK",
    "nodelist": "NODES",
    "nodes": "NODES",
    "reservation": "RESERVATION",
}
SHOWN = "JobID JobName User Account State ExitCode Submit Start End Elapsed NodeList "
SHOWN += "Reservation GPUS GPU_HOURS GPU_UTIL GPU_MEM_PEAK"


def columns(text: str) -> list[str]:
    """gacct's headers named by a sacct ``--format`` value (a ``%WIDTH`` suffix is accepted
    and left to the table); ValueError naming an unknown field and the known ones."""
    out = []
    for field in (f.strip() for f in text.split(",")):
        if not field:
            continue
        name = field.partition("%")[0].lower()
        if name not in FIELDS:
            raise ValueError(f"--format: {field!r} is not a field gacct shows; fields: {SHOWN}")
        out.append(FIELDS[name])
    if not out:
        raise ValueError(f"--format: no field named; fields: {SHOWN}")
    return out
