"""What the agent reads from a job's step spool, which the job may fill with anything: a
request srun makes is read back exactly; links, FIFOs where files belong, files where FIFOs
belong, bad names and oversized requests are refused, and nothing outside the spool is read
or written."""

from __future__ import annotations

import os
import select
import threading
from pathlib import Path

import pytest

from rota.agent.steps.spool import MAX_REQUEST, MAX_SCRIPT, MAX_VARIABLES, JobSpool, SpoolError
from rota.agent.steps.srun import MAX_BUFFERED, OutputBudget, Srun
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


def test_the_sruns_of_one_attempt_that_never_read_share_one_output_buffer(
    spool: JobSpool,
) -> None:
    """64 sruns whose output nobody reads (``srun yes | sleep 1d``) once held 64 MiB of the
    agent's memory each; the attempt's sruns now share ``MAX_BUFFERED``."""
    budget = OutputBudget()
    readers: list[int] = []
    sruns = []
    for name in ("s.hog", "s.late"):
        where = _request(spool, name, "yes")
        for fifo in ("out", "err"):
            os.mkfifo(where / fifo)
            readers.append(os.open(where / fifo, os.O_RDONLY | os.O_NONBLOCK))
        out, err = spool.open_fifo(name, "out"), spool.open_fifo(name, "err")
        sruns.append(Srun((1, 1), spool, name, out, err, lambda _: None, budget))
    hog, late = sruns
    chunk = b"y" * (1 << 20)
    for _ in range(MAX_BUFFERED // len(chunk)):
        hog.write(chunk)  # the first fills the FIFO, the rest wait in the agent
    late.write(b"late output\n")
    late_out, late_err = readers[2:]
    assert select.select([late_err], [], [], 10)[0] == [late_err]
    assert os.read(late_err, 4096) == (
        b"srun: error: output dropped: srun did not read it fast enough\n"
    )
    with pytest.raises(BlockingIOError):
        os.read(late_out, 4096)
    for srun in sruns:
        srun.finish(1)
    for fd in readers:
        os.close(fd)


def test_an_sbatch_request_is_read_with_its_script_and_refused_when_odd(
    spool: JobSpool, tmp_path: Path
) -> None:
    where = _request(spool, "s.sb1", "-J", "x", "run.sh", "7")
    (where / "script").write_text("#!/bin/sh\necho hi\n")
    (where / "index").write_text("2\n")
    request = spool.read_command("s.sb1")
    assert request.argv == ("-J", "x", "run.sh", "7") and request.script_index == 2
    assert (request.script, request.cwd) == (b"#!/bin/sh\necho hi\n", "/work")
    (where / "index").write_text("9\n")  # past the arguments
    with pytest.raises(SpoolError, match="bad script index"):
        spool.read_command("s.sb1")
    (where / "index").write_text("2\n")
    (where / "script").write_bytes(b"#" * (MAX_SCRIPT + 1))
    with pytest.raises(SpoolError, match=f"script is too large \\(at most {MAX_SCRIPT} bytes"):
        spool.read_command("s.sb1")
    secret = tmp_path / "secret"
    secret.write_text("not yours")
    (where / "script").unlink()
    (where / "script").symlink_to(secret)
    with pytest.raises(SpoolError):
        spool.read_command("s.sb1")


def test_an_sbatch_requests_variables_are_read_bounded(spool: JobSpool) -> None:
    """sbatch's ``--export`` values (``e.0`` ...: NAME=value, newlines kept) are read up to
    the first missing one, at most ``MAX_VARIABLES`` of ``MAX_SCRIPT`` bytes in all."""
    where = _request(spool, "s.env1", "--export=A,B", "--wrap", "true")
    (where / "e.0").write_text("A=two\nlines")
    (where / "e.1").write_text("B=")
    (where / "e.3").write_text("C=after a gap: not read")
    request = spool.read_command("s.env1")
    assert request.environment == (("A", "two\nlines"), ("B", ""))
    (where / "e.2").write_text("no equals sign")
    with pytest.raises(SpoolError, match="expected NAME=value"):
        spool.read_command("s.env1")
    (where / "e.2").write_bytes(b"D=" + b"x" * MAX_SCRIPT)
    with pytest.raises(SpoolError, match=r"e\.2 is too large"):
        spool.read_command("s.env1")
    (where / "e.2").unlink()
    (where / "e.3").unlink()
    for i in range(2, MAX_VARIABLES + 1):
        (where / f"e.{i}").write_text(f"V{i}=1")
    with pytest.raises(SpoolError, match=f"at most {MAX_VARIABLES} variables"):
        spool.read_command("s.env1")


def test_a_request_sent_to_an_earlier_agent_is_released_whole(spool: JobSpool) -> None:
    """An sbatch whose line reached an agent that died before it opened the request's FIFOs
    waits on all three: the next agent closes ``out`` and ``err`` and hands it exit code 1,
    so that the tool (sbatch --wait asks again) never hangs."""
    where = _request(spool, "s.sent1", "4")
    for fifo in ("out", "err", "end"):
        os.mkfifo(where / fifo)
    (where / "sent").touch()
    got: dict[str, bytes] = {}

    def tool() -> None:  # as rota-request: cat out, cat err, then read end
        readers = [
            threading.Thread(target=lambda f=f: got.update({f: (where / f).read_bytes()}))
            for f in ("out", "err")
        ]
        for reader in readers:
            reader.start()
        for reader in readers:
            reader.join()
        got["end"] = (where / "end").read_bytes()

    waiting = threading.Thread(target=tool, daemon=True)
    waiting.start()
    spool.release()
    waiting.join(10)
    assert got == {"out": b"", "err": b"", "end": b"1\n"}
