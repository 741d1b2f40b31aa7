"""Issue 2 end to end: real scheduler and agent processes, real Docker, the real CLI."""

from __future__ import annotations

import os
import subprocess
import urllib.request

from tests.cluster import TEST_IMAGE, Cluster, free_port, wait_for

FAIL_3 = f"""
name: exit3
image: {TEST_IMAGE}
command: ["sh", "-c", "echo visible=$CUDA_VISIBLE_DEVICES uuids=$ROTA_GPU_UUIDS; exit 3"]
resources: {{gpus: 1}}
"""

SLEEPER = f"""
name: sleeper
image: {TEST_IMAGE}
command: ["sleep", "600"]
resources: {{gpus: 1}}
"""


def test_failed_job_shows_exit_code_and_logs_with_its_gpus(cluster: Cluster) -> None:
    cluster.start_scheduler()
    cluster.start_agent("n1", gpus=2)
    job_id = cluster.submit(FAIL_3)
    job = cluster.wait_state(job_id, "FAILED")
    assert job["exit_code"] == 3
    assert job["state_code"] == "F"
    node = cluster.node_name("n1")
    assert job["nodes"] == [node]
    (gpu,) = job["gpu_ids"][node]
    table = cluster.cli("gqueue", "-t", "all", check=True).stdout
    line = next(row for row in table.splitlines() if row.split()[0] == job_id)
    assert line.split()[3] == "F"
    logs = cluster.cli("glogs", job_id, check=True).stdout
    assert f"visible={gpu} " in logs
    assert f"uuids=GPU-sim-{node}-{gpu}" in logs
    wait_for(lambda: not cluster.containers(), 60, what="container removed after the job ended")


def test_cancel_running_job_ends_cancelled_and_removes_container(cluster: Cluster) -> None:
    cluster.start_scheduler()
    cluster.start_agent("n1", gpus=1)
    job_id = cluster.submit(SLEEPER)
    cluster.wait_state(job_id, "RUNNING")
    assert cluster.containers(all_states=False), "the job's container runs"
    cluster.cli("gcancel", job_id, check=True)
    job = cluster.wait_state(job_id, "CANCELLED", timeout=30)
    assert job["state_code"] == "CA"
    wait_for(lambda: not cluster.containers(), 60, what="container removed after gcancel")


def test_cancel_pending_job_and_unknown_id(cluster: Cluster) -> None:
    cluster.start_scheduler()
    cluster.start_agent("n1", gpus=1)
    running = cluster.submit(SLEEPER)
    cluster.wait_state(running, "RUNNING")
    pending = cluster.submit(SLEEPER)
    assert cluster.pending_reason(pending) == "Resources"
    cluster.cli("gcancel", pending, check=True)
    assert cluster.job(pending)["state"] == "CANCELLED"
    bad = cluster.cli("gcancel", "99999")
    assert bad.returncode == 1
    assert "99999" in bad.stderr and "does not exist" in bad.stderr


def test_time_limit_ends_timeout(cluster: Cluster) -> None:
    cluster.start_scheduler()
    cluster.start_agent("n1", gpus=1)
    job_id = cluster.submit(SLEEPER + "time_limit: 2s\n")
    job = cluster.wait_state(job_id, "TIMEOUT", timeout=60)
    assert job["state_code"] == "TO"
    assert job["time_limit"] == 2


def test_two_jobs_wanting_all_gpus_run_one_after_the_other(cluster: Cluster) -> None:
    cluster.start_scheduler("--allowed-mount", str(cluster.root), "--open-registration")
    cluster.start_agent("n1", gpus=2)
    gate = cluster.root / "gate"
    gate.mkdir(mode=0o755)
    job = f"""
image: {TEST_IMAGE}
command: ["sh", "-c", "echo gpus=$CUDA_VISIBLE_DEVICES; while [ ! -e /gate/go ]; do sleep 0.1; done"]
resources: {{gpus: 2}}
mounts: ['{gate}:/gate:ro']
"""
    first = cluster.submit(job)
    second = cluster.submit(job)
    cluster.wait_state(first, "RUNNING")  # and it runs on until the gate opens
    wait_for(
        lambda: (j := cluster.job(second))["state"] == "PENDING" and j["reason"] == "Resources",
        30,
        what="the second job waiting for resources",
    )
    (gate / "go").write_text("")
    a = cluster.wait_state(first, "COMPLETED")
    b = cluster.wait_state(second, "COMPLETED")
    assert b["start_time"] >= a["end_time"], (
        "the second job started before the first released its GPUs"
    )
    node = cluster.node_name("n1")
    assert sorted(a["gpu_ids"][node]) == sorted(b["gpu_ids"][node]) == [0, 1]
    assert "gpus=0,1" in cluster.cli("glogs", second, check=True).stdout


def test_cpu_only_job_completes(cluster: Cluster) -> None:
    cluster.start_scheduler()
    cluster.start_agent("n1", gpus=0)
    job_id = cluster.submit(
        f"image: {TEST_IMAGE}\ncommand: echo cpu-only ok\nresources: {{gpus: 0}}\n"
    )
    job = cluster.wait_state(job_id, "COMPLETED")
    assert job["exit_code"] == 0
    assert cluster.cli("glogs", job_id, check=True).stdout == "cpu-only ok\n"


def test_missing_image_fails_with_engine_message_and_no_container(cluster: Cluster) -> None:
    cluster.start_scheduler()
    cluster.start_agent("n1", gpus=1)
    job_id = cluster.submit('image: rota-test-no-such-image:1\ncommand: ["true"]\npull: never\n')
    job = cluster.wait_state(job_id, "FAILED")
    assert "rota-test-no-such-image:1" in job["reason"]
    assert not cluster.containers()


def test_out_of_memory_is_reported(cluster: Cluster) -> None:
    cluster.start_scheduler()
    cluster.start_agent("n1", gpus=0)
    job_id = cluster.submit(
        f"image: {TEST_IMAGE}\n"
        'command: ["sh", "-c", "dd if=/dev/zero of=/dev/null bs=256M count=1"]\n'
        "resources: {memory: 32Mi}\n"
    )
    job = cluster.wait_state(job_id, "OUT_OF_MEMORY", "FAILED", "COMPLETED")
    assert job["state"] == "OUT_OF_MEMORY", job
    assert job["state_code"] == "OOM"


def test_scheduler_unreachable_is_one_line_exit_1(cluster: Cluster) -> None:
    for command in (["gqueue"], ["ginfo"], ["gcancel", "1"], ["glogs", "1"]):
        result = cluster.cli(*command)
        assert result.returncode == 1, command
        assert "cannot reach the rota scheduler at" in result.stderr
        assert "ROTA_SCHEDULER" in result.stderr
        assert "Traceback" not in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1


def test_rota_up_runs_the_example_job(tmp_path, test_image: str) -> None:
    c = Cluster(tmp_path)
    env = c.env
    http_port = free_port()
    up = subprocess.Popen(
        [
            "rota",
            "up",
            "--port",
            str(c.port),
            "--simulate-gpus",
            "2",
            "--node",
            c.node_name("up"),
            "--data-dir",
            str(tmp_path / "up"),
            "--http-port",
            str(http_port),
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        wait_for(
            lambda: (n := c.node(c.node_name("up"))) and n["state"] == "IDLE", 30, what="rota up"
        )
        job_id = c.submit(f"image: {test_image}\ncommand: echo hello from rota\n")
        assert c.wait_state(job_id, "COMPLETED")["exit_code"] == 0
        assert "hello from rota" in c.cli("glogs", job_id, check=True).stdout
    finally:
        up.send_signal(2)  # Ctrl-C
        code = up.wait(timeout=30)
        c.stop()
    assert code == 0
    assert up.stdout is not None
    out = up.stdout.read().decode()
    # other ports than the defaults: it says what the other shells need
    hint = f"export ROTA_SCHEDULER=127.0.0.1:{c.port} ROTA_HTTP=127.0.0.1:{http_port}"
    assert f"rota up: in other shells: {hint}" in out
    # the agent starts once the scheduler listens: no warning that it is unreachable
    assert "unreachable" not in out, out


def test_rota_up_started_again_keeps_its_admin_token(tmp_path) -> None:
    """When `rota up`'s scheduler dies (kill -9, as docs/interactive.md "Restarts" does under
    a grun), rota up says so and exits 1; run again, it keeps the admin token in the
    credentials file, so clients that read it before (a grun attaching again) stay signed in.
    Its HTTP port is the one --http-port names, never another cluster's 9718."""
    c = Cluster(tmp_path)
    http = free_port()
    argv = ["rota", "up", "--port", str(c.port), "--http-port", str(http)]
    argv += ["--node", c.node_name("up"), "--data-dir", str(tmp_path / "up")]
    tokens = []
    for round_ in ("kill the scheduler", "Ctrl-C"):
        up = subprocess.Popen(
            argv, env=c.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        try:
            wait_for(lambda: (n := c.node(c.node_name("up"))) and n["state"] == "IDLE", 30)
            with urllib.request.urlopen(f"http://127.0.0.1:{http}/metrics", timeout=10) as r:
                assert r.status == 200
            tokens.append((tmp_path / "config" / "rota" / "credentials").read_text().strip())
            env = {**c.env, "ROTA_TOKEN": tokens[0]}
            signed_in = subprocess.run(["gqueue"], env=env, capture_output=True, text=True)
            assert signed_in.returncode == 0, signed_in.stderr
            if round_ == "kill the scheduler":
                found = ["pgrep", "-P", str(up.pid), "-f", "rota_main scheduler"]
                os.kill(int(subprocess.run(found, capture_output=True, text=True).stdout), 9)
            if round_ == "Ctrl-C":
                up.send_signal(2)
            output = up.communicate(timeout=30)[0]
        finally:
            if up.poll() is None:  # a failed check above: stop it as a user would
                up.send_signal(2)
                up.wait(timeout=30)
        if round_ == "kill the scheduler":
            assert up.returncode == 1, output
            assert "rota up: the scheduler exited (code -9); stopping the other" in output
        else:
            assert up.returncode == 0, output
    c.stop()
    assert tokens[0] == tokens[1]


def test_rota_up_migrates_its_own_database_from_an_earlier_rota(tmp_path) -> None:
    """A user who ran an earlier rota's `rota up` keeps its database: the next `rota up`
    migrates it to this rota's schema instead of refusing to start."""
    c = Cluster(tmp_path)
    data = tmp_path / "up"
    data.mkdir(mode=0o700)
    db = f"sqlite:///{data / 'scheduler.db'}"
    c.cli("rota", "db", "upgrade", "--db", db, check=True)
    c.cli("rota", "db", "downgrade", "0007_attained", "--db", db, check=True)
    up = subprocess.Popen(
        [
            *["rota", "up", "--port", str(c.port), "--http-port", str(free_port())],
            *["--node", c.node_name("up"), "--data-dir", str(data)],
        ],
        env=c.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        wait_for(
            lambda: (n := c.node(c.node_name("up"))) and n["state"] == "IDLE", 30, what="rota up"
        )
    finally:
        up.send_signal(2)  # Ctrl-C
        code = up.wait(timeout=30)
        c.stop()
    assert code == 0
    current = c.cli("rota", "db", "current", "--db", db, check=True).stdout
    assert current.strip().endswith("(head)"), current
