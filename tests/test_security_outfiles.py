"""Issue 22, the job's output files, as the attacks on a live cluster (real scheduler, agent
running as root, Docker): a job's ``-o``/``-e`` files are opened as the job's uid, never follow
a symbolic link, never block on a FIFO, and hold at most the agent's ``--max-output``."""

from __future__ import annotations

import os
import stat
import time
import uuid
from pathlib import Path

import pytest

from rota.agent.runtime.docker_runtime import DockerRuntime
from rota.agent.runtime.outfiles import CappedWriter, truncation_note
from rota.agent.runtime.policy import ContainerPolicy
from rota.agent.runtime.useropen import open_as, open_checked
from rota.jobspec import JobSpec, Mount
from rota.messages import AgentEvent, EventKind, LaunchOrder
from tests.cluster import TEST_IMAGE, Cluster, wait_for
from tests.faults_support import config_file

pytestmark = pytest.mark.docker

BOB, ALICE = 46011, 46012
CAP = 1 << 20


def _home(where: Path, name: str, uid: int, mode: int = 0o755) -> Path:
    path = where / name
    path.mkdir()
    os.chown(path, uid, uid)
    path.chmod(mode)
    return path


def _start(cluster: Cluster) -> str:
    """Scheduler and agent (max output 1 MiB) allowing mounts of the cluster's root; bob's
    token."""
    mounts = [str(cluster.root)]
    cluster.start_scheduler(
        "--open-registration", "--config", config_file(cluster, allowed_mounts=mounts)
    )
    cluster.start_agent("n1", 1, "--max-output", "1MiB")
    made = cluster.cli(
        "gadmin", "user", "add", "bob", "--uid", str(BOB), "--gid", str(BOB), "--parsable"
    )
    assert made.returncode == 0, made.stderr
    return made.stdout.strip()


def _submit_as(cluster: Cluster, token: str, command: str, *flags: str, mount: str = "") -> str:
    lines = [f"image: {TEST_IMAGE}", f"command: {command!r}"]
    if mount:
        lines.append(f"mounts: ['{mount}:/w']")
    path = cluster.write_job(f"job-{uuid.uuid4().hex[:6]}.yaml", "\n".join(lines) + "\n")
    saved = cluster.token
    cluster.token = token
    try:
        out = cluster.cli("gsub", "--parsable", *flags, str(path), check=True)
    finally:
        cluster.token = saved
    return out.stdout.strip().splitlines()[0]


def _shown(cluster: Cluster, job: str) -> str:
    return cluster.cli("gcontrol", "show", "job", job, check=True).stdout


def test_a_job_cannot_turn_its_output_file_into_a_link_to_a_root_file(cluster: Cluster) -> None:
    token = _start(cluster)
    bob = _home(cluster.root, "bob", BOB)
    target = cluster.root / "authorized_keys"  # root's, outside every allowed mount
    target.write_text("ssh-ed25519 AAAA admin\n")
    attack = f"rm /w/out.txt; ln -s {target} /w/out.txt; echo ssh-ed25519 EVIL bob"
    job = _submit_as(cluster, token, attack, "-o", str(bob / "out.txt"), mount=str(bob))
    assert cluster.wait_state(job, "COMPLETED", "FAILED")["state"] == "COMPLETED"
    assert target.read_text() == "ssh-ed25519 AAAA admin\n"
    assert target.stat().st_uid == 0
    wait_for(lambda: "not written" in _shown(cluster, job), 60, what="the output note")
    shown = _shown(cluster, job)
    assert f"output file {bob / 'out.txt'} not written: is a symbolic link" in shown


def test_output_cannot_name_another_users_file_or_directory(cluster: Cluster) -> None:
    token = _start(cluster)
    alice = _home(cluster.root, "alice", ALICE, 0o700)
    secret = alice / "secret.txt"
    secret.write_text("alice's secret\n")
    os.chown(secret, ALICE, ALICE)
    secret.chmod(0o600)
    shared = _home(cluster.root, "shared", ALICE, 0o777)  # bob may write here, not alice's file
    notes = shared / "notes.txt"
    notes.write_text("alice's notes\n")
    os.chown(notes, ALICE, ALICE)
    notes.chmod(0o666)
    refused = {
        secret: "Permission denied",
        alice / "x-%j": "Permission denied",
        notes: f"belongs to uid {ALICE}, not the job's uid {BOB}",
    }
    for target, why in refused.items():
        job = _submit_as(cluster, token, "echo gotcha", "-o", str(target))
        failed = cluster.wait_state(job, "FAILED", "COMPLETED")
        assert failed["state"] == "FAILED", target
        assert "output: cannot write" in failed["reason"] and why in failed["reason"], failed
        assert not (alice / f"x-{job}").exists()
    assert secret.read_text() == "alice's secret\n" and secret.stat().st_uid == ALICE
    assert notes.read_text() == "alice's notes\n" and notes.stat().st_uid == ALICE


def test_a_fifo_as_output_fails_the_job_instead_of_hanging(cluster: Cluster) -> None:
    token = _start(cluster)
    bob = _home(cluster.root, "bob", BOB)
    fifo = bob / "fifo"
    os.mkfifo(fifo)
    os.chown(fifo, BOB, BOB)
    job = _submit_as(cluster, token, "echo hi", "-o", str(fifo))
    failed = cluster.wait_state(job, "FAILED", "COMPLETED", timeout=30)
    assert failed["state"] == "FAILED" and "is not a regular file" in failed["reason"]
    # a FIFO put in place while the job runs: the job still ends, with the reason
    swap = "rm /w/late.out; mkfifo /w/late.out; echo hi"
    job = _submit_as(cluster, token, swap, "-o", str(bob / "late.out"), mount=str(bob))
    assert cluster.wait_state(job, "COMPLETED", "FAILED", timeout=30)["state"] == "COMPLETED"
    wait_for(lambda: "is not a regular file" in _shown(cluster, job), 60, what="the note")


def test_output_beyond_the_cap_is_dropped_after_a_marker(cluster: Cluster) -> None:
    token = _start(cluster)
    bob = _home(cluster.root, "bob", BOB)
    out = bob / "big.out"
    job = _submit_as(cluster, token, "yes 0123456789abcdef | head -c 5000000", "-o", str(out))
    assert cluster.wait_state(job, "COMPLETED", "FAILED")["state"] == "COMPLETED"
    marker = b"[rota: output truncated at 1.0 MiB]\n"
    log = cluster.root / f"agent-{cluster.node_name('n1')}" / "logs" / job / "1.log"
    for path in (out, log):
        data = path.read_bytes()
        assert len(data) <= CAP + len(marker) + 1, path
        assert data.endswith(marker) and data.startswith(b"0123456789abcdef\n"), path
    wait_for(lambda: "output truncated at 1.0 MiB" in _shown(cluster, job), 60, what="the note")


def test_a_users_output_file_is_theirs(cluster: Cluster) -> None:
    token = _start(cluster)
    bob = _home(cluster.root, "bob", BOB)
    job = _submit_as(
        cluster,
        token,
        "echo to-out; echo to-err >&2",
        "-o",
        str(bob / "%j.out"),
        "-e",
        str(bob / "%j.err"),
    )
    assert cluster.wait_state(job, "COMPLETED", "FAILED")["state"] == "COMPLETED"
    out, err = bob / f"{job}.out", bob / f"{job}.err"
    assert out.read_text() == "to-out\n" and err.read_text() == "to-err\n"
    for path in (out, err):
        info = path.stat()
        assert (info.st_uid, info.st_gid) == (BOB, BOB)
        assert stat.S_IMODE(info.st_mode) == 0o600


# ---------------------------------------------------------------- the opener itself


def test_the_opener_refuses_links_fifos_and_files_of_others(searchable_dir: Path) -> None:
    bob = _home(searchable_dir, "bob", BOB)
    (bob / "link").symlink_to(searchable_dir)
    (searchable_dir / "rootfile").write_text("root\n")
    (bob / "to-root").symlink_to(searchable_dir / "rootfile")
    os.mkfifo(bob / "fifo")
    os.chown(bob / "fifo", BOB, BOB)
    refused = {
        str(bob / "link" / "rootfile"): "is a symbolic link or not a directory",
        str(bob / "to-root"): "is a symbolic link",
        str(bob / "fifo"): "is not a regular file",
        str(searchable_dir / "rootfile"): "Permission denied",
        str(searchable_dir / "bob" / ".." / "rootfile"): "normalized",
    }
    for path, reason in refused.items():
        with pytest.raises(OSError, match=reason):
            open_as(path, BOB, BOB)
    assert (searchable_dir / "rootfile").read_text() == "root\n"
    fd = open_as(str(bob / "new"), BOB, BOB)
    os.write(fd, b"mine\n")
    os.close(fd)
    assert (bob / "new").read_text() == "mine\n" and (bob / "new").stat().st_uid == BOB
    with pytest.raises(OSError, match=f"belongs to uid {BOB}, not the job's uid 0"):
        open_checked(os.fsencode(bob / "new"), 0)  # root's own opener: bob's file is refused
    assert (bob / "new").read_text() == "mine\n"


def test_the_cap_writes_up_to_the_limit_then_one_marker(tmp_path: Path) -> None:
    path = tmp_path / "out"
    with path.open("wb") as out:
        capped = CappedWriter(out, 10)
        assert capped.write(b"12345") and capped.write(b"67890")
        assert not capped.write(b"abc") and not capped.write(b"def")
    assert path.read_bytes() == b"1234567890\n[rota: output truncated at 10 bytes]\n"
    assert truncation_note(1 << 30) == "[rota: output truncated at 1.0 GiB]"


class _BrokenPolicy(ContainerPolicy):
    def admit(self, order: LaunchOrder) -> tuple[Mount, ...]:
        raise PermissionError(13, "Permission denied", "/srv/unreadable")


def test_an_unexpected_error_on_the_launch_path_fails_the_attempt(
    tmp_path: Path, test_image: str
) -> None:
    events: list[AgentEvent] = []
    runtime = DockerRuntime(
        "n1", tmp_path, events.append, time.time, gpu_mode="env", policy=_BrokenPolicy()
    )
    try:
        spec = JobSpec(image=test_image, command=("true",))
        runtime.launch(LaunchOrder(7, 1, "7", spec, (0,), (), {}, 60.0))
        wait_for(lambda: events, 60, what="the launch's report")
    finally:
        runtime.close()
    (event,) = events
    assert event.kind is EventKind.LAUNCH_FAILED and "Permission denied" in event.message
    assert runtime.gpu_jobs() == {}  # the attempt holds its GPU no more
