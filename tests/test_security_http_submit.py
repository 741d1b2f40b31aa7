"""The commands' HTTP door (``POST /api/v1/jobs``, fifth attack) refuses what the gRPC door
refuses. The gRPC interceptor refuses control characters in every string of a request, but the
HTTP door skips it, and the spec's own checks let a final newline through (``$`` matches
before one): bob stored a job named ``job\\n`` (its mail's Subject header then failed to
build, which stopped the mails claimed with it) and a ``submit_host``, ``signal`` and
``constraint`` ending in a newline. A body nested too deep answered 500 (a RecursionError) and
logged a traceback, and so did a whole number too large for a float (``"gpus": 1000...0``)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import replace
from pathlib import Path
from typing import Any

from rota.jobspec import JobSpec
from rota.scheduler.config import SchedulerConfig
from rota.scheduler.core.mail import MailService
from rota.scheduler.core.submission import base_record
from rota.scheduler.store.protocols import StoredMail
from tests.cluster import Cluster, free_port
from tests.support.fake_agent import FakeAgent


def _post(
    port: int, token: str, body: bytes, path: str = "/api/v1/jobs"
) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        data=body,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_the_http_door_refuses_line_breaks_and_deep_nesting(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path)
    http = free_port()
    cluster.start_scheduler("--open-registration", "--http-listen", f"127.0.0.1:{http}")
    bob = cluster.add_user("bob")
    agent = FakeAgent(cluster.address, "n1")
    try:
        agent.start()
        agent.welcomed.wait(10)
        for field, value in (
            ("name", "job\n"),
            ("submit_host", "host\n"),
            ("signal", "USR1@60\n"),
            ("constraint", "a\n"),
            ("mail_user", "bob\n"),
        ):
            spec = {"image": "img", "command": ["true"], field: value}
            status, answer = _post(http, bob, json.dumps({"items": [{"spec": spec}]}).encode())
            assert status == 400, (field, status, answer)
            assert answer["error"] == f"items[0].spec.{field}: must not contain control characters"
        status, answer = _post(http, bob, b'{"items": ' + b"[" * 20_000 + b"]" * 20_000 + b"}")
        assert status == 400, (status, answer)
        assert answer["error"].startswith("body: must be a JSON object")
        huge = b'{"image": "img", "gpus": 1' + b"0" * 400 + b"}"  # a whole number past floats
        status, answer = _post(http, bob, huge, "/api/v1/interactive")
        assert status == 400, (status, answer)
        assert answer["error"] == "resources.gpus: must be between 0 and 1024"
        assert cluster.jobs() == []  # nothing stored
        assert "Traceback" not in cluster.log("scheduler")
    finally:
        agent.stop()
        cluster.stop()


class _Mails:
    """Two job mails due: one of a job whose name a scheduler before this check stored with a
    line break."""

    def __init__(self) -> None:
        spec = JobSpec(image="img", command=("true",))
        self.due = [
            StoredMail(
                replace(base_record(spec, "bob", 0.0, 60.0), id=1, name="job\n"), 1, "END", "", 0
            ),
            StoredMail(
                replace(base_record(spec, "ann", 0.0, 60.0), id=2, name="train"), 1, "END", "", 0
            ),
        ]

    def claim(self, now: float, lease: float, limit: int) -> list[StoredMail]:
        return self.due[:limit]


class _NoBookingMails:
    def claim(self, now: float, lease: float, limit: int) -> list[Any]:
        return []


def test_a_mail_whose_header_cannot_be_built_does_not_stop_the_others() -> None:
    service = MailService(_Mails(), _NoBookingMails(), SchedulerConfig(), lambda: 100.0)  # type: ignore[arg-type]
    [mail] = service.claim(10)
    assert mail.key == (2, 1, "END")
    assert "Name=train Ended" in mail.message["Subject"]
