"""What the agent reads from a job's step spool, which the job may fill with anything: a
request srun makes is read back exactly; links, FIFOs where files belong, files where FIFOs
belong, bad names and oversized requests are refused, and nothing outside the spool is read
or written."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from rota.agent.steps.spool import MAX_REQUEST, JobSpool, SpoolError
from rota.messages import StepLayout


@pytest.fixture
def spool(tmp_path: Path) -> JobSpool:
    made = JobSpool(tmp_path / "spool", os.getuid(), os.getgid())
    made.create()
    return made


def _request(spool: JobSpool, name: str, *argv: str, opts: str = "", env: bytes = b"") -> Path:
    where = spool.root / "steps" / name
    where.mkdir()
    for i, arg in enumerate(argv):
        (where / f"a.{i}").write_text(arg)
    (where / "opts").write_text(opts)
    (where / "env").write_bytes(env)
    (where / "cwd").write_text("/work\n")
    return where


def test_a_request_is_read_back_exactly(spool: JobSpool) -> None:
    _request(
        spool,
        "s.ok1",
        "python",
        "-c",
        "print('a b')",
        "",
        opts="nodes=2\nntasks=4\n",
        env=b"export A='x y'\n",
    )
    request = spool.read("s.ok1")
    assert request.argv == ("python", "-c", "print('a b')", "")
    assert request.layout == StepLayout(nodes=2, ntasks=4)
    assert (request.environment, request.cwd) == (b"export A='x y'\n", "/work")


def test_links_and_odd_files_are_refused(spool: JobSpool, tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("not yours")
    where = _request(spool, "s.link", "cat")
    (where / "env").unlink()
    (where / "env").symlink_to(secret)
    with pytest.raises(SpoolError, match="env"):
        spool.read("s.link")
    (spool.root / "steps" / "s.dirlink").symlink_to(tmp_path)
    with pytest.raises(SpoolError, match=r"s\.dirlink"):
        spool.read("s.dirlink")
    fifo = _request(spool, "s.fifo", "cat")
    (fifo / "a.0").unlink()
    os.mkfifo(fifo / "a.0")
    with pytest.raises(SpoolError, match="not a regular file"):
        spool.read("s.fifo")  # a FIFO never blocks the agent's read
    with pytest.raises(SpoolError, match="not a FIFO"):
        spool.open_fifo("s.fifo", "cwd", wait=0.1)
    with pytest.raises(SpoolError, match="bad step request name"):
        spool.read("../s.fifo")
    assert secret.read_text() == "not yours"


def test_oversized_or_malformed_requests_are_refused(spool: JobSpool) -> None:
    _request(spool, "s.big", "x", env=b"x" * (MAX_REQUEST + 1))
    with pytest.raises(SpoolError, match="too large"):
        spool.read("s.big")
    _request(spool, "s.opts", "x", opts="ntasks=4; rm -rf /\n")
    with pytest.raises(SpoolError, match="--ntasks needs a positive number"):
        spool.read("s.opts")
    _request(spool, "s.none")
    with pytest.raises(SpoolError, match="1 to 4096 arguments"):
        spool.read("s.none")


def test_output_goes_only_to_a_fifo_someone_reads(spool: JobSpool) -> None:
    where = _request(spool, "s.out", "echo")
    os.mkfifo(where / "out")
    with pytest.raises(SpoolError, match="cannot open the step's out"):
        spool.open_fifo("s.out", "out", wait=0.1)  # nobody reads it: the agent does not wait
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append((where / "out").read_bytes()))
    reader.start()
    fd = spool.open_fifo("s.out", "out")
    os.write(fd, b"hello\n")
    os.close(fd)
    reader.join(5)
    assert got == [b"hello\n"]
