"""What /proc says about a process: CPU time and resident memory (stdlib only, so the floor
server can use it without loading more than grpc)."""

from __future__ import annotations

import os
import resource

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of ``pid`` (all its threads), from /proc/PID/stat."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime (fields 14, 15)


def rss_bytes(pid: int) -> int:
    """Resident set size of ``pid``, from VmRSS in /proc/PID/status."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def raise_open_files_limit() -> None:
    """One connection per simulated node needs a file descriptor on each side."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
