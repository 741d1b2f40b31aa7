"""Running srun steps in ``gqueue`` (issue 24): ``gqueue -s`` lists them as ``squeue -s``
does and ``gqueue -j 12.0`` names one, the same over the HTTP API and over gRPC. Real
scheduler, real agent, real Docker with the busybox image; the step is running while asked."""

from __future__ import annotations

import getpass
import json

import pytest

from tests.cluster import TEST_IMAGE, Cluster, free_port, wait_for

SCRIPT = f"""#!/bin/sh
#SBATCH --job-name=stepper
#SBATCH --time=5:00
#ROTA image={TEST_IMAGE}
echo ready
srun sleep 60
"""
GRPC = {"ROTA_HTTP": "off"}


def _gqueue(cluster: Cluster, env: dict[str, str], *args: str) -> str:
    saved = dict(cluster.env_extra)
    cluster.env_extra.update(env)
    try:
        return cluster.cli("gqueue", *args, check=True).stdout
    finally:
        cluster.env_extra.clear()
        cluster.env_extra.update(saved)


@pytest.mark.docker
def test_gqueue_lists_a_running_step_over_http_and_grpc(cluster: Cluster) -> None:
    http = free_port()
    cluster.env_extra["ROTA_HTTP"] = f"127.0.0.1:{http}"
    cluster.start_scheduler("--open-registration", "--http-listen", f"127.0.0.1:{http}")
    node = cluster.node_name("n1")
    cluster.start_agent("n1", gpus=1)
    script = cluster.write_job("stepper.sh", SCRIPT)
    job_id = cluster.cli("gsub", "--parsable", str(script), check=True).stdout.strip()
    only_http = {"ROTA_SCHEDULER": f"127.0.0.1:{free_port()}"}  # no gRPC server there

    def steps(env: dict[str, str], *args: str) -> list[dict[str, object]]:
        return json.loads(_gqueue(cluster, env, "--json", *args))

    wait_for(lambda: steps(GRPC, "-s"), 60, what="the running step")
    for env in (only_http, GRPC):
        (step,) = steps(env, "-s")
        assert step["id"] == f"{job_id}.0"
        assert step["job_id"] == job_id
        assert (step["name"], step["nodelist"], step["ntasks"]) == ("sleep", node, 1)
        assert steps(env, "-j", f"{job_id}.0") == [step]
        assert steps(env, "-j", f"{job_id}.1") == []
        assert steps(env, "-s", "-j", job_id) == [step]
        assert steps(env, "-s", "-u", "nobody-here") == []
        table = _gqueue(cluster, env, "-s").splitlines()
        assert table[0].split() == ["STEPID", "NAME", "PARTITION", "USER", "TIME", "NODELIST"]
        cells = table[1].split()
        assert cells[:4] == [f"{job_id}.0", "sleep", "default", getpass.getuser()]
        assert cells[5] == node
        assert _gqueue(cluster, env, "-h", "-j", f"{job_id}.0").split()[0] == f"{job_id}.0"
    bad = cluster.cli("gqueue", "-j", f"{job_id}.x")
    assert bad.returncode == 2 and "not a step id" in bad.stderr
    cluster.cli("gcancel", job_id, check=True)
    cluster.wait_state(job_id, "CANCELLED", timeout=60)
    assert steps(GRPC, "-s") == []
    # sacct's lines for it: the job, its batch script (run once, on its node) and the step
    listed = json.loads(cluster.cli("gacct", "-j", job_id, "--json", check=True).stdout)
    assert [r["id"] for r in listed] == [job_id, f"{job_id}.batch", f"{job_id}.0"]
    batch = json.loads(cluster.cli("gacct", "-j", f"{job_id}.batch", "--json", check=True).stdout)
    assert [(b["id"], b["name"], b["state"], b["nodes"]) for b in batch] == [
        (f"{job_id}.batch", "batch", "CANCELLED", [node])
    ]
    assert batch[0]["exit_code"] == listed[0]["exit_code"]
