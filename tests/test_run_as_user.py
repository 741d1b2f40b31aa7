"""Issue 24, item 5, on a live cluster (real scheduler, agent running as root, Docker): a job runs
as its user's passwd entry on the node (supplementary groups included), in the directory it was
submitted from, with that user's ``HOME``, and writes ``slurm-%j.out`` there, but only where the
node's ``allowed_mounts`` allow it and only what the user could reach themselves."""

from __future__ import annotations

import grp
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.cluster import TEST_IMAGE, Cluster, free_port, wait_for

pytestmark = pytest.mark.docker

SCRIPT = f"""#!/bin/sh
#SBATCH -J where
#ROTA image={TEST_IMAGE}
{{body}}
"""


@dataclass
class HostUser:
    name: str
    uid: int
    extra_gid: int  # a supplementary group of the user's
    home: Path


def _free_id_pair(start: int, name: str) -> int:
    """The first even id from ``start`` whose group id and the next are free, with group
    ``name`` made on it (groupadd refuses a taken id, so a concurrent run moves on)."""
    for uid in range(start, start + 400, 2):
        try:
            grp.getgrgid(uid + 1)
            continue
        except KeyError:
            pass
        if subprocess.run(["groupadd", "-g", str(uid), name], capture_output=True).returncode == 0:
            return uid
    raise AssertionError(f"no free group id pair from {start}")


@pytest.fixture
def host_user(cluster: Cluster, request: pytest.FixtureRequest) -> Iterator[HostUser]:
    """A real user of this host (passwd and group entries) with a supplementary group and a
    home under the cluster's root, removed afterwards; ids differ per test."""
    name, extra = f"rt{cluster.tag}", f"rt{cluster.tag}x"
    home = cluster.root / "home" / name
    home.mkdir(parents=True)
    uid = _free_id_pair(46200 + sum(map(ord, request.node.name)) % 700 * 2, name)
    subprocess.run(["groupadd", "-g", str(uid + 1), extra], check=True)
    made = ["useradd", "-u", str(uid), "-g", str(uid), "-G", extra, "-M", "-d", str(home), name]
    subprocess.run(made, check=True)
    os.chown(home, uid, uid)
    home.chmod(0o700)  # reached by the job because it is reached as its user
    try:
        yield HostUser(name, uid, uid + 1, home)
    finally:
        subprocess.run(["userdel", name], capture_output=True)
        subprocess.run(["groupdel", extra], capture_output=True)
        subprocess.run(["groupdel", name], capture_output=True)


def _submit_from(cluster: Cluster, token: str, where: Path, body: str) -> str:
    script = cluster.root / f"where-{cluster.tag}.sh"
    script.write_text(SCRIPT.format(body=body))
    script.chmod(0o644)
    env_token, cluster.token = cluster.token, token
    try:
        done = cluster.cli("gsub", "--wait", "--parsable", str(script), cwd=where)
    finally:
        cluster.token = env_token
    assert done.stdout.strip(), done.stderr  # --wait exits with the job's exit code
    return done.stdout.strip().splitlines()[0]


def _shown(cluster: Cluster, job: str) -> str:
    return cluster.cli("gcontrol", "show", "job", job, check=True).stdout


def test_a_script_runs_as_its_user_in_its_submit_dir_and_writes_slurm_out_there(
    cluster: Cluster, host_user: HostUser
) -> None:
    cluster.start_scheduler()
    cluster.start_agent("n1", 1)
    token = cluster.add_user(host_user.name)
    project = host_user.home / "project"
    project.mkdir()
    os.chown(project, host_user.uid, host_user.uid)
    job = _submit_from(cluster, token, project, "mkdir results && pwd && id -G && echo $HOME")
    assert cluster.job(job)["state"] == "COMPLETED", _shown(cluster, job)
    assert (project / "results").is_dir()
    assert (project / "results").stat().st_uid == host_user.uid
    out = project / f"slurm-{job}.out"
    assert out.stat().st_uid == host_user.uid
    cwd, groups, home = out.read_text().splitlines()
    assert cwd == str(project)
    assert groups.split() == [str(host_user.uid), str(host_user.extra_gid)]
    assert home == str(host_user.home)
    assert cluster.cli("glogs", job, check=True).stdout == out.read_text()


@pytest.fixture
def outside() -> Iterator[Path]:
    """A directory every uid can write, outside the cluster's root (the allowed prefix)."""
    path = Path(tempfile.mkdtemp(prefix="rota-outside-"))
    path.chmod(0o777)
    try:
        yield path
    finally:
        shutil.rmtree(path)


def test_a_submit_dir_outside_allowed_mounts_is_never_mounted_nor_written(
    cluster: Cluster, host_user: HostUser, outside: Path
) -> None:
    cluster.start_scheduler()
    cluster.start_agent("n1", 1)
    token = cluster.add_user(host_user.name)
    (outside / "data.txt").write_text("outside the allowed prefix\n")
    job = _submit_from(cluster, token, outside, "echo cwd=$(pwd); cat data.txt; echo home=$HOME")
    assert cluster.job(job)["state"] == "COMPLETED"  # the last command is echo
    assert sorted(p.name for p in outside.iterdir()) == ["data.txt"]  # no slurm-N.out
    logs = cluster.cli("glogs", job, check=True).stdout
    assert "cwd=/\n" in logs and "outside the allowed prefix" not in logs
    assert f"home={host_user.home}" in logs  # the home is still allowed and mounted
    shown = _shown(cluster, job)
    assert f"submit directory {outside} not mounted" in shown
    assert "allowed_mounts" in shown and "no default output file" in shown


def test_a_submit_dir_the_user_cannot_reach_is_not_mounted(
    cluster: Cluster, host_user: HostUser
) -> None:
    """Under the allowed prefix, but inside another user's 0700 directory: the node reaches it
    as the job's user, so neither the mount nor the default output file gets there."""
    cluster.start_scheduler()
    cluster.start_agent("n1", 1)
    token = cluster.add_user(host_user.name)
    private = cluster.root / "someone-else"
    private.mkdir(mode=0o700)
    inner = private / "project"
    inner.mkdir(mode=0o777)
    (inner / "secret.txt").write_text("not for you\n")
    job = _submit_from(cluster, token, inner, "echo cwd=$(pwd); cat secret.txt")
    assert cluster.job(job)["state"] == "FAILED"
    logs = cluster.cli("glogs", job, check=True).stdout
    assert "cwd=/\n" in logs and "not for you" not in logs
    assert sorted(p.name for p in inner.iterdir()) == ["secret.txt"]
    shown = _shown(cluster, job)
    assert f"submit directory {inner} not mounted" in shown
    assert "Permission denied" in shown


def test_rota_up_allows_your_home_for_output_files_and_submit_dirs(
    cluster: Cluster, outside: Path
) -> None:
    """``rota up`` with HOME at ``outside`` (a writable directory outside the cluster's root):
    ``-o`` there is accepted and a script submitted from there runs there."""
    project = outside / "project"
    project.mkdir()
    project.chmod(0o777)  # the job of root runs as nobody
    up = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rota.cli.rota_main",
            "up",
            "--port",
            str(cluster.port),
            "--simulate-gpus",
            "1",
            "--node",
            cluster.node_name("up"),
            "--data-dir",
            str(cluster.root / "up"),
            "--http-port",
            str(free_port()),
        ],
        env={**cluster.env, "HOME": str(outside)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_for(lambda: cluster.node(cluster.node_name("up")), 30, what="rota up")
        script = project / "job.sh"
        script.write_text(SCRIPT.format(body="pwd"))
        done = cluster.cli(
            "gsub", "--wait", "--parsable", "-e", "err-%j.txt", str(script), cwd=project
        )
        job = done.stdout.strip().splitlines()[0]
        assert done.returncode == 0, _shown(cluster, job)
        assert (project / f"slurm-{job}.out").read_text() == f"{project}\n"
        assert (project / f"err-{job}.txt").exists()
    finally:
        up.send_signal(2)  # Ctrl-C
        up.wait(timeout=30)
