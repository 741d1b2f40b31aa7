"""End to end with Docker: a job's output files written by its agent from ``gsub -o/-e``
patterns, its webhook posted to a server on 127.0.0.1, and the scheduler refusing bad fields."""

from __future__ import annotations

import os

import grpc
import pytest

from rota.v1 import rota_pb2 as pb
from rota.v1 import rota_pb2_grpc as pb_grpc
from tests.cluster import Cluster, wait_for
from tests.support.tokens import channel as token_channel
from tests.support.webhooks import LOOPBACK, WebhookServer

pytestmark = pytest.mark.docker

JOB = """\
name: ends
image: rota-test-busybox:latest
command: "echo out-line; echo err-line >&2; exit 4"
"""


def test_output_files_and_the_webhook_of_a_job(cluster: Cluster) -> None:
    out = cluster.root / "out"
    out.mkdir()
    os.chown(out, 65534, 65534)  # the job's user (root's jobs run as the default 65534)
    config = cluster.write_job(
        "sched.yaml",
        f"allowed_mounts: [{cluster.root}]\nwebhook_allowed_networks: [{LOOPBACK[0]}]\n",
    )
    cluster.start_scheduler("--open-registration", "--config", str(config))
    cluster.start_agent("n1", 1)
    with WebhookServer(500, 200) as hook:
        path = cluster.write_job("ends.yaml", JOB)
        result = cluster.cli(
            "gsub",
            "--parsable",
            "-o",
            "out/%x-%j.out",
            "-e",
            "out/%x-%j.err",
            "--notify",
            hook.url,
            "--notify-on",
            "fail",
            str(path),
            cwd=cluster.root,
        )
        job = result.stdout.strip()
        assert job.isdigit(), result.stderr
        cluster.wait_state(job, "FAILED")
        wait_for(lambda: hook.received, 30, what="the webhook")
    assert (out / f"ends-{job}.out").read_text() == "out-line\n"
    assert (out / f"ends-{job}.err").read_text() == "err-line\n"
    (body,) = hook.received
    assert body["job_id"] == job and body["state"] == "FAILED" and body["exit_code"] == 4
    assert body["gpus"] == [{"node": cluster.node_name("n1"), "indices": [], "uuids": []}]
    shown = cluster.cli("gcontrol", "show", "job", job, check=True).stdout
    assert "notification to http://127.0.0.1" in shown and "failed (try 1 of" in shown
    assert "delivered" in shown


def test_the_scheduler_refuses_bad_fields_by_name(cluster: Cluster) -> None:
    cluster.start_scheduler()
    channel = token_channel(cluster.address, cluster.token)
    stub = pb_grpc.JobServiceStub(channel)
    for fields, named in (
        ({"notify_url": "gopher://x/"}, "notify.url"),
        ({"notify_url": "http://x/", "notify_on": ["soon"]}, "notify.on"),
        ({"output": "/tmp/%Z.out"}, "output"),
        ({"error": "/srv/x.err"}, "error"),  # not under allowed_mounts
        ({"open_mode": "sometimes"}, "open_mode"),
    ):
        spec = pb.JobSpec(image="img", command=["true"], **fields)  # type: ignore[arg-type]
        with pytest.raises(grpc.RpcError) as err:
            stub.SubmitJobs(pb.SubmitJobsRequest(items=[pb.SubmitItem(spec=spec)], user="ann"))
        assert err.value.code() is grpc.StatusCode.INVALID_ARGUMENT
        assert named in (err.value.details() or ""), err.value.details()
    channel.close()
