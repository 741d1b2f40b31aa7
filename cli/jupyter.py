"""``grun --jupyter``: JupyterLab in an interactive session, its port forwarded to this machine
and its URL (with a random token) printed. Runs until Ctrl-C (which ends the session) or
until the job ends.

JupyterLab serves under ``/jobs/JOB/app/8888/``, the path the dashboard opens a job's web port
under (``scheduler/web/ports.py``), so the same server answers through the forward and on the
dashboard. It listens on the container's loopback only, which nothing but rota's forward
reaches (both ways check the user's rights), so it accepts any ``Host`` (the dashboard's
name); the token is still required. An image whose ``HOME`` the job's user cannot write (one
built for another user, or none) gets ``HOME=/tmp``: Jupyter keeps its runtime files there."""

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
    """A random token and the command that starts JupyterLab with it (``sh`` finds the job's
    id, for the base URL, in ``ROTA_JOB_ID``)."""
    token = secrets.token_hex(24)
    lab = (
        f"jupyter lab --no-browser --ip=127.0.0.1 --port={JUPYTER_PORT}"
        f" --ServerApp.base_url={base_path('$ROTA_JOB_ID')}"
        f" --ServerApp.allow_remote_access=True --ServerApp.token={token}"
    )
    return token, ("sh", "-c", f'test -w "$HOME" || export HOME=/tmp; exec {lab}')


def base_path(job_id: str) -> str:
    """The path JupyterLab of job ``job_id`` serves under: the dashboard's for its port."""
    return f"/jobs/{job_id}/app/{JUPYTER_PORT}/"


def run_jupyter(
    client: Client, spec: JobSpec, token: str, local_port: int, http: HttpClient | None = None
) -> int:
    """Submit the lab, forward its port (through ``http``'s raw path when it answers) and
    print its URL; until the job ends or Ctrl-C (which cancels it)."""
    from rota.cli.client import current_user, state_of
    from rota.cli.forward import serve_connections

    job_id = (
        client.submit([(os.urandom(16).hex(), "session", spec)], current_user()).jobs[0].job_ids[0]
    )
    try:
        shown = ""
        while (state := state_of(job := client.get_job(job_id)).value) != "RUNNING":
            if state not in ("PENDING", "CONFIGURING"):
                raise _ended(job_id, state, job.reason)
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
        base = f"http://127.0.0.1:{port}{base_path(job_id)}"
        _wait_for_lab(client, job_id, f"{base}api")
        print(f"JupyterLab of job {job_id}: {base}lab?token={token}", flush=True)
        say("grun", f"also on the dashboard: {base_path(job_id)}lab?token={token}")
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
            if (state := state_of(job := client.get_job(job_id)).value) != "RUNNING":
                raise _ended(job_id, state, job.reason) from None
            time.sleep(1)
    raise CliError(f"JupyterLab in job {job_id} did not answer within {WAIT_FOR_LAB:.0f}s", 1)


def _ended(job_id: str, state: str, reason: str) -> CliError:
    """The error for a session that ended before JupyterLab answered."""
    why = f" ({reason})" if reason else ""
    return CliError(
        f"job {job_id} ended {state}{why} before JupyterLab answered; "
        f"`glogs {job_id}` shows its output (the image needs sh and JupyterLab)",
        1,
    )
