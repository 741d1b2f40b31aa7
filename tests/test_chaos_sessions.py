"""Interactive sessions through restarts, with real processes (issue: the rota rule "no
acknowledged job is ever lost" for the newest features). A ``grun --pty sh`` driven through a
pseudo-terminal:

- the scheduler ``kill -9``ed and started again on the same port: grun reaches it again and
  the same shell goes on (its variables kept), nothing of its earlier output shown twice;
- the agent ``kill -9``ed and started again (the container runs on under Docker): the
  scheduler opens the session again once the node is back, and the shell goes on (a
  gattach's command, the agent's own, ends saying so);
- the scheduler gone for longer than grun's ``--reconnect``: grun says so and exits 255, the
  job runs on, and the shell is still there for ``gattach``;
- a grun still waiting for its job waits on through a scheduler ``kill -9``;
- a piped grun (a gap in its output would go unseen) and a gattach end 255 at once; the job
  goes on without them (its piped input ended, so its ``cat`` ends: COMPLETED, recorded).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.cluster import TEST_IMAGE, Cluster
from tests.faults_support import config_file, restart_scheduler
from tests.terminal import Terminal

pytestmark = pytest.mark.docker


def _session(cluster: Cluster, *flags: str) -> tuple[tuple[str, ...], Terminal]:
    """A scheduler, one agent and a grun shell holding a variable; the scheduler's args."""
    args = ("--config", config_file(cluster), "--open-registration")
    cluster.start_scheduler(*args)
    cluster.start_agent("n1", gpus=1)
    argv = ["-m", "rota.cli.grun", "--image", TEST_IMAGE, *flags, "--pty", "sh"]
    term = Terminal(argv, cluster.env)
    term.expect(b"$ ")
    term.send(b"X=kept-$((6*7)); echo set-$X\r")
    term.expect(b"set-kept-42")
    term.expect(b"$ ")
    return args, term


def test_grun_goes_on_with_the_same_shell_after_a_scheduler_kill_9(cluster: Cluster) -> None:
    args, term = _session(cluster)
    try:
        cluster.kill("scheduler")
        term.expect(b"grun: lost the scheduler at " + cluster.address.encode())
        restart_scheduler(cluster, *args)
        term.expect(b"grun: the scheduler is back: job 1 goes on")
        term.send(b"echo again-$X\r")
        shown = term.expect(b"again-kept-42")
        assert b"set-kept-42" not in shown, "the session's output was shown twice"
        (job,) = cluster.jobs()
        assert (job["state"], job["attempt"], job["interactive"]) == ("RUNNING", 1, True)
        term.send(b"exit 4\r")
        assert term.wait() == 4
    finally:
        term.close()
    assert cluster.wait_state("1", "FAILED")["exit_code"] == 4


def test_the_session_is_opened_again_after_an_agent_kill_9(cluster: Cluster) -> None:
    _, term = _session(cluster)
    try:
        (container,) = cluster.containers(all_states=False)
        shell = _spawn(cluster, "rota.cli.gattach", "1", "sh", "-c", "echo in; cat")
        assert shell.stdout is not None and shell.stdout.readline() == b"in\n"
        cluster.kill("agent-n1")
        term.expect(b"is not connected; waiting for it (job 1 runs on)")
        _, err = shell.communicate(timeout=30)  # a command of the agent's own: gone with it
        assert shell.returncode == 1
        assert b"disconnected while sending output: the session is lost; job 1 runs on" in err
        assert cluster.containers(all_states=False) == [container]
        cluster.start_agent("n1", gpus=1)
        term.expect(b"rota: node " + cluster.node_name("n1").encode() + b" is back")
        term.send(b"echo again-$X\r")
        shown = term.expect(b"again-kept-42")
        assert b"set-kept-42" not in shown, "the session's output was shown twice"
        (job,) = cluster.jobs()
        assert (job["state"], job["attempt"]) == ("RUNNING", 1)
        term.send(b"exit 0\r")
        assert term.wait() == 0
    finally:
        term.close()
    assert cluster.wait_state("1", "COMPLETED")["exit_code"] == 0


def test_grun_exits_255_when_the_scheduler_stays_away_and_the_job_runs_on(
    cluster: Cluster,
) -> None:
    args, term = _session(cluster, "--reconnect", "1")
    try:
        cluster.kill("scheduler")
        assert term.wait(30) == 255
        assert b"the scheduler did not answer again within 1 s; job 1 runs on" in term.seen
    finally:
        term.close()
    restart_scheduler(cluster, *args)
    assert cluster.wait_state("1", "RUNNING")["attempt"] == 1
    shell = cluster.cli("gattach", "1", "sh", "-c", "ps | grep -c '[s]h$'")
    assert shell.returncode == 0 and int(shell.stdout) >= 1, shell  # grun's shell is still there
    assert cluster.cli("gcancel", "1").returncode == 0
    assert cluster.wait_state("1", "CANCELLED")["state"] == "CANCELLED"


def test_piped_grun_and_gattach_end_255_when_the_scheduler_dies_and_the_job_is_kept(
    cluster: Cluster,
) -> None:
    args = ("--config", config_file(cluster), "--open-registration")
    cluster.start_scheduler(*args)
    cluster.start_agent("n1", gpus=1)
    piped = _spawn(cluster, "rota.cli.grun", "--image", TEST_IMAGE, "sh", "-c", "echo up; cat")
    assert piped.stdout is not None and piped.stdout.readline() == b"up\n"
    attached = _spawn(cluster, "rota.cli.gattach", "1", "sh", "-c", "echo in; cat")
    assert attached.stdout is not None and attached.stdout.readline() == b"in\n"
    cluster.kill("scheduler")
    for proc in (piped, attached):
        _, err = proc.communicate(timeout=30)  # at once: a gap in piped output goes unseen
        assert proc.returncode == 255, err
        assert f"error: lost the scheduler at {cluster.address}".encode() in err
        assert b"the session is lost; job 1 goes on without it" in err
    restart_scheduler(cluster, *args)
    job = cluster.wait_state("1", "COMPLETED", "FAILED")
    assert (job["state"], job["exit_code"], job["attempt"]) == ("COMPLETED", 0, 1)


def _spawn(cluster: Cluster, module: str, *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", module, *args],
        env=cluster.env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def test_a_pending_grun_waits_on_through_a_scheduler_kill_9(cluster: Cluster) -> None:
    args = ("--config", config_file(cluster), "--open-registration")
    cluster.start_scheduler(*args)
    cluster.start_agent("n1", gpus=1)
    holder = cluster.submit(
        f"image: {TEST_IMAGE}\ncommand: [sleep, '600']\nresources: {{gpus: 1}}\n"
    )
    cluster.wait_state(holder, "RUNNING")
    argv = ["-m", "rota.cli.grun", "--image", TEST_IMAGE, "--gpus", "1", "--pty", "sh"]
    term = Terminal(argv, cluster.env)
    try:
        term.expect(b"grun: job 2 queued and waiting for resources")
        cluster.kill("scheduler")
        term.expect(b"grun: lost the scheduler at ")
        restart_scheduler(cluster, *args)
        term.expect(b"grun: the scheduler is back: job 2 goes on")
        assert cluster.job("2")["state"] == "PENDING"
        assert cluster.cli("gcancel", holder).returncode == 0
        term.expect(b"grun: job 2 has been allocated resources")
        term.expect(b"$ ")
        term.send(b"exit 0\r")
        assert term.wait() == 0
    finally:
        term.close()
    assert cluster.wait_state("2", "COMPLETED")["attempt"] == 1
