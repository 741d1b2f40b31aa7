"""Job containers cannot escape, with the real Docker engine: jobs run as a non-root user with
no capabilities, system paths and the Docker socket are never mounted (refused at submit by the
scheduler, and by the agent even when the scheduler let them through)."""

from __future__ import annotations

import pwd
import stat
import subprocess
import sys
from pathlib import Path

from rota.agent.runtime.policy import ContainerPolicy
from rota.jobspec import JobSpec
from rota.messages import LaunchOrder
from tests.cluster import TEST_IMAGE, Cluster
from tests.faults_support import config_file


def _job(command: str, *extra: str) -> str:
    return "\n".join([f"image: {TEST_IMAGE}", f"command: {command!r}", *extra]) + "\n"


def test_a_job_runs_unprivileged_without_capabilities(cluster: Cluster) -> None:
    cluster.start_scheduler("--open-registration")
    cluster.start_agent("n1", 1)
    script = "id -u; id -g; grep -E '^(CapEff|CapBnd|NoNewPrivs)' /proc/self/status"
    job = cluster.submit(_job(script, "resources: {cpus: 0.5, memory: 64Mi}"))
    assert cluster.wait_state(job, "COMPLETED", "FAILED")["state"] == "COMPLETED"
    lines = cluster.cli("glogs", job, check=True).stdout.split("\n")
    uid, gid = int(lines[0]), int(lines[1])
    assert uid != 0 and gid != 0
    status = dict(line.split(":\t") for line in lines[2:] if line)
    assert int(status["CapEff"], 16) == 0 and int(status["CapBnd"], 16) == 0
    assert status["NoNewPrivs"] == "1"
    log = cluster.root / f"agent-{cluster.node_name('n1')}" / "logs" / job / "1.log"
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    db = cluster.root / "sched.db"
    assert stat.S_IMODE(db.stat().st_mode) == 0o600


def test_a_job_runs_as_the_uid_and_gid_its_user_was_given(cluster: Cluster) -> None:
    cluster.start_scheduler("--open-registration")
    cluster.start_agent("n1", 1)
    made = cluster.cli(
        "gadmin", "user", "add", "carol", "--uid", "4321", "--gid", "4322", "--parsable"
    )
    assert made.returncode == 0, made.stderr
    token = made.stdout.strip()
    path = cluster.write_job("ids.yaml", _job("id -u; id -g"))
    env = {**cluster.env, "ROTA_TOKEN": token}
    out = subprocess.run(
        [sys.executable, "-m", "rota.cli.gsub", "--parsable", str(path)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    job = out.stdout.strip().splitlines()[0]
    assert cluster.wait_state(job, "COMPLETED", "FAILED")["state"] == "COMPLETED"
    assert cluster.job(job)["user"] == "carol"
    assert cluster.cli("glogs", job, check=True).stdout.split() == ["4321", "4322"]


def test_system_paths_and_the_docker_socket_are_never_mounted(cluster: Cluster) -> None:
    cluster.start_scheduler("--config", config_file(cluster), "--open-registration")
    cluster.start_agent("n1", 1)
    for source in ("/", "/etc", "/var/run/docker.sock", "/run/docker.sock", "/var"):
        path = cluster.write_job("m.yaml", _job("true", f"mounts: ['{source}:/host']"))
        out = cluster.cli("gsub", str(path))
        assert out.returncode == 2, (source, out.stdout)
        assert "mounts[0].source" in out.stderr and "never allowed" in out.stderr
    outside = cluster.write_job("o.yaml", _job("true", "mounts: ['/srv/data:/d']"))
    out = cluster.cli("gsub", str(outside))
    assert out.returncode == 2 and "not under an allowed mount prefix" in out.stderr
    reserved = cluster.write_job("e.yaml", _job("true", "env: {NVIDIA_VISIBLE_DEVICES: all}"))
    out = cluster.cli("gsub", str(reserved))
    assert out.returncode == 2 and "env.NVIDIA_VISIBLE_DEVICES" in out.stderr
    assert cluster.jobs() == []


def test_the_agent_refuses_a_mount_the_scheduler_cannot_see_through(
    cluster: Cluster, tmp_path: Path
) -> None:
    cluster.start_scheduler("--config", config_file(cluster), "--open-registration")
    cluster.start_agent("n1", 1)
    (cluster.root / "etc-link").symlink_to("/etc")
    job = cluster.submit(_job("cat /host/hostname", f"mounts: ['{cluster.root}/etc-link:/host']"))
    failed = cluster.wait_state(job, "FAILED", "COMPLETED")
    assert failed["state"] == "FAILED"
    assert "resolves to /etc" in cluster.cli("gcontrol", "show", "job", job).stdout


def test_who_a_job_runs_as() -> None:
    def launch(**kw: object) -> LaunchOrder:
        spec = JobSpec(image="img", command=("true",))
        return LaunchOrder(1, 1, "1", spec, (), (), {}, 60.0, **kw)  # type: ignore[arg-type]

    policy = ContainerPolicy(default_uid=4242, default_gid=4343)
    entry = next(e for e in pwd.getpwall() if e.pw_uid and e.pw_gid)
    assert policy.run_as(launch(user=entry.pw_name)) == (entry.pw_uid, entry.pw_gid)
    assert policy.run_as(launch(user="no-such-user-here")) == (4242, 4343)
    assert policy.run_as(launch(user="root")) == (4242, 4343)
    assert policy.run_as(launch(user="ann", uid=1500, gid=1600)) == (1500, 1600)
    assert policy.run_as(launch(uid=0, gid=0)) == (4242, 4343)
    assert ContainerPolicy(allow_root=True).run_as(launch(user="root")) == (0, 0)
