"""``gsub`` and ``gqueue`` over the scheduler's HTTP API (no grpc imported), end to end: real
command processes against a real scheduler, each asked once over HTTP alone (the gRPC address
then names a port where nothing listens, so only the HTTP API can answer) and once over gRPC
(``ROTA_HTTP=off``); the answers, refusals and exit codes must be the same."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.cluster import Cluster, free_port, fresh_passes

SCRIPT = """#!/bin/sh
#SBATCH --job-name=sweep
#SBATCH --array=0-3
#SBATCH --time=10:00
#ROTA image=busybox
echo "task $SLURM_ARRAY_TASK_ID of $1"
"""
JOB_FILE = "name: plain\nimage: busybox\ncommand: [sh, -c, 'echo hi']\n"
GRPC = {"ROTA_HTTP": "off"}


def _start(root: Path, *tls: str) -> Cluster:
    cluster = Cluster(root)
    http = free_port()
    cluster.env_extra.update(ROTA_HTTP=f"127.0.0.1:{http}", ROTA_DEFAULT_IMAGE="busybox")
    cluster.start_scheduler("--open-registration", "--http-listen", f"127.0.0.1:{http}", *tls)
    return cluster


def _stop(cluster: Cluster) -> None:
    for key in list(cluster.procs):
        cluster.kill(key)


@pytest.fixture
def sched(tmp_path: Path) -> Iterator[Cluster]:
    """A scheduler with its HTTP port and one registered node (no agent: jobs stay pending)."""
    cluster = _start(tmp_path)
    try:
        assert _run(cluster, GRPC, "gadmin", "node", "add", "n1").returncode == 0
        yield cluster
    finally:
        _stop(cluster)


def _http_only(cluster: Cluster) -> dict[str, str]:
    """The environment in which only the HTTP API can answer: no gRPC server at the address."""
    return {"ROTA_SCHEDULER": f"127.0.0.1:{free_port()}"}


def _run(
    cluster: Cluster, env: dict[str, str], command: str, *args: str
) -> subprocess.CompletedProcess[str]:
    """Run a command (``python CMD ...``: under ``python -X importtime``)."""
    timed = ["-X", "importtime"] if command == "python" else []
    if timed:
        command, *args = args
    module = {"rota": "rota_main"}.get(command, command)
    return subprocess.run(
        [sys.executable, *timed, "-m", f"rota.cli.{module}", *args],
        env={**cluster.env, **env},
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cluster.root,
    )


def _both(cluster: Cluster, command: str, *args: str) -> tuple[Any, Any]:
    """(exit code, stdout, stderr) of ``command`` over HTTP alone and over gRPC."""
    answers = []
    for env in (_http_only(cluster), GRPC):
        done = _run(cluster, env, command, *args)
        answers.append((done.returncode, done.stdout, done.stderr))
    return answers[0], answers[1]


def _job(cluster: Cluster, job_id: str) -> dict[str, Any]:
    listed = json.loads(_run(cluster, GRPC, "gqueue", "-t", "all", "-j", job_id, "--json").stdout)
    assert listed, job_id
    job = dict(listed[0])
    for key in ("id", "job_id", "submit_time", "reason", "estimated_start"):  # ids, times
        job.pop(key)
    return job


def test_gsub_over_http_submits_what_grpc_submits(sched: Cluster) -> None:
    (sched.root / "sweep.sh").write_text(SCRIPT)
    (sched.root / "plain.yaml").write_text(JOB_FILE)
    for args in (
        ["sweep.sh", "lr=0.1"],
        ["--hold", "-J", "renamed", "--gpus=0", "sweep.sh", "x"],
        ["plain.yaml"],
        ["--wrap", "echo wrapped"],
    ):
        over_http, over_grpc = _both(sched, "gsub", *args)
        assert over_http[0] == over_grpc[0] == 0, (over_http, over_grpc)
        assert over_http[1].startswith("Submitted job ") and over_grpc[1].startswith("Submitted")
        assert over_http[2] == over_grpc[2]  # the same warnings, if any
        http_id, grpc_id = over_http[1].split()[-1], over_grpc[1].split()[-1]
        assert _job(sched, http_id) == _job(sched, grpc_id)
        tasks = _run(sched, GRPC, "gqueue", "-r", "-j", http_id, "-h", "-o", "%i").stdout.split()
        assert len(tasks) == (4 if args[-1] in ("lr=0.1", "x") else 1)

    mail = _both(sched, "gsub", "--mail-type=END", "sweep.sh", "z")  # no relay: a warning
    assert mail[0][0] == mail[1][0] == 0 and mail[0][2] == mail[1][2]
    assert "gsub: warning: sweep.sh: mail_type: accepted, but no mail is sent" in mail[0][2]
    parsable = _both(sched, "gsub", "--parsable", "plain.yaml")
    assert parsable[0][1].strip().isdigit() and parsable[1][1].strip().isdigit()
    dry = _both(sched, "gsub", "--test-only", "plain.yaml")
    assert dry[0] == dry[1] and dry[0][0] == 0 and dry[0][1].startswith("Job would")


def test_gqueue_over_http_shows_what_grpc_shows(sched: Cluster) -> None:
    (sched.root / "sweep.sh").write_text(SCRIPT)
    assert _run(sched, GRPC, "gsub", "sweep.sh", "1").returncode == 0
    assert _run(sched, GRPC, "gsub", "-H", "-A", "vision", "sweep.sh", "2").returncode == 0
    bob = sched.add_user("bob")
    assert _run(sched, {"ROTA_TOKEN": bob}, "gsub", "--wrap", "true").returncode == 0
    fresh_passes(int(sched.env_extra["ROTA_HTTP"].rsplit(":", 1)[1]), 2)  # reasons are set
    for args in (
        [],
        ["--json", "-t", "all"],
        ["-r"],
        ["--me"],
        ["-u", "bob", "-A", "default,vision"],
        ["-j", "1", "-t", "PD"],
        ["--start"],
        ["-h", "-o", "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R"],
        ["-o", "%i %p %Q %t"],  # priorities, worked out when asked for
    ):
        over_http, over_grpc = _both(sched, "gqueue", *args)
        assert over_http == over_grpc, args
        assert over_http[0] == 0 and over_http[1], args
    mine = _both(sched, "gqueue", "--json", "--me")
    assert {j["user"] for j in json.loads(mine[0][1])} == {
        j["user"] for j in json.loads(mine[1][1])
    }


def test_refusals_over_http_are_grpc_refusals(sched: Cluster) -> None:
    (sched.root / "sweep.sh").write_text(SCRIPT)
    bob = sched.add_user("bob")
    wrong = {"ROTA_TOKEN": "not-a-token"}
    cases = [
        (wrong, ["gsub", "sweep.sh"], 1, "error: not signed in to the rota scheduler: the user"),
        (wrong, ["gqueue"], 1, "error: not signed in to the rota scheduler: the user token"),
        ({}, ["gsub", "--reservation=nope", "sweep.sh"], 2, "sweep.sh: reservation: unknown"),
        ({}, ["gsub", "--gpus=64", "sweep.sh"], 2, "sweep.sh: resources.gpus: 64 GPU(s)"),
        ({"ROTA_TOKEN": bob}, ["gsub", "-A", "secret", "sweep.sh"], 1, "permission denied:"),
    ]
    for env, (command, *args), code, message in cases:
        answers = []
        for way in (_http_only(sched), GRPC):
            done = _run(sched, {**way, **env}, command, *args)
            answers.append((done.returncode, done.stdout, done.stderr))
        assert answers[0] == answers[1], (command, args)
        assert answers[0][0] == code and message in answers[0][2], answers[0]
    listed = _run(sched, GRPC, "gqueue", "-t", "all", "-h", "-o", "%i").stdout
    assert listed == ""  # nothing refused was stored


def test_without_the_http_api_gsub_falls_back_to_grpc(sched: Cluster) -> None:
    (sched.root / "plain.yaml").write_text(JOB_FILE)
    nothing = {"ROTA_HTTP": f"127.0.0.1:{free_port()}"}  # no one listens
    assert _run(sched, nothing, "gsub", "plain.yaml").stdout == "Submitted job 1\n"

    class NotRota(BaseHTTPRequestHandler):  # a port that answers, but not with rota's API
        def do_POST(self) -> None:
            self.send_error(404)

        do_GET = do_POST

        def log_message(self, *args: object) -> None:
            pass

    other = HTTPServer(("127.0.0.1", 0), NotRota)
    threading.Thread(target=other.serve_forever, daemon=True).start()
    try:
        elsewhere = {"ROTA_HTTP": f"127.0.0.1:{other.server_address[1]}"}
        assert _run(sched, elsewhere, "gsub", "plain.yaml").stdout == "Submitted job 2\n"
        assert _run(sched, elsewhere, "gqueue", "-h", "-o", "%i").stdout.split() == ["1", "2"]
    finally:
        other.shutdown()


def test_tls_cluster_http_api_is_verified_with_the_cluster_ca(tmp_path: Path) -> None:
    certs = {}
    for name in ("tls", "other"):
        made = Cluster(tmp_path).cli("rota", "certs", "init", "--dir", str(tmp_path / name))
        assert made.returncode == 0, made.stderr
        certs[name] = tmp_path / name
    tls = certs["tls"]
    cluster = _start(
        tmp_path,
        "--tls-cert",
        str(tls / "scheduler.pem"),
        "--tls-key",
        str(tls / "scheduler-key.pem"),
    )
    try:
        (tmp_path / "sweep.sh").write_text(SCRIPT)
        ca = {"ROTA_CA": str(tls / "ca.pem")}
        assert _run(cluster, ca, "gadmin", "node", "add", "n1").returncode == 0
        done = _run(cluster, {**_http_only(cluster), **ca}, "gsub", "sweep.sh")
        assert (done.returncode, done.stdout) == (0, "Submitted job 1\n"), done.stderr
        forged = {**_http_only(cluster), "ROTA_CA": str(certs["other"] / "ca.pem")}
        refused = _run(cluster, forged, "gsub", "sweep.sh")  # HTTPS fails: gRPC is asked
        assert refused.returncode == 1 and "cannot reach" in refused.stderr
        plain = _run(cluster, _http_only(cluster), "gqueue")  # no CA: no plaintext HTTP answer
        assert plain.returncode == 1 and "cannot reach" in plain.stderr
    finally:
        _stop(cluster)


def test_a_token_never_goes_in_plaintext_to_another_machine(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path, token="some-token")
    away = {"ROTA_SCHEDULER": "192.0.2.1:9717", "ROTA_HTTP": "192.0.2.1:9718"}
    away["ROTA_DEFAULT_IMAGE"] = "busybox"
    for command in ("gsub", "gqueue"):
        done = _run(cluster, away, command, *(["--wrap", "true"] if command == "gsub" else []))
        assert done.returncode == 2 and "refusing to send your rota token" in done.stderr


def test_the_http_way_starts_without_grpc_protobuf_or_yaml(sched: Cluster) -> None:
    (sched.root / "sweep.sh").write_text(SCRIPT)
    for command, args in (("gsub", ["sweep.sh"]), ("gqueue", [])):
        done = _run(sched, _http_only(sched), "python", command, *args)
        assert done.returncode == 0, done.stderr
        loaded = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}
        assert not {"grpc", "google.protobuf", "yaml", "rota.v1"} & loaded, command
