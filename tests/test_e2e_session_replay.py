"""A session's terminal output while no client is attached is kept on the node and shown when
a client comes back, once (docs/interactive.md, "Detach and attach again"), with real
processes, Docker containers and a ``grun --pty sh`` driven through a pseudo-terminal:

- the scheduler ``kill -9``ed while the shell prints: grun, back, shows what it missed;
- the agent ``kill -9``ed while the shell prints: the restarted agent's terminal starts
  where the client's output stopped;
- grun gone for good (255): ``grun --attach`` shows the session's last output and goes on
  with the same shell, recorded in the job's events and the audit log;
- the terminal window closed (grun hung up): the session runs on and ``grun --attach`` goes
  back to it;
- ``~.`` detaches, another user may not attach, a second ``grun --attach`` takes the
  terminal over (the first is told so), and the session's exit code ends the last one.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.cluster import TEST_IMAGE, Cluster, wait_for
from tests.faults_support import config_file, restart_scheduler
from tests.terminal import Terminal

pytestmark = pytest.mark.docker


def _session(
    cluster: Cluster, env: dict[str, str], *flags: str
) -> tuple[tuple[str, ...], Terminal]:
    """A scheduler, one agent and a grun shell holding a variable; the scheduler's args."""
    args = ("--config", config_file(cluster), "--open-registration")
    cluster.start_scheduler(*args)
    cluster.start_agent("n1", gpus=1)
    argv = ["-m", "rota.cli.grun", "--image", TEST_IMAGE, *flags, "--pty", "sh"]
    term = Terminal(argv, {**cluster.env, **env})
    term.expect(b"$ ")
    term.send(b"X=kept-$((6*7)); echo set-$X\r")
    term.expect(b"set-kept-42")
    term.expect(b"$ ")
    return args, term


def _written(cluster: Cluster, text: bytes) -> None:
    """Wait until the session's process wrote ``text`` (the engine's log of its container)."""

    def logged() -> bool:
        (name,) = cluster.containers(all_states=False)
        out = subprocess.run(["docker", "logs", name], capture_output=True, check=True)
        return text in out.stdout

    wait_for(logged, 30, interval=0.2, what=f"{text!r} written")


def _go(cluster: Cluster) -> None:
    """Let the session's shell print what it waits to print (``WAIT``): the test decides when,
    so that no client is attached then, whatever a loaded machine's pace."""
    (name,) = cluster.containers(all_states=False)
    subprocess.run(["docker", "exec", "-u", "0", name, "touch", "/go"], check=True)


WAIT = b"until [ -e /go ]; do sleep 0.1; done"


def _attach(cluster: Cluster, env: dict[str, str]) -> Terminal:
    return Terminal(["-m", "rota.cli.grun", "--attach", "1"], {**cluster.env, **env})


def test_grun_shows_what_the_shell_wrote_while_the_scheduler_was_away(cluster: Cluster) -> None:
    args, term = _session(cluster, {})
    try:
        term.send(WAIT + b"; echo missed-$((6*7))\r")
        term.expect(b"echo missed-$((6*7))")  # the typed line's echo; its output comes later
        cluster.kill("scheduler")
        term.expect(b"grun: lost the scheduler at ")
        _go(cluster)
        _written(cluster, b"missed-42")
        restart_scheduler(cluster, *args)
        before = term.expect(b"grun: the scheduler is back: job 1 goes on")
        assert b"missed-42" not in before
        term.expect(b"missed-42")
        term.send(b"echo next-$X\r")
        after = term.expect(b"next-kept-42")
        assert b"missed-42" not in after and b"set-kept-42" not in after, "shown twice"
        term.send(b"exit 3\r")
        assert term.wait() == 3
    finally:
        term.close()
    assert cluster.wait_state("1", "FAILED")["exit_code"] == 3


def test_a_restarted_agent_sends_what_the_shell_wrote_while_it_was_away(cluster: Cluster) -> None:
    _, term = _session(cluster, {})
    try:
        term.send(WAIT + b"; echo missed-$((6*7))\r")
        term.expect(b"echo missed-$((6*7))")
        cluster.kill("agent-n1")
        term.expect(b"is not connected; waiting for it (job 1 runs on)")
        _go(cluster)
        _written(cluster, b"missed-42")
        cluster.start_agent("n1", gpus=1)
        term.expect(b"rota: node " + cluster.node_name("n1").encode() + b" is back")
        term.expect(b"missed-42")
        term.send(b"echo next-$X\r")
        after = term.expect(b"next-kept-42")
        assert b"missed-42" not in after and b"set-kept-42" not in after, "shown twice"
        term.send(b"exit 0\r")
        assert term.wait() == 0
    finally:
        term.close()
    assert cluster.wait_state("1", "COMPLETED")["exit_code"] == 0


def test_grun_attach_goes_back_to_a_session_grun_lost(cluster: Cluster) -> None:
    args, term = _session(cluster, {}, "--reconnect", "1")
    try:
        term.send(WAIT + b"; echo while-away-$((6*7))\r")
        term.expect(b"echo while-away-$((6*7))")
        cluster.kill("scheduler")
        assert term.wait(30) == 255
        assert b"(grun --attach 1 goes back to its terminal)" in term.seen
    finally:
        term.close()
    _go(cluster)
    _written(cluster, b"while-away-42")
    restart_scheduler(cluster, *args)
    back = _attach(cluster, {})
    try:
        back.expect(b"while-away-42")  # the kept tail: what nobody saw
        back.send(b"echo again-$X\r")
        back.expect(b"again-kept-42")  # the same shell
        back.send(b"exit 6\r")
        assert back.wait() == 6
    finally:
        back.close()
    assert cluster.wait_state("1", "FAILED")["exit_code"] == 6
    shown = cluster.cli("gcontrol", "show", "job", "1", check=True).stdout
    assert "grun attach by " in shown
    assert "Interact/attach" in cluster.cli("gadmin", "audit", check=True).stdout


def test_detach_with_tilde_dot_and_a_second_attach_takes_the_terminal_over(
    cluster: Cluster,
) -> None:
    args = ("--config", config_file(cluster), "--open-registration")
    cluster.start_scheduler(*args)
    cluster.start_agent("n1", gpus=1)
    alice, bob = cluster.add_user("alice"), cluster.add_user("bob")
    argv = ["-m", "rota.cli.grun", "--image", TEST_IMAGE, "--pty", "sh"]
    term = Terminal(argv, {**cluster.env, "ROTA_TOKEN": alice})
    try:
        term.expect(b"$ ")
        term.send(b"X=mine; (" + WAIT + b"; echo later-$((6*7))) &\r")
        term.expect(b"$ ")
        term.send(b"\r~.")
        assert term.wait() == 0
        assert b"grun: detached from job 1 (it runs on; grun --attach 1 goes back)" in term.seen
    finally:
        term.close()
    assert cluster.job("1")["state"] == "RUNNING"
    _go(cluster)
    _written(cluster, b"later-42")
    theirs = subprocess.run(
        [sys.executable, "-m", "rota.cli.grun", "--attach", "1", "--no-pty"],
        env={**cluster.env, "ROTA_TOKEN": bob},
        capture_output=True,
        timeout=60,
    )
    assert theirs.returncode == 1
    assert b"belongs to alice; only its owner or an admin" in theirs.stderr
    first = _attach(cluster, {"ROTA_TOKEN": alice})
    second: Terminal | None = None
    try:
        first.expect(b"later-42")
        first.send(b"echo first-$X\r")
        first.expect(b"first-mine")
        second = _attach(cluster, {"ROTA_TOKEN": alice})
        first.expect(b"grun: detached: another client attached")
        assert first.wait() == 0
        second.expect(b"first-mine")  # the kept tail
        second.send(b"echo second-$X\r")
        second.expect(b"second-mine")
        second.send(b"exit 5\r")
        assert second.wait() == 5
    finally:
        first.close()
        if second is not None:
            second.close()
    assert cluster.wait_state("1", "FAILED")["exit_code"] == 5


def test_grun_attach_to_a_piped_session_gives_no_earlier_output(cluster: Cluster) -> None:
    cluster.start_scheduler()
    cluster.start_agent("n1", gpus=1)
    script = "echo early-line; while :; do sleep 0.5; echo late-line; done"  # till cancelled
    first = subprocess.Popen(
        [sys.executable, "-m", "rota.cli.grun", "--image", TEST_IMAGE, "sh", "-c", script],
        env=cluster.env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert first.stdout is not None and first.stdout.readline() == b"early-line\n"
    first.kill()
    first.wait()
    again = subprocess.Popen(
        [sys.executable, "-m", "rota.cli.grun", "--attach", "1"],
        env=cluster.env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert again.stdout is not None and again.stdout.readline() == b"late-line\n"
    finally:
        again.kill()
        again.wait()
        cluster.cli("gcancel", "1")


def test_closing_the_terminal_window_leaves_the_session_running(cluster: Cluster) -> None:
    """The window grun ran in is closed (its terminal hangs up, grun gets SIGHUP): as with
    ``~.``, the session runs on with its shell, and ``grun --attach`` goes back to it."""
    _, term = _session(cluster, {})
    term.send(b"(sleep 2; echo after-hangup-$((6*7))) &\r")
    term.expect(b"$ ")
    os.close(term.fd)  # the window closes: the kernel hangs the terminal up
    wait_for(lambda: os.waitpid(term.pid, os.WNOHANG)[0], 30, what="grun ended by the hang-up")
    _written(cluster, b"after-hangup-42")
    assert cluster.job("1")["state"] == "RUNNING"
    back = _attach(cluster, {})
    try:
        back.expect(b"after-hangup-42")  # what the shell wrote after the window closed
        back.send(b"echo again-$X\r")
        back.expect(b"again-kept-42")
        back.send(b"exit 3\r")
        assert back.wait() == 3
    finally:
        back.close()
    assert cluster.wait_state("1", "FAILED")["exit_code"] == 3
