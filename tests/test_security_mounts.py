"""Bind mounts without a race (issue 22), with a real scheduler, agent (root) and Docker.

The agent opens a mount's source once, without following any symbolic link, and hands Docker
a private staging bind of what it opened: swapping the directory for a link to ``/etc`` while
jobs start never shows the host's ``/etc`` to a job. A source the agent cannot open (a link
loop) fails the job with a reason naming the mount and frees its GPUs.
"""

from __future__ import annotations

import ctypes
import errno
import os
import subprocess
import threading
from pathlib import Path

import pytest

from rota.agent.runtime.mounts import MountStager
from rota.agent.runtime.useropen import open_no_follow
from rota.allowlists import resolve_mount_source
from rota.inputs import SpecError
from rota.jobspec import Mount
from tests.cluster import TEST_IMAGE, Cluster, wait_for
from tests.faults_support import config_file

pytestmark = pytest.mark.docker

MARKER = "the-real-directory"
TERMINAL = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY")
RENAME_EXCHANGE = 2
AT_FDCWD = -100


def _job(command: str, *extra: str) -> str:
    return "\n".join([f"image: {TEST_IMAGE}", f"command: {command!r}", *extra]) + "\n"


def _reason(cluster: Cluster, job: str) -> str:
    return cluster.cli("gcontrol", "show", "job", job, check=True).stdout


def _staging(cluster: Cluster) -> Path:
    return cluster.root / f"agent-{cluster.node_name('n1')}" / "mounts"


class _Swapper(threading.Thread):
    """Exchanges ``a`` and ``b`` (renameat2 RENAME_EXCHANGE) in a loop until stopped."""

    def __init__(self, a: Path, b: Path) -> None:
        super().__init__(daemon=True)
        self.a, self.b = bytes(a), bytes(b)
        self.done = threading.Event()
        self.swaps = 0

    def run(self) -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        while not self.done.is_set():
            if libc.renameat2(AT_FDCWD, self.a, AT_FDCWD, self.b, RENAME_EXCHANGE) != 0:
                raise OSError(ctypes.get_errno(), "renameat2")
            self.swaps += 1


def test_swapping_the_source_for_a_link_to_etc_never_shows_etc(cluster: Cluster) -> None:
    cluster.start_scheduler("--config", config_file(cluster), "--open-registration")
    cluster.start_agent("n1", 1)
    data = cluster.root / "data"
    data.mkdir()
    (data / "d").mkdir()
    (data / "d" / "marker").write_text(MARKER + "\n")
    (data / "swap").symlink_to("/etc")
    tasks = 16
    swapper = _Swapper(data / "d", data / "swap")
    swapper.start()
    try:
        job = cluster.submit(
            _job(
                "ls /host; cat /host/marker", f"mounts: ['{data}/d:/host']", f"array: 0-{tasks - 1}"
            )
        )
        ids = [f"{job}_{i}" for i in range(tasks)]
        ended = wait_for(
            lambda: (
                all(j["state"] in TERMINAL for j in js) and js
                if len(js := [j for j in cluster.jobs() if j["id"] in ids]) == tasks
                else None
            ),
            60,
            interval=0.5,
            what="every task to end",
        )
    finally:
        swapper.done.set()
        swapper.join(timeout=5)
    assert swapper.swaps > 100
    for task in ended:
        out = cluster.cli("glogs", task["id"]).stdout
        assert "passwd" not in out and "shadow" not in out, (task["id"], out)
        if task["state"] == "COMPLETED":
            assert MARKER in out, (task["id"], out)
        else:
            assert task["state"] == "FAILED", task
            assert "mounts[0].source" in _reason(cluster, task["id"]), task
    assert list(_staging(cluster).iterdir()) == []


def test_a_link_loop_as_the_source_fails_the_job_and_frees_its_gpu(cluster: Cluster) -> None:
    cluster.start_scheduler("--config", config_file(cluster), "--open-registration")
    cluster.start_agent("n1", 1)
    (cluster.root / "a").symlink_to(cluster.root / "b")
    (cluster.root / "b").symlink_to(cluster.root / "a")
    job = cluster.submit(
        _job("ls /host", f"mounts: ['{cluster.root}/a:/host']", "resources: {gpus: 1}")
    )
    assert cluster.wait_state(job, *TERMINAL, timeout=30)["state"] == "FAILED"
    reason = _reason(cluster, job)
    assert "mounts[0].source" in reason and "symbolic links" in reason, reason
    after = cluster.submit(_job("true", "resources: {gpus: 1}"))
    assert cluster.wait_state(after, *TERMINAL, timeout=30)["state"] == "COMPLETED"


def test_a_read_only_mount_is_read_only_in_the_container(cluster: Cluster) -> None:
    """Also: the running container keeps its mounts once the staging entries are gone."""
    cluster.start_scheduler("--config", config_file(cluster), "--open-registration")
    cluster.start_agent("n1", 1)
    shared = cluster.root / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    (shared / "in.txt").write_text("hello\n")
    script = (
        "while [ ! -e /rw/go ]; do sleep 0.1; done; cat /ro/in.txt; "
        "touch /ro/new 2>/dev/null && echo ro-writable; touch /rw/new && echo rw-writable; "
        "cat /file"
    )
    mounts = f"mounts: ['{shared}:/ro:ro', '{shared}:/rw', '{shared}/in.txt:/file:ro']"
    job = cluster.submit(_job(script, mounts))
    cluster.wait_state(job, "RUNNING", *TERMINAL)
    wait_for(lambda: list(_staging(cluster).iterdir()) == [], 30, what="staging emptied")
    (shared / "go").write_text("")
    assert cluster.wait_state(job, *TERMINAL)["state"] == "COMPLETED", _reason(cluster, job)
    out = cluster.cli("glogs", job, check=True).stdout
    assert out.split() == ["hello", "rw-writable", "hello"], out
    assert (shared / "new").exists()
    assert list(_staging(cluster).iterdir()) == []


def test_a_source_that_is_not_a_directory_or_file_is_refused(cluster: Cluster) -> None:
    cluster.start_scheduler("--config", config_file(cluster), "--open-registration")
    cluster.start_agent("n1", 1)
    fifo = cluster.root / "fifo"
    os.mkfifo(fifo)
    job = cluster.submit(_job("true", f"mounts: ['{fifo}:/f']"))
    assert cluster.wait_state(job, *TERMINAL)["state"] == "FAILED"
    assert "mounts[0].source" in _reason(cluster, job)
    assert list(_staging(cluster).iterdir()) == []


def test_a_link_anywhere_in_the_path_is_never_followed(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "f").write_text("x")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    for path, code in (("link/f", errno.ENOTDIR), ("link", errno.ELOOP), ("nope", errno.ENOENT)):
        with pytest.raises(OSError) as info:
            open_no_follow(os.fsencode(tmp_path / path))
        assert info.value.errno == code, path
    fd = open_no_follow(os.fsencode(tmp_path / "real" / "f"))
    try:
        assert os.readlink(f"/proc/self/fd/{fd}") == str(tmp_path / "real" / "f")
    finally:
        os.close(fd)
    stager = MountStager(tmp_path / "mounts")
    with pytest.raises(SpecError, match=r"mounts\[1\]\.source: .* symbolic link"):
        stager.stage(
            "1-1", [Mount(str(tmp_path / "real"), "/a"), Mount(str(tmp_path / "link"), "/b")], 0, 0
        )
    assert list((tmp_path / "mounts").iterdir()) == []


def test_entries_a_crashed_agent_left_are_unmounted_and_removed_not_their_sources(
    tmp_path: Path,
) -> None:
    source = tmp_path / "data"
    source.mkdir()
    (source / "keep").write_text("kept")
    staged = MountStager(tmp_path / "mounts").stage("7-1", [Mount(str(source), "/d", True)], 0, 0)
    assert (Path(staged[0].source) / "keep").read_text() == "kept"
    with pytest.raises(OSError) as info:
        (Path(staged[0].source) / "new").write_text("no")
    assert info.value.errno == errno.EROFS
    MountStager(tmp_path / "mounts")  # the next agent start
    assert list((tmp_path / "mounts").iterdir()) == []
    assert (source / "keep").read_text() == "kept"


def test_a_source_that_cannot_be_resolved_is_refused_by_name(tmp_path: Path) -> None:
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    with pytest.raises(SpecError, match=r"mounts\[0\]\.source: .*symbolic links"):
        resolve_mount_source("mounts[0].source", str(tmp_path / "a"), [str(tmp_path)])


def test_a_source_is_reached_as_the_jobs_user(searchable_dir: Path, tmp_path: Path) -> None:
    """bob (uid 46021) cannot mount a world-readable folder inside alice's 0700 home: the
    source is opened with bob's permissions, as his own shell would reach it."""
    bob, alice = 46021, 46022
    home = searchable_dir / "alice"
    (home / "pub").mkdir(parents=True)
    (home / "pub" / "notes.txt").write_text("alice's\n")
    home.chmod(0o700)
    os.chown(home, alice, alice)
    stager = MountStager(tmp_path / "mounts")
    with pytest.raises(SpecError, match=r"mounts\[0\]\.source: .*Permission denied"):
        stager.stage("3-1", [Mount(str(home / "pub"), "/a", True)], bob, bob)
    assert list((tmp_path / "mounts").iterdir()) == []
    staged = stager.stage("3-1", [Mount(str(home / "pub"), "/a", True)], alice, alice)
    try:
        assert (Path(staged[0].source) / "notes.txt").read_text() == "alice's\n"
    finally:
        stager.release("3-1")


def test_a_read_only_mount_is_read_only_beneath_too(tmp_path: Path) -> None:
    """A file system mounted inside a read-only source (a project's NFS under /data) is
    read-only in the staged mount as well, not only the top of it."""
    source = tmp_path / "data"
    (source / "sub").mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "tmpfs", str(source / "sub")], check=True)
    stager = MountStager(tmp_path / "mounts")
    try:
        staged = Path(stager.stage("4-1", [Mount(str(source), "/d", True)], 0, 0)[0].source)
        for where in (staged / "top", staged / "sub" / "below"):
            with pytest.raises(OSError) as info:
                where.write_text("no")
            assert info.value.errno == errno.EROFS, where
        stager.release("4-1")
        writable = Path(stager.stage("4-2", [Mount(str(source), "/d")], 0, 0)[0].source)
        (writable / "sub" / "below").write_text("yes")
        stager.release("4-2")
    finally:
        subprocess.run(["umount", str(source / "sub")], check=True)
    assert list((tmp_path / "mounts").iterdir()) == []
