"""Issue 25 end to end: grun's sessions through real scheduler and agent processes and real
containers, driven through a pseudo-terminal and through pipes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.cluster import TEST_IMAGE, Cluster
from tests.terminal import Terminal


def grun(cluster: Cluster, *args: str) -> list[str]:
    return ["-m", "rota.cli.grun", "--image", TEST_IMAGE, *args]


def interrupt(term: Terminal, probe: bytes, mark: bytes) -> bytes:
    """Ctrl-C, then the command ``probe`` typed, until ``mark`` (which ``probe`` prints, but
    whose echo does not show) appears; what ``probe`` printed before ``mark``. A Ctrl-C
    pressed before the shell made the sleep the terminal's foreground reaches the shell,
    which ignores it (as at any terminal), and the typed probe then waits behind the sleep
    until a later Ctrl-C kills it and flushes the line: so ``mark`` proves the sleep ended."""
    for _ in range(20):
        term.send(b"\x03")
        term.send(probe + b"\r")
        try:
            return term.expect(mark, timeout=3).rpartition(probe)[2]
        except AssertionError:
            continue
    raise AssertionError(f"Ctrl-C did not interrupt the sleep; saw {term.seen!r}")


def test_grun_pty_shell_prompt_resize_ctrl_c_and_exit_code(cluster: Cluster) -> None:
    cluster.start_scheduler()
    cluster.start_agent("n1", gpus=1)
    term = Terminal(grun(cluster, "--gpus", "1", "--pty", "sh"), cluster.env, rows=24, cols=80)
    try:
        term.expect(b"$ ")  # the shell's prompt, from inside the job's container
        jobs = [j for j in cluster.jobs() if j["state"] == "RUNNING"]
        assert [j["interactive"] for j in jobs] == [True]
        assert jobs[0]["gpus"] == 1
        term.send(b"stty size\r")
        term.expect(b"24 80")
        term.resize(40, 132)
        term.send(b"stty size\r")
        term.expect(b"40 132")
        term.send(b"sleep 1000\r")
        term.expect(b"sleep 1000")
        # Ctrl-C: SIGINT to the sleep in the container, not to grun
        interrupt(term, b"echo after-$((6*7))", b"after-42")
        term.send(b"exit 3\r")
        assert term.wait() == 3
    finally:
        term.close()
    job = cluster.wait_state(jobs[0]["id"], "FAILED")
    assert job["exit_code"] == 3


def test_grun_pipes_stdin_stdout_stderr_and_exit_code(cluster: Cluster) -> None:
    cluster.start_scheduler()
    cluster.start_agent("n1", gpus=1)
    data = os.urandom(10 * 2**20)  # issue 25: piping mode round-trips 10 MB
    result = subprocess.run(
        [sys.executable, *grun(cluster, "sh", "-c", "cat; echo done >&2; exit 5")],
        input=data,
        capture_output=True,
        env=cluster.env,
        timeout=120,
    )
    assert result.stderr.decode().endswith("done\n"), result.stderr
    assert result.returncode == 5
    assert result.stdout == data
    (job,) = json.loads(cluster.cli("gqueue", "-t", "all", "--json", check=True).stdout)
    assert job["interactive"] is True
    assert cluster.wait_state(job["id"], "FAILED")["exit_code"] == 5


def _state(pid: int) -> str:
    """The process state letter of ``pid`` (``T``: stopped)."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rpartition(")")[2].split()[0]


def test_grun_pty_ctrl_z_stops_the_job_not_grun(cluster: Cluster) -> None:
    cluster.start_scheduler()
    cluster.start_agent("n1", gpus=1)
    term = Terminal(grun(cluster, "--gpus", "1", "--pty", "sh"), cluster.env)
    try:
        term.expect(b"$ ")
        term.send(b"sleep 300\r")
        term.expect(b"sleep 300")
        # Until the shell has made the sleep the foreground (as interrupt), one key at a time
        # and long apart: a second Ctrl-Z sent while a slow machine had not yet shown the
        # first one's "Stopped" would be typed at the prompt and stop the sleep again at `fg`.
        for _ in range(6):
            term.send(b"\x1a")
            try:
                term.expect(b"Stopped", timeout=10)
                break
            except AssertionError:
                continue
        else:
            raise AssertionError(f"Ctrl-Z did not stop the sleep; saw {term.seen!r}")
        stopped = term.expect(b"$ ")
        assert b"sleep 300" in stopped, stopped
        assert _state(term.pid) != "T", "Ctrl-Z went to the job, not to grun"
        term.send(b"jobs\r")
        term.expect(b"jobs\r\n")
        assert b"Stopped" in term.expect(b"$ ")
        # the sleep, in the foreground again, ends on Ctrl-C; a Ctrl-C that a slow machine's
        # shell took while still running `fg` interrupts the shell's `fg` instead (the sleep
        # stays stopped, as at any terminal): then `fg` is typed again
        for _ in range(5):
            term.send(b"fg\r")
            term.expect(b"sleep 300")
            after = interrupt(term, b"echo status-$?; jobs; echo listed-$((1+1))", b"listed-2")
            if b"Stopped" not in after:
                break
        assert b"status-130" in after and b"sleep" not in after, after
        term.send(b"exit 0\r")
        assert term.wait() == 0
    finally:
        term.close()
