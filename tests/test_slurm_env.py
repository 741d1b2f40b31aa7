"""The environment SLURM scripts read (issue 24): real scheduler, two real agents, real Docker.
Every array task has an integer ``SLURM_JOB_ID`` of its own, the variables scripts read are
set with SLURM's types, and none is set empty that SLURM leaves unset."""

from __future__ import annotations

import json

import grpc
import pytest

from rota.hostlist import expand
from rota.v1 import rota_pb2 as pb
from rota.v1 import rota_pb2_grpc as pb_grpc
from tests.cluster import TEST_IMAGE, Cluster, wait_for
from tests.support.tokens import channel

ARRAY = f"""#!/bin/sh
#SBATCH --job-name=envcheck
#SBATCH --array=0-2
#SBATCH --gres=gpu:1
#SBATCH --cpus-per-task=1
#SBATCH --time=5:00
#ROTA image={TEST_IMAGE}
echo "mod=$((SLURM_JOB_ID % 20000))"
env
"""
GANG = f"""#!/bin/sh
#SBATCH --job-name=gangcheck
#SBATCH --nodes=2 --ntasks-per-node=1 --gpus-per-node=1
#ROTA image={TEST_IMAGE}
srun sh -c 'env | sed "s/^/$SLURM_PROCID:/"'
"""
INTEGERS = (
    "SLURM_JOB_ID",
    "SLURM_JOBID",
    "SLURM_JOB_NUM_NODES",
    "SLURM_NNODES",
    "SLURM_NTASKS",
    "SLURM_NTASKS_PER_NODE",
    "SLURM_NODEID",
    "SLURM_PROCID",
    "SLURM_LOCALID",
    "SLURM_GPUS_ON_NODE",
    "SLURM_RESTART_COUNT",
)
# set by SLURM only when the job asks for them (or, for partitions, has them)
UNSET_HERE = ("SLURM_MEM_PER_NODE", "SLURM_JOB_RESERVATION")


def _env(output: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in output.splitlines() if "=" in line)


def _logs(cluster: Cluster, job_id: str, node: str = "") -> dict[str, str]:
    where = ["--node", node] if node else []
    out = wait_for(
        lambda: cluster.cli("glogs", *where, job_id).stdout, 20, what=f"output of {job_id}"
    )
    return _env(out)


@pytest.mark.docker
def test_array_tasks_see_slurms_variables_with_slurms_types(cluster: Cluster) -> None:
    cluster.start_scheduler()
    cluster.start_agent("n1", gpus=1)
    cluster.start_agent("n2", gpus=1)
    here = cluster.root / "submitted-here"
    here.mkdir()
    script = cluster.write_job("envcheck.sh", ARRAY)
    result = cluster.cli("gsub", "--wait", "--parsable", str(script), cwd=here)
    assert result.returncode == 0, result.stderr
    array_id = result.stdout.strip()
    records = {j["id"]: j for j in cluster.jobs()}
    envs = {task: _logs(cluster, f"{array_id}_{task}") for task in range(3)}

    job_ids = {int(env["SLURM_JOB_ID"]) for env in envs.values()}
    assert len(job_ids) == 3  # an integer id of its own per task
    assert int(envs[0]["SLURM_JOB_ID"]) == int(array_id)  # the first task's id is the array's
    for task, env in envs.items():
        record = records[f"{array_id}_{task}"]
        for name in INTEGERS:
            assert env[name].isdigit(), (name, env.get(name))
        assert env["mod"] == str(int(env["SLURM_JOB_ID"]) % 20000)  # $((SLURM_JOB_ID % N))
        assert env["SLURM_JOBID"] == env["SLURM_JOB_ID"]
        assert env["SLURM_ARRAY_JOB_ID"] == array_id
        assert env["SLURM_ARRAY_TASK_ID"] == str(task)
        assert env["SLURM_JOB_NAME"] == "envcheck"
        assert env["SLURM_SUBMIT_DIR"] == str(here)
        assert env["SLURM_SUBMIT_HOST"]
        assert env["USER"] == env["LOGNAME"] == env["SLURM_JOB_USER"] == record["user"]
        assert env["SLURMD_NODENAME"] == record["nodes"][0]
        assert env["SLURM_NODELIST"] == env["SLURM_JOB_NODELIST"] == record["nodes"][0]
        assert (env["SLURM_NNODES"], env["SLURM_NTASKS"], env["SLURM_NTASKS_PER_NODE"]) == (
            "1",
            "1",
            "1",
        )
        assert (env["SLURM_NODEID"], env["SLURM_PROCID"], env["SLURM_LOCALID"]) == ("0", "0", "0")
        assert (env["SLURM_GPUS_ON_NODE"], env["SLURM_CPUS_PER_TASK"]) == ("1", "1")
        assert env["SLURM_RESTART_COUNT"] == "0"
        assert env["SLURM_JOB_PARTITION"] == "default"  # no partitions configured: the one
        assert env["ROTA_JOB_ID"] == f"{array_id}_{task}"  # rota's own names are unchanged
        assert not [name for name in UNSET_HERE if name in env]
        assert not [k for k, v in env.items() if k.startswith("SLURM") and not v]

    # the task's integer id names that task alone in gqueue and gcancel, as in SLURM
    task2 = envs[2]["SLURM_JOB_ID"]
    listed = json.loads(cluster.cli("gqueue", "-t", "all", "-j", task2, "--json").stdout)
    assert [j["id"] for j in listed] == [f"{array_id}_2"]
    listed = json.loads(cluster.cli("gqueue", "-t", "all", "-j", array_id, "--json").stdout)
    assert sorted(j["id"] for j in listed) == [f"{array_id}_{t}" for t in range(3)]
    cancel = cluster.cli("gcancel", task2)  # found (and already ended), not "does not exist"
    assert cancel.returncode != 0 and f"job {task2} has already ended" in cancel.stderr


@pytest.mark.docker
def test_a_gang_script_sees_the_compressed_nodelist_and_its_rank(cluster: Cluster) -> None:
    cluster.start_scheduler()
    cluster.start_agent("n1", gpus=1)
    cluster.start_agent("n2", gpus=1)
    script = cluster.write_job("gang.sh", GANG)
    result = cluster.cli("gsub", "--wait", "--parsable", str(script), cwd=cluster.root)
    assert result.returncode == 0, result.stderr
    job_id = result.stdout.strip()
    job = cluster.job(job_id)
    out = wait_for(lambda: cluster.cli("glogs", job_id).stdout, 20, what=f"output of {job_id}")
    lines = out.splitlines()  # the script ran once, on the first node; srun ran a task on each
    envs = [_env("\n".join(x[2:] for x in lines if x.startswith(f"{r}:"))) for r in (0, 1)]
    for rank, (node, env) in enumerate(zip(job["nodes"], envs, strict=True)):
        assert expand(env["SLURM_JOB_NODELIST"]) == job["nodes"]
        assert (env["SLURM_NNODES"], env["SLURM_NTASKS"], env["SLURM_TASKS_PER_NODE"]) == (
            "2",
            "2",
            "1(x2)",
        )
        assert (env["SLURM_NODEID"], env["SLURM_PROCID"]) == (str(rank), str(rank))
        assert env["SLURMD_NODENAME"] == node
        assert env["SLURM_JOB_ID"] == job_id
        assert "SLURM_ARRAY_JOB_ID" not in env and "SLURM_ARRAY_TASK_ID" not in env
        assert "SLURM_CPUS_PER_TASK" not in env  # no --cpus-per-task


@pytest.mark.docker
def test_a_job_file_gets_slurm_variables_only_when_it_asks(cluster: Cluster) -> None:
    cluster.start_scheduler()
    cluster.start_agent("n1", gpus=1)
    plain = cluster.submit(f"image: {TEST_IMAGE}\ncommand: [env]\n")
    asks = cluster.submit(f"image: {TEST_IMAGE}\ncommand: [env]\nslurm_env: true\n")
    for job_id in (plain, asks):
        cluster.wait_state(job_id, "COMPLETED")
    assert not [k for k in _logs(cluster, plain) if k.startswith("SLURM")]
    env = _logs(cluster, asks)
    assert env["SLURM_JOB_ID"] == asks and env["SLURM_NNODES"] == "1"
    assert "SLURM_GPUS_ON_NODE" not in env  # no GPUs asked for: SLURM leaves it unset


@pytest.mark.docker
def test_the_scheduler_refuses_a_bad_submit_dir_or_host_naming_the_field(cluster: Cluster) -> None:
    cluster.start_scheduler()
    api = pb_grpc.JobServiceStub(channel(cluster.address, cluster.token))
    for fields, message in (
        ({"submit_dir": "relative/dir"}, "submit_dir: must be an absolute path"),
        ({"submit_dir": "/tmp/\x1b[31m"}, "submit_dir: must not contain control characters"),
        ({"submit_host": "evil host;rm"}, "submit_host: must be a host name"),
    ):
        spec = pb.JobSpec(image=TEST_IMAGE, command=["true"], **fields)  # type: ignore[arg-type]
        with pytest.raises(grpc.RpcError) as info:
            api.SubmitJobs(pb.SubmitJobsRequest(items=[pb.SubmitItem(spec=spec)]), timeout=10)
        assert info.value.code() is grpc.StatusCode.INVALID_ARGUMENT
        assert message in (info.value.details() or "")
