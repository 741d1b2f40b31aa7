"""Issue 22, part D, as the attacks: floods of idle connections on both ports, a slowloris,
unauthenticated requests filling the audit log, webhooks aimed at the scheduler's own network
(SSRF and port scanning), and a flood of one error line. Network traffic stays on 127.0.0.0/8:
private and link-local webhook addresses are only ever refused, never dialled."""

from __future__ import annotations

import asyncio
import io
import logging
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import grpc
import pytest

from rota.logformat import RepeatFilter
from rota.scheduler.api.validation import ValidationInterceptor
from rota.scheduler.cluster.users import AuditEntry
from rota.scheduler.config import input_rules
from rota.scheduler.notifier import HttpPoster, Notifier
from rota.v1 import rota_pb2 as pb
from rota.v1 import rota_pb2_grpc as pb_grpc
from tests.cluster import Cluster, free_port, wait_for
from tests.support.core import Harness
from tests.support.inprocess import InProcessScheduler
from tests.support.webhooks import WebhookServer

DAY = 86400.0
DESCRIPTORS = 512  # the scheduler's open-file limit (soft and hard) in the flood tests
FLOOD = 700  # idle connections of the attacker: more than the scheduler has descriptors


# ---------------------------------------------------------------- connection floods


def _scheduler(cluster: Cluster, **settings: object) -> int:
    """Start a scheduler with ``DESCRIPTORS`` open files at most and ``settings``; return its
    HTTP port."""
    http_port = free_port()
    lines = [f"http_listen: 127.0.0.1:{http_port}"]
    lines += [f"{key}: {value}" for key, value in settings.items()]
    config = cluster.write_job("sched.yaml", "\n".join(lines) + "\n")
    db = f"sqlite:///{cluster.root / 'sched.db'}"  # where cluster.add_user writes users
    args = ["scheduler", "--listen", cluster.address, "--db", db]
    log = (cluster.root / "scheduler.log").open("ab")
    # the limit is set by a shell, not a preexec_fn: a fork of this gRPC-using process can
    # crash before exec (grpc/grpc#43055)
    limited = ["sh", "-c", f'ulimit -n {DESCRIPTORS} && exec "$@"', "sh", sys.executable]
    cluster.procs["scheduler"] = subprocess.Popen(
        [*limited, "-m", "rota.cli.rota_main", *args, "--config", str(config)],
        env=cluster.env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    wait_for(lambda: "listening on" in cluster.log("scheduler"), 20, what="scheduler start")
    cluster.token = cluster.add_user("root-admin", admin=True)
    return http_port


def _idle(port: int, count: int, head: bytes = b"") -> list[socket.socket]:
    """``count`` connections that say nothing more than ``head`` (refused ones are skipped)."""
    held = []
    for _ in range(count):
        try:
            conn = socket.create_connection(("127.0.0.1", port), timeout=2)
            if head:
                conn.sendall(head)
            held.append(conn)
        except OSError:
            pass
    return held


def test_idle_connections_beyond_the_descriptors_do_not_stop_gqueue(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path)
    try:
        _scheduler(cluster, max_connections=100, http_max_connections=32, handshake_timeout=2)
        held = _idle(cluster.port, FLOOD)
        try:
            began = time.monotonic()
            answered = wait_for(
                lambda: cluster.cli("gqueue").returncode == 0, 25, what="gqueue during the flood"
            )
            assert answered and time.monotonic() - began < 25
            assert cluster.procs["scheduler"].poll() is None
        finally:
            for conn in held:
                conn.close()
        log = cluster.log("scheduler")
        assert "Too many open files" not in log
        assert len(log) < 200_000, "the flood must not flood the log"
    finally:
        cluster.stop()


def test_a_slowloris_on_the_http_port_does_not_block_metrics(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path)
    try:
        http_port = _scheduler(cluster, http_max_connections=32, handshake_timeout=30)
        held = _idle(http_port, FLOOD, b"GET /metrics HTTP/1.1\r\nHost: x\r\n")  # never ends
        try:
            began = time.monotonic()
            url = f"http://127.0.0.1:{http_port}/metrics"
            with urllib.request.urlopen(url, timeout=10) as answer:
                assert answer.status == 200 and b"rota_" in answer.read()
            assert time.monotonic() - began < 5
            assert cluster.cli("gqueue").returncode == 0
        finally:
            for conn in held:
                conn.close()
        assert "Too many open files" not in cluster.log("scheduler")
    finally:
        cluster.stop()


# ---------------------------------------------------------------- the audit log


class _Validating(InProcessScheduler):
    def interceptors(self) -> list[grpc.aio.ServerInterceptor]:
        return [*super().interceptors(), ValidationInterceptor(input_rules(self.config))]


def test_a_thousand_unauthenticated_requests_write_at_most_the_cap(tmp_path: Path) -> None:
    async def main() -> list[AuditEntry]:
        async with InProcessScheduler(tmp_path, audit_refusals_per_minute=20) as sched:
            async with grpc.aio.insecure_channel(sched.address) as bare:
                stub = pb_grpc.JobServiceStub(bare)
                for _ in range(1000):
                    with pytest.raises(grpc.aio.AioRpcError) as refused:
                        await stub.ListJobs(pb.ListJobsRequest())
                    assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
            return await sched.engine.users.audit(0.0, 10_000, sched.admin_principal)

    entries = asyncio.run(main())
    refusals = [e for e in entries if e.action == "JobService/ListJobs"]
    assert len(refusals) == 20
    (summary,) = [e for e in entries if e.action == "audit"]
    assert "not recorded" in summary.detail and summary.peer == "ipv4:127.0.0.0/8"


def test_audit_entries_older_than_the_retention_are_pruned(tmp_path: Path) -> None:
    h = Harness(tmp_path, audit_retention=30 * DAY)
    users = h.s.users
    users.record(AuditEntry(h.clock.now, "ann", "UserService/AddUser", "bob"))
    h.clock.now += 20 * DAY
    users.record(AuditEntry(h.clock.now, "ann", "UserService/RevokeUser", "bob"))
    h.clock.now += 15 * DAY
    assert users.prune_audit() == 1
    assert [e.action for e in users.audit()] == ["UserService/RevokeUser"]
    h.clock.now += 20 * DAY  # the daemon's tick prunes too
    h.tick()
    assert users.audit() == []


# ---------------------------------------------------------------- webhooks


@pytest.mark.parametrize(
    ("url", "kind"),
    [
        ("http://127.0.0.1:9/hook", "loopback"),
        ("http://10.1.2.3/hook", "private"),
        ("http://169.254.169.254/latest/meta-data", "link-local"),
        ("http://[::1]:8080/hook", "loopback"),
        ("http://[fd00::1]/hook", "private"),
        ("http://[::ffff:127.0.0.1]/hook", "loopback"),
        ("http://0.0.0.0/hook", "unspecified"),
    ],
)
def test_a_webhook_to_an_inner_address_is_refused_at_submit(
    tmp_path: Path, url: str, kind: str
) -> None:
    async def main() -> None:
        async with _Validating(tmp_path) as sched:
            spec = pb.JobSpec(image="img", command=["true"], notify_url=url)
            request = pb.SubmitJobsRequest(items=[pb.SubmitItem(spec=spec)])
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await sched.jobs.SubmitJobs(request)
            assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            details = refused.value.details() or ""
            assert "notify.url" in details and kind in details
            assert "webhook_allowed_networks" in details
            assert not (await sched.jobs.ListJobs(pb.ListJobsRequest())).jobs

    asyncio.run(main())


def test_a_public_webhook_address_or_host_name_is_accepted_at_submit(tmp_path: Path) -> None:
    async def main() -> None:
        async with _Validating(tmp_path) as sched:
            added = await sched.admin.AddNode(pb.AddNodeRequest(name="n1"))
            await sched.agent("n1", added.token)
            for url in ("https://93.184.215.14/hook", "https://hooks.example.org/x"):
                spec = pb.JobSpec(image="img", command=["true"], notify_url=url, hold=True)
                request = pb.SubmitJobsRequest(items=[pb.SubmitItem(spec=spec)])
                assert (await sched.jobs.SubmitJobs(request)).jobs[0].job_ids

    asyncio.run(main())


def test_webhooks_to_inner_addresses_are_never_posted_and_say_only_failed(
    tmp_path: Path,
) -> None:
    """Jobs stored before the setting, or names that resolve inside (``localhost``): the
    address is checked when the webhook is posted, and the job's events tell nothing of it."""
    h = Harness(tmp_path, notify_tries=1)
    h.connect("n1")
    with WebhookServer(200) as hook:
        port = hook.url.split(":")[2].split("/")[0]
        urls = [
            hook.url,
            f"http://localhost:{port}/hook",
            "http://10.1.2.3/hook",
            "http://169.254.169.254/latest/meta-data",
            f"http://[::1]:{port}/hook",
        ]
        jobs = []
        for url in urls:
            job = h.submit(gpus=1, notify_url=url)
            h.schedule()
            h.event("n1", job, "EXITED", exit_code=0)
            jobs.append(job)

        def notes(job: str) -> list[str]:
            return [e.reason for e in h.s.jobs.get(job)[1] if "notification" in e.reason]

        async def drive() -> None:
            notifier = Notifier(
                h.engine.claim_notifications,
                h.engine.notification_result,
                HttpPoster(h.config.notify_timeout, 4),
                4,
                0.02,
            )
            notifier.start()
            try:
                deadline = time.monotonic() + 20
                while not all(notes(j) for j in jobs):
                    assert time.monotonic() < deadline, "webhooks not settled"
                    await asyncio.sleep(0.02)
            finally:
                await notifier.stop()

        asyncio.run(drive())
    assert hook.tries == 0, "nothing may reach the scheduler's own network"
    for job, url in zip(jobs, urls, strict=True):
        (note,) = notes(job)
        assert note.startswith("notification to http") and "failed: given up" in note, note
        for leak in ("refused", "loopback", "private", "link-local", "timed out", "Errno"):
            assert leak not in note, (url, note)


# ---------------------------------------------------------------- the log


def test_a_flood_of_one_error_writes_a_bounded_number_of_lines() -> None:
    now = [0.0]
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.addFilter(RepeatFilter(limit=10, interval=60.0, clock=lambda: now[0]))
    log = logging.getLogger("rota.test.flood")
    log.addHandler(handler)
    log.propagate = False
    try:
        for i in range(20_000):
            try:
                raise OSError(24, "Too many open files")
            except OSError:
                log.exception("accept failed on port %d", 9717 + i % 2)
            log.warning("another message")
        first_minute = out.getvalue()
        now[0] = 61.0
        log.error("accept failed on port %d", 9717)
    finally:
        log.removeHandler(handler)
    assert first_minute.count("accept failed") == 10
    assert first_minute.count("Traceback") == 10
    assert first_minute.count("another message") == 10
    assert "similar lines suppressed for 60s" in first_minute
    assert len(first_minute) < 20_000
    last = out.getvalue()[len(first_minute) :]
    assert "suppressed 19990 similar lines in the previous 60s" in last
