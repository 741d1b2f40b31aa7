"""Attained-service preemption end to end (issue 28): real scheduler and agent processes, real
Docker. A checkpointable job is preempted by a newly arrived small job only after
``min_runtime``, gets its ``signal`` first, is requeued keeping its attained service and
finishes; a job's signal also comes before its time limit. Settings are small (1 GPU-second
threshold, seconds of min_runtime and grace) so that the test takes seconds."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

from tests.cluster import TEST_IMAGE, Cluster, wait_for

MIN_RUNTIME = 4.0

CHECKPOINTING = """
if [ -f /ckpt/saved ]; then echo resumed attempt $ROTA_ATTEMPT; exit 0; fi
trap 'echo got USR1; touch /ckpt/saved; sleep 30' USR1
echo attempt $ROTA_ATTEMPT; while true; do sleep 0.2; done
"""


def _config(cluster: Cluster) -> Path:
    return cluster.write_job(
        "scheduler.yaml",
        "open_registration: true\n"
        f"allowed_mounts: [{cluster.root}]\n"
        "tick_interval: 1\n"
        "kill_grace: 2\n"
        "attained_thresholds: [1]\n"
        "starvation_factor: 0\n"
        f"min_runtime: {MIN_RUNTIME}\n"
        "preemption_grace: 2\n",
    )


def _job(command: str, gpus: int, extra: str = "") -> str:
    return (
        f"image: {TEST_IMAGE}\ncommand: {json.dumps(['sh', '-c', command])}\n"
        f"resources: {{gpus: {gpus}}}\n{extra}"
    )


def test_checkpointable_job_is_warned_preempted_requeued_and_finishes(cluster: Cluster) -> None:
    ckpt = cluster.root / "ckpt"
    ckpt.mkdir()
    ckpt.chmod(0o777)
    cluster.start_scheduler("--config", str(_config(cluster)))
    cluster.start_agent("n1", gpus=2)
    mounts = f"mounts: [{{source: {ckpt}, target: /ckpt}}]\n"
    big = cluster.submit(_job(CHECKPOINTING, 2, f"checkpointable: true\nsignal: USR1@60\n{mounts}"))
    first = cluster.wait_state(big, "RUNNING")
    small = cluster.submit(_job("echo small", 1))
    done = cluster.wait_state(small, "COMPLETED", timeout=90)

    # only after min_runtime, and only once the big job had been warned and stopped
    stopped = cluster.cli("glogs", "--attempt", "1", big, check=True).stdout
    assert "got USR1" in stopped
    started = datetime_of(first["start_time"])
    assert datetime_of(done["start_time"]) - started >= MIN_RUNTIME
    show = cluster.cli("gcontrol", "show", "job", big, check=True).stdout
    assert f"preempted by job {small} (attained-service queue 0)" in show
    assert "COMPLETING -> PREEMPTED" in show and "PREEMPTED -> PENDING" in show

    finished = cluster.wait_state(big, "COMPLETED", timeout=90)
    assert finished["attempt"] == 2
    assert "resumed attempt 2" in cluster.cli("glogs", big, check=True).stdout

    # gqueue --explain names the attained-service queue of a waiting job
    held = cluster.submit(_job("true", 1, "checkpointable: true\n"), "--hold")
    text = cluster.cli("gqueue", "--explain", held, check=True).stdout
    assert "attained:        queue 0 of 2 (0.00 GPU-hours attained" in text


def test_signal_comes_before_the_time_limit(cluster: Cluster) -> None:
    cluster.start_scheduler("--config", str(_config(cluster)))
    cluster.start_agent("n1", gpus=1)
    job = cluster.submit(
        _job(
            "trap 'echo warned; exit 0' USR1; while true; do sleep 0.2; done",
            1,
            "time_limit: 10s\nsignal: USR1@8\n",
        )
    )
    done = cluster.wait_state(job, "COMPLETED", "TIMEOUT", timeout=60)
    assert done["state"] == "COMPLETED"
    wait_for(lambda: "warned" in cluster.cli("glogs", job).stdout, 60, what="the warning")


def datetime_of(iso: str) -> float:
    return datetime.fromisoformat(iso).timestamp()
