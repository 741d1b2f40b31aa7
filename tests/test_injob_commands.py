"""sbatch and scancel inside a running job, as under SLURM: a checkpoint/restart chain that
resubmits itself with ``--dependency=afterany:$SLURM_JOB_ID``, ``sbatch --parsable --wrap``
from a mounted directory, ``scancel`` of the job itself and of another user's job, and what a
container (or a node) may not do: ask for a job its node does not run, send a script over
gsub's size limit, or ask faster than the rate limit. Real scheduler and agents, real Docker
with the busybox image."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rota.v1 import rota_pb2 as pb
from tests.cluster import TEST_IMAGE, Cluster, free_port, wait_for
from tests.faults_support import config_file
from tests.support.fake_agent import FakeAgent

pytestmark = pytest.mark.docker

CHAIN = f"""#!/bin/sh
#SBATCH -J chain
#SBATCH --time=5:00
#ROTA image={TEST_IMAGE}
n=$(cat count 2>/dev/null || echo 0)
n=$((n + 1))
echo "$n" >count
echo "run $n as job $SLURM_JOB_ID"
if [ "$n" -lt 3 ]; then
	sbatch --dependency=afterany:$SLURM_JOB_ID "$0"
fi
"""


def _start(cluster: Cluster, **settings: object) -> None:
    """A scheduler whose jobs may mount the cluster's directory, with ``settings``, and n1."""
    config = config_file(cluster, **settings)
    http = ["--http-listen", f"127.0.0.1:{free_port()}"]
    ports = ["--web-ports-listen", f"127.0.0.1:{free_port()}"]
    cluster.start_scheduler("--open-registration", "--config", config, *http, *ports)
    cluster.start_agent("n1", gpus=1)


def _job(command: str, extra: str = "") -> str:
    return (
        f"image: {TEST_IMAGE}\ncommand: {json.dumps(['sh', '-c', command])}\n"
        f"slurm_env: true\ntime_limit: 5m\n{extra}"
    )


def _shared(cluster: Cluster, name: str) -> Path:
    """A directory of the cluster every job's user may write."""
    path = cluster.root / name
    path.mkdir()
    path.chmod(0o777)
    return path


def _logs(cluster: Cluster, job_id: str) -> str:
    return cluster.cli("glogs", job_id, check=True).stdout


def test_a_script_that_resubmits_itself_runs_as_a_chain_of_three(cluster: Cluster) -> None:
    _start(cluster)
    work = _shared(cluster, "work")
    (work / "chain.sh").write_text(CHAIN)
    first = cluster.cli("gsub", "--parsable", "chain.sh", cwd=work, check=True).stdout.strip()
    count = work / "count"
    try:
        wait_for(lambda: count.exists() and count.read_text().strip() == "3", 120, 0.5, what="3")
    except AssertionError as exc:  # what each run did, for a failure's report
        seen = {
            j["id"]: (j["state"], j.get("reason"), _logs(cluster, j["id"])) for j in cluster.jobs()
        }
        raise AssertionError(
            f"{exc}; count {count.read_text() if count.exists() else None!r}; {seen}"
        ) from None
    ids = sorted((j["id"] for j in cluster.jobs() if j["name"] == "chain"), key=int)
    for job_id in ids:
        cluster.wait_state(job_id, "COMPLETED")
    assert len(ids) == 3 and ids[0] == first
    assert len([j for j in cluster.jobs() if j["name"] == "chain"]) == 3  # and no fourth
    runs = [_logs(cluster, job_id).splitlines()[0] for job_id in ids]
    assert runs == [f"run {n} as job {job_id}" for n, job_id in enumerate(ids, start=1)]
    assert f"Submitted batch job {ids[1]}" in _logs(cluster, first)
    shown = cluster.cli("gcontrol", "show", "job", ids[1], check=True).stdout
    assert f"submitted from job {first} on node {cluster.node_name('n1')}" in shown
    assert f"afterany:{first}" in shown


def test_sbatch_parsable_wrap_prints_an_id_of_the_same_user(cluster: Cluster) -> None:
    _start(cluster)
    data = _shared(cluster, "data")
    mount = f"mounts: [{{source: {data}, target: /data}}]\nworkdir: /data\n"
    command = "id=$(sbatch --parsable -o out-%j.txt --wrap 'echo wrapped') && echo new=$id"
    job = cluster.submit(_job(command, mount))
    cluster.wait_state(job, "COMPLETED")
    new = _logs(cluster, job).strip().removeprefix("new=")
    assert new.isdigit(), _logs(cluster, job)
    shown = cluster.wait_state(new, "COMPLETED")
    assert shown["user"] == cluster.job(job)["user"]
    assert shown["name"] == "wrap"
    # -o was relative to /data in the container: the node wrote it in the mount's source
    assert (data / f"out-{new}.txt").read_text() == "wrapped\n"


def test_scancel_of_its_own_job_ends_it_cancelled(cluster: Cluster) -> None:
    _start(cluster)
    job = cluster.submit(_job('echo before; scancel "$SLURM_JOB_ID"; sleep 60; echo after'))
    ended = cluster.wait_state(job, "CANCELLED", "COMPLETED", "FAILED")
    assert ended["state"] == "CANCELLED"
    assert "after" not in _logs(cluster, job)
    shown = cluster.cli("gcontrol", "show", "job", job, check=True).stdout
    assert "with scancel from job" in shown


def test_scancel_of_another_users_job_is_refused_and_changes_nothing(cluster: Cluster) -> None:
    _start(cluster)
    bob = cluster.add_user("bob")
    path = cluster.write_job("bob.yaml", _job("sleep 60"))
    his = cluster.cli("gsub", "--parsable", "--hold", str(path), token=bob)
    assert his.returncode == 0, his.stderr
    his_id = his.stdout.strip()
    # the cluster's admin owns this job: inside it, scancel still acts as a plain user
    job = cluster.submit(_job(f"scancel {his_id}; echo rc=$?"))
    cluster.wait_state(job, "COMPLETED")
    log = _logs(cluster, job)
    assert "rc=1" in log
    assert f"scancel: error: job {his_id} belongs to bob" in log
    assert cluster.job(his_id)["state"] == "PENDING"
    audit = cluster.cli("gadmin", "audit", check=True).stdout
    assert "scancel in a job" in audit


def test_a_node_not_running_the_job_is_refused(cluster: Cluster) -> None:
    _start(cluster)
    job = cluster.submit(_job("sleep 60"))
    cluster.wait_state(job, "RUNNING")
    evil = FakeAgent(cluster.address, cluster.node_name("evil")).start()
    try:

        def ask(job_id: int, tool: str, argv: list[str], script: bytes = b"") -> pb.JobCommandReply:
            command = pb.JobCommand(
                request_id=7,
                job_id=job_id,
                attempt=1,
                tool=tool,
                argv=argv,
                script=script,
                script_index=-1,
                cwd="/",
            )
            evil.send(pb.AgentMessage(job_command=command))
            return evil.replies.get(timeout=30)

        refused = ask(int(job), "scancel", [job])
        assert refused.exit_code == 1
        assert "does not run" in refused.error
        assert ask(999999, "sbatch", ["--wrap", "true"]).exit_code == 1
        big = ask(int(job), "sbatch", [], b"#!/bin/sh\n" + b"#" * 300_000)
        assert "at most 262144" in big.error
    finally:
        evil.stop()
    assert cluster.job(job)["state"] == "RUNNING"
    audit = cluster.cli("gadmin", "audit", check=True).stdout
    assert cluster.node_name("evil") in audit


def test_an_oversized_script_and_a_flood_are_refused(cluster: Cluster) -> None:
    _start(cluster, job_commands_burst=3, job_commands_per_second=0)
    work = _shared(cluster, "flood")
    flood = (
        "head -c 300000 /dev/zero | tr '\\0' '#' >big.sh; sbatch big.sh; echo big=$?; "
        "i=0; while [ $i -lt 5 ]; do sbatch --hold --parsable --wrap true; i=$((i + 1)); done"
    )
    job = cluster.submit(
        _job(flood, f"workdir: {work}\nmounts: [{{source: {work}, target: {work}}}]\n")
    )
    cluster.wait_state(job, "COMPLETED")
    log = _logs(cluster, job)
    assert "sbatch: error: the request's script is too large (at most 262144 bytes)" in log
    assert "big=1" in log
    submitted = [line for line in log.splitlines() if line.isdigit()]
    assert len(submitted) == 3  # the burst; then nothing more (0 a second)
    assert log.count("sbatch: error: too many commands from job") == 2
