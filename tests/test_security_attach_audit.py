"""Eighth attack: an attach to a grun session's terminal by someone other than its owner is
recorded, however it asks for the output (real scheduler, agent, Docker and grun)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.cluster import TEST_IMAGE, Cluster
from tests.faults_support import config_file
from tests.terminal import Terminal

pytestmark = pytest.mark.docker

# An admin's client asking for the terminal from byte 0, as grun's own reconnect does.
_ATTACH = """
import threading
from rota.cli.client import connect
done = threading.Event()
with connect(None) as client:
    opening = client.interact_request(
        job_id="1", kind="attach", tty=True, rows=24, cols=80, replay="from", resume_from=0
    )

    def inputs():
        yield opening
        done.wait(60)

    call = client.interact(inputs())
    seen = b""
    for reply in call:
        seen += reply.data
        if b"secret-42" in seen:
            call.cancel()
            break
done.set()
print("read" if b"secret-42" in seen else "nothing")
"""


def test_an_admin_taking_over_a_users_terminal_is_recorded(cluster: Cluster) -> None:
    """An attach with ``replay`` "from" (grun's reconnect) or none (the dashboard's attach)
    was recorded only when it asked for the kept tail: an admin took alice's terminal over,
    read the output kept on the node (64 KiB) and typed into her shell, and neither the job's
    events nor the audit log said so. Now an attach by anyone but the job's owner is."""
    cluster.start_scheduler("--config", config_file(cluster), "--open-registration")
    cluster.start_agent("n1", gpus=1)
    alice = cluster.add_user("alice")
    argv = ["-m", "rota.cli.grun", "--image", TEST_IMAGE, "--pty", "sh"]
    term = Terminal(argv, {**cluster.env, "ROTA_TOKEN": alice})
    try:
        term.expect(b"$ ")
        term.send(b"echo secret-$((6*7))\r")
        term.expect(b"secret-42")
        term.expect(b"$ ")
        done = subprocess.run(
            [sys.executable, "-c", _ATTACH],
            env=cluster.env,
            capture_output=True,
            timeout=60,
        )
        assert done.stdout.strip() == b"read", done.stderr
        term.expect(b"another client attached")
    finally:
        term.close()
    shown = cluster.cli("gcontrol", "show", "job", "1", check=True).stdout
    assert "grun attach by " in shown
    audit = cluster.cli("gadmin", "audit", check=True).stdout
    assert "Interact/attach" in audit


def test_an_attach_to_a_batch_job_or_another_users_session_is_refused(cluster: Cluster) -> None:
    """Held: ``grun --attach`` of a batch job is refused as no grun session (gattach opens a
    shell in it), and of another user's job as theirs, whatever ``replay`` asks."""
    cluster.start_scheduler("--config", config_file(cluster), "--open-registration")
    cluster.start_agent("n1", gpus=1)
    bob = cluster.add_user("bob")
    cluster.submit(f"image: {TEST_IMAGE}\ncommand: [sleep, '60']\n")
    cluster.wait_state("1", "RUNNING")
    attach = [sys.executable, "-m", "rota.cli.grun", "--attach", "1", "--no-pty"]
    batch = subprocess.run(attach, env=cluster.env, capture_output=True, timeout=60)
    assert batch.returncode != 0
    assert b"is a batch job, not a grun session" in batch.stderr
    code = _ATTACH.replace('replay="from", resume_from=0', 'replay="from", resume_from=2**63 - 1')
    theirs = subprocess.run(
        [sys.executable, "-c", code],
        env={**cluster.env, "ROTA_TOKEN": bob},
        capture_output=True,
        timeout=60,
    )
    assert theirs.returncode != 0 and b"belongs to" in theirs.stderr, theirs.stderr[-300:]
