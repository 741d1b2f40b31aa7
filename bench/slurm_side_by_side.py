"""Real SLURM beside rota: how each reads the same #SBATCH directives, and how long a 1-GPU
script takes from submission to its first output line.

Needs a throw-away SLURM on 127.0.0.1 (``bench/slurm_local.sh start DIR``, then
``SLURM_CONF=DIR/slurm.conf``); never part of the tests.

    python bench/slurm_side_by_side.py directives     # markdown table: SLURM vs gsub --dry-run
    python bench/slurm_side_by_side.py first-line [N] # also needs Docker: rota vs sbatch

``directives`` submits each case to SLURM held (``sbatch -H``), reads it back with ``scontrol
show job``, cancels it, and compares with the job file ``gsub --dry-run`` prints for the same
script: time limit, nodes, GPUs, CPUs and memory per node, partition, node list, exclusions,
features, mail, exclusivity, requeue and name. A case SLURM refuses shows its error.
``first-line`` times ``sbatch``/``gsub`` of a script whose first line prints /proc/uptime
(CLOCK_BOOTTIME) against that clock read just before the command is spawned (median of N).
"""

from __future__ import annotations

import getpass
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rota.hostlist import expand
from rota.units import parse_duration, parse_size

HOST = os.uname().nodename
USER = getpass.getuser()
# (what the case shows, its #SBATCH lines); {host} is this host, the one node that runs
CASES: list[tuple[str, list[str]]] = [
    ("time in minutes", ["--time=90"]),
    ("time D-HH:MM", ["-t 1-02:03"]),
    ("GPUs per node on 2 nodes", ["-N 2", "--gres=gpu:2"]),
    ("GPUs per job", ["-N 2", "--gpus=4"]),
    ("tasks x GPUs per task", ["--ntasks-per-node=4", "--gpus-per-task=1"]),
    ("tasks x CPUs per task", ["-n 8", "-c 2"]),
    ("memory in MB", ["--mem=32000"]),
    ("memory in G", ["--mem=32G"]),
    ("memory per CPU", ["-c 8", "--mem-per-cpu=6G"]),
    ("memory per GPU", ["--gres=gpu:2", "--mem-per-gpu=10G"]),
    ("CPUs per GPU", ["--gres=gpu:2", "--cpus-per-gpu=4"]),
    ("whole node's memory", ["--mem=0"]),
    ("two partitions", ["-p debug,gpu", "-t 10"]),
    ("node list", ["-w {host}"]),
    ("node list, 2 of 2", ["-N 2", "-w {host},gpu02"]),
    ("node list without -N", ["-w gpu[02-03]"]),
    ("node list wider than -N", ["-N 1", "-w gpu[02-03]"]),
    ("exclude", ["-x gpu[02-03]"]),
    ("features", ["-C a100&ib"]),
    ("features, or", ['-C "a100|h100"']),
    ("features, matching or", ["-N 2", '-C "[rack1|rack2]"']),
    ("mail", ["--mail-type=END,FAIL", "--mail-user=ann@lab.example"]),
    ("mail ALL", ["--mail-type=ALL"]),
    ("exclusive, no requeue", ["--exclusive", "--no-requeue"]),
    ("name", ["-J sweep-7"]),
    ("feature count", ["-N 2", "-C a100*1"]),
    ("features, multiple counts", ["-N 3", '-C "[a100*2&v100*1]"']),
    ("counts and a plain feature", ["-N 2", '-C "rack2&[a100*1&v100*1]"']),
    ("counts over -N", ["-N 1", '-C "[a100*1&v100*1]"']),
    ("counts with an or", ["-N 2", '-C "[a100*1|v100*1]"']),
    ("time H:M:S", ["-t 11:0:0"]),
    ("time MM:SS", ["--time=5:30"]),
    ("no time limit", ["--time=UNLIMITED"]),
    ("memory in T", ["--mem=1T"]),
    ("node count range", ["-N 2-3"]),
    ("tasks per GPU", ["--gres=gpu:2", "--ntasks-per-gpu=1"]),
    ("typed GPUs per node", ["--gpus-per-node=a100:2"]),
    ("exclusive=user", ["--exclusive=user"]),
    ("requeue", ["--requeue"]),
    ("name with spaces", ['-J "8 weak scaling"']),
]
FIELDS = (
    "time",
    "nodes",
    "gpus/node",
    "cpus/node",
    "mem/node",
    "partition",
    "nodelist",
    "exclude",
    "features",
    "mail_type",
    "mail_user",
    "exclusive",
    "requeue",
    "name",
)


def script(lines: list[str]) -> str:
    directives = "".join(f"#SBATCH {line.format(host=HOST)}\n" for line in lines)
    return f"#!/bin/sh\n{directives}true\n"


def _num(text: str) -> int:
    return int(re.split(r"[-:]", text)[0])


def _mib(text: str) -> int:
    return parse_size(text + "i" if text[-1] in "KMGT" else text) // 2**20


def slurm_reads(path: Path, cwd: Path) -> dict[str, Any] | str:
    """The case as SLURM holds it, or SLURM's refusal."""
    done = subprocess.run(
        ["sbatch", "-H", "--parsable", str(path)], capture_output=True, text=True, cwd=cwd
    )
    if done.returncode:
        return "refused: " + done.stderr.strip().removeprefix("sbatch: error: ")
    job_id = done.stdout.strip().split(";")[0]
    shown = subprocess.run(
        ["scontrol", "show", "job", "-o", job_id], capture_output=True, text=True, check=True
    ).stdout
    subprocess.run(["scancel", job_id], check=True)
    f = dict(re.findall(r"(\S+?)=(\S*)", shown))
    f["JobName"] = shown.split(" JobName=", 1)[1].split(" UserId=", 1)[0]  # may hold spaces
    tres = dict(item.split("=", 1) for item in f["TRES"].split(","))
    nodes = int(tres.get("node", _num(f["NumNodes"])))  # NumNodes of a pending job guesses
    tasks = int(f["NumTasks"])
    gpus = 0
    for key, times in (("TresPerNode", 1), ("TresPerJob", 1 / nodes), ("TresPerTask", 0.0)):
        if key in f and "gpu" in f[key]:
            count = int(f[key].rsplit(":", 1)[1].split("=")[-1])
            gpus = int(count * (times or tasks / nodes))
    cpus = max(1, int(f["NumCPUs"]) // nodes)  # a pending -N 2-3 counts its minimum
    if "CpusPerTres" in f:  # --cpus-per-gpu: NumCPUs is the minimum until it is placed
        cpus = int(f["CpusPerTres"].rsplit(":", 1)[1]) * gpus
    mem = None
    if f.get("MinMemoryNode", "0") != "0":
        mem = _mib(f["MinMemoryNode"])
    elif "MinMemoryCPU" in f:
        mem = _mib(f["MinMemoryCPU"]) * cpus
    elif "MemPerTres" in f:
        mem = int(f["MemPerTres"].rsplit(":", 1)[1]) * gpus
    limit = f["TimeLimit"]
    return {
        "time": None if limit == "UNLIMITED" else int(parse_duration(limit)),
        "nodes": nodes,
        "gpus/node": gpus,
        "cpus/node": cpus,
        "mem/node": mem,
        "partition": f["Partition"],
        "nodelist": _hosts(f.get("ReqNodeList", "(null)")),
        "exclude": _hosts(f.get("ExcNodeList", "(null)")),
        "features": None if f.get("Features", "(null)") == "(null)" else f["Features"],
        "mail_type": f.get("MailType") if f.get("MailType") != "NONE" else None,
        "mail_user": f.get("MailUser") if "MailType" in f else None,
        "exclusive": f.get("OverSubscribe") == "NO",
        "requeue": f.get("Requeue") == "1",
        "name": f["JobName"],
    }


def _hosts(text: str) -> str | None:
    return None if text in ("(null)", "") else ",".join(sorted(expand(text)))


def rota_reads(path: Path, cwd: Path) -> tuple[dict[str, Any] | str, list[str]]:
    """The job file gsub --dry-run makes of the case (or its refusal), and its warnings."""
    env = dict(os.environ, ROTA_DEFAULT_IMAGE="busybox", XDG_CONFIG_HOME=str(cwd / "config"))
    done = subprocess.run(
        [sys.executable, "-m", "rota.cli.gsub", "--dry-run", str(path)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
    )
    # each warning names its option: "gsub: warning: FILE: line N: --opt=value: what rota does"
    warnings = [w.split(": ")[4] for w in done.stderr.splitlines() if ": warning: " in w]
    if done.returncode:
        return "refused: " + done.stderr.strip().split(": ", 2)[-1], warnings
    job = yaml.safe_load(done.stdout)
    res = job.get("resources", {})
    nodes = job.get("nodes", 1)
    mem = res.get("memory")
    return {
        "time": int(parse_duration(job["time_limit"])) if "time_limit" in job else None,
        "nodes": nodes,
        "gpus/node": res.get("gpus", 0),
        "cpus/node": int(res.get("cpus", 1)),
        "mem/node": parse_size(mem) // 2**20 if mem else None,
        "partition": job.get("partition"),
        "nodelist": _hosts(job.get("nodelist", "")),
        "exclude": _hosts(job.get("exclude", "")),
        "features": job.get("constraint") or None,
        "mail_type": ",".join(job["mail_type"]) if job.get("mail_type") else None,
        "mail_user": job.get("mail_user") or (None if not job.get("mail_type") else USER),
        "exclusive": bool(job.get("exclusive")),
        "requeue": job.get("requeue", True),
        "name": job.get("name") or "job",  # what the scheduler names a job given none
    }, warnings


def default_partition() -> str:
    """SLURM's default partition (sinfo marks it ``*``)."""
    names = subprocess.run(["sinfo", "-h", "-o", "%P"], capture_output=True, text=True).stdout
    return next(n.rstrip("*") for n in names.split() if n.endswith("*"))


def directives() -> None:
    default = default_partition()
    print("| case | directives | SLURM 22.05 reads | rota differs in | gsub warns |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for title, lines in CASES:
            path = root / "case.sh"
            path.write_text(script(lines))
            slurm = slurm_reads(path, root)
            rota, warnings = rota_reads(path, root)
            if not isinstance(rota, str) and rota["partition"] is None:
                rota["partition"] = default  # the scheduler's default partition
            said = " ".join(f"`{line.format(host='HOST')}`" for line in lines)
            if isinstance(slurm, str) or isinstance(rota, str):
                seen = slurm if isinstance(slurm, str) else _brief(slurm, set(FIELDS))
                differs = rota.replace(f"{path}: ", "") if isinstance(rota, str) else "accepts"
            else:
                wanted = {k for k in FIELDS if slurm[k] != rota[k]}
                seen = _brief(slurm, {k for k in FIELDS if k in wanted or _said(k, slurm)})
                differs = _brief(rota, wanted) or "agrees"
            print(f"| {title} | {said} | {seen} | {differs} | {'; '.join(warnings) or '-'} |")


def _said(key: str, fields: dict[str, Any]) -> bool:
    quiet = {"time": None, "nodes": 1, "gpus/node": 0, "cpus/node": 1, "mem/node": None}
    quiet |= {"partition": "gpu", "exclusive": False, "requeue": True, "name": "case.sh"}
    return fields[key] != quiet.get(key)


def _brief(fields: dict[str, Any], keys: set[str]) -> str:
    return ", ".join(f"{k}={fields[k]}" for k in FIELDS if k in keys).replace(HOST, "HOST")


def first_line(runs: int) -> None:
    from tests.cluster import Cluster, build_test_image

    image = build_test_image()
    body = "#SBATCH --gres=gpu:1\n#ROTA image={image}\ncat /proc/uptime\n"
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        root.chmod(0o755)
        path = root / "first.sh"
        path.write_text("#!/bin/sh\n" + body.format(image=image))
        slurm = [_slurm_first(path, root, i) for i in range(runs + 1)][1:]
        cluster = Cluster(root / "rota")
        cluster.root.mkdir()
        try:
            cluster.start_scheduler()
            cluster.start_agent("bench", gpus=4)
            rota = [_rota_first(cluster, path) for _ in range(runs + 1)][1:]
        finally:
            cluster.stop()

    def fmt(values: list[float]) -> str:
        return (
            f"median {statistics.median(values) * 1000:.0f} ms (min {min(values) * 1000:.0f}, "
            f"max {max(values) * 1000:.0f}, n={len(values)})"
        )

    print(f"SLURM sbatch -> first line: {fmt(slurm)}")
    print(f"rota gsub    -> first line: {fmt(rota)}")


def _slurm_first(path: Path, root: Path, run: int) -> float:
    out = root / f"slurm-{run}.out"
    t0 = time.clock_gettime(time.CLOCK_BOOTTIME)
    subprocess.run(
        ["sbatch", "--parsable", "-o", str(out), str(path)],
        check=True,
        cwd=root,
        stdout=subprocess.DEVNULL,
    )
    while not out.exists() or not out.read_text().strip():
        time.sleep(0.01)
    return float(out.read_text().split()[0]) - t0


def _rota_first(cluster: Any, path: Path) -> float:
    t0 = time.clock_gettime(time.CLOCK_BOOTTIME)
    job_id = cluster.cli("gsub", "--parsable", str(path), check=True).stdout.strip()
    cluster.wait_state(job_id, "COMPLETED", timeout=60)
    return float(cluster.cli("glogs", job_id, check=True).stdout.split()[0]) - t0


if __name__ == "__main__":
    if "SLURM_CONF" not in os.environ:
        sys.exit("set SLURM_CONF (bench/slurm_local.sh start DIR prints it)")
    what = sys.argv[1] if len(sys.argv) > 1 else "directives"
    if what == "first-line":
        first_line(int(sys.argv[2]) if len(sys.argv) > 2 else 10)
    else:
        directives()
