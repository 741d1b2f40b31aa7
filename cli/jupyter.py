"""``grun --jupyter``: JupyterLab in an interactive session, its port forwarded to this machine
and its URL (with a random token) printed. Runs until Ctrl-C (which ends the session) or
until the job ends."""

from __future__ import annotations

import os
import secrets
import socket
import threading
import time
import urllib.error
import urllib.request
from typing import TYPE_CHECKING

from rota.cli.errors import CliError
from rota.cli.session import say

if TYPE_CHECKING:
    from rota.cli.client import Client
    from rota.cli.http_client import HttpClient
    from rota.jobspec import JobSpec

JUPYTER_PORT = 8888  # inside the job's container
WAIT_FOR_LAB = 300.0  # seconds JupyterLab may take to answer once the job runs


def jupyter_command() -> tuple[str, tuple[str, ...]]:
    """A random token and the command that starts JupyterLab with it."""
    token = secrets.token_hex(24)
    return token, (
        "jupyter",
        "lab",
        "--no-browser",
        "--ip=127.0.0.1",
        f"--port={JUPYTER_PORT}",
        f"--ServerApp.token={token}",
    )


def run_jupyter(
    client: Client, spec: JobSpec, token: str, local_port: int, http: HttpClient | None = None
) -> int:
    """Submit the lab, forward its port (through ``http``'s raw path when it answers) and
    print its URL; until the job ends or Ctrl-C (which cancels it)."""
    from rota.cli.client import current_user, state_of
    from rota.cli.forward import serve_connections

    job_id = (
        client.submit([(os.urandom(16).hex(), "grun", spec)], current_user()).jobs[0].job_ids[0]
    )
    try:
        shown = ""
        while (state := state_of(job := client.get_job(job_id)).value) != "RUNNING":
            if state not in ("PENDING", "CONFIGURING"):
                raise CliError(f"job {job_id} ended {state}: {job.reason}", 1)
            if state == "PENDING" and job.reason != shown:
                shown = job.reason
                say("grun", f"job {job_id} queued and waiting for resources ({shown})")
            time.sleep(0.5)
        listener = socket.create_server(("127.0.0.1", local_port))
        opening = {"job_id": job_id, "kind": "forward", "port": JUPYTER_PORT}
        port = listener.getsockname()[1]
        threading.Thread(
            target=serve_connections, args=(client, listener, opening, http), daemon=True
        ).start()
        url = f"http://127.0.0.1:{port}/lab?token={token}"
        _wait_for_lab(client, job_id, f"http://127.0.0.1:{port}/lab")
        print(f"JupyterLab of job {job_id}: {url}", flush=True)
        say("grun", "Ctrl-C ends the session")
        while state_of(client.get_job(job_id)).value == "RUNNING":
            time.sleep(2)
        return 0
    except KeyboardInterrupt:
        client.cancel_jobs([job_id], current_user())
        say("grun", f"cancelled job {job_id}")
        return 130


def _wait_for_lab(client: Client, job_id: str, url: str) -> None:
    from rota.cli.client import state_of

    deadline = time.monotonic() + WAIT_FOR_LAB
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url, timeout=5).close()
            return
        except urllib.error.HTTPError:
            return  # it answers (a login page or a refusal is an answer)
        except OSError:
            if state_of(client.get_job(job_id)).value != "RUNNING":
                raise CliError(f"job {job_id} ended before JupyterLab answered", 1) from None
            time.sleep(1)
    raise CliError(f"JupyterLab in job {job_id} did not answer within {WAIT_FOR_LAB:.0f}s", 1)
