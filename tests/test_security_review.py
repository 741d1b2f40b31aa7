"""The second review's findings, each written as the attack (docs/security.md, "Web and
listings"): a page of jobs too large to send, malformed controls, arrays and query numbers that
crashed instead of being refused, and control characters that forged rows in a terminal."""

from __future__ import annotations

from pathlib import Path

from rota.cli.gqueue_format import formatted, parse_format
from rota.scheduler.facade.jobs import LISTED_COMMAND
from rota.scheduler.http import HttpServer
from rota.scheduler.web.dashboard import dashboard_routes
from rota.scheduler.web.identity import EngineTokens
from rota.v1 import rota_pb2 as pb
from tests.support.inprocess import InProcessScheduler
from tests.test_auth import refused, with_node
from tests.test_security_input import INVALID, DaemonChain, run
from tests.test_web_api import Browserless


def _submit(**spec: object) -> pb.SubmitJobsRequest:
    job = pb.JobSpec(**{"image": "img", "command": ["true"], "hold": True, **spec})  # type: ignore[arg-type]
    return pb.SubmitJobsRequest(items=[pb.SubmitItem(spec=job)])


def test_long_scripts_do_not_make_the_queue_too_large_to_list(tmp_path: Path) -> None:
    """300 held tasks with a 250 KB command each made every ListJobs fail (RESOURCE_EXHAUSTED,
    75 MB): a listing carries each command cut to LISTED_COMMAND characters; GetJob whole."""

    async def test(sched: InProcessScheduler) -> None:
        await with_node(sched)
        script = "echo " + "x" * 250_000
        sent = await sched.jobs.SubmitJobs(_submit(command=["sh", "-c", script], array="0-299"))
        first = sent.jobs[0].job_ids[0]
        listed = await sched.jobs.ListJobs(pb.ListJobsRequest(page_size=2000))
        assert len(listed.jobs) == 300
        assert all(len("".join(j.spec.command)) <= LISTED_COMMAND + 1 for j in listed.jobs)
        assert listed.jobs[0].spec.command[-1].endswith("…")
        whole = await sched.jobs.GetJob(pb.GetJobRequest(id=first))
        assert list(whole.spec.command) == ["sh", "-c", script]

    run(DaemonChain, tmp_path, test)


def test_malformed_controls_arrays_and_numbers_are_refused_by_name(tmp_path: Path) -> None:
    async def test(sched: InProcessScheduler) -> None:
        await with_node(sched)
        job = (await sched.jobs.SubmitJobs(_submit())).jobs[0].job_ids[0]
        for action in (0, 99):
            code, details = await refused(
                sched.jobs.ControlJobs(pb.ControlJobsRequest(action=action, ids=[job]))
            )
            assert code is INVALID and "action:" in details and "hold, release, requeue" in details
        code, details = await refused(
            sched.jobs.SubmitJobs(_submit(array="0-99999999999999999999"))
        )
        assert code is INVALID and "array" in details
        code, details = await refused(
            sched.jobs.SubmitJobs(_submit(workdir="/data/\u009b31m\u202eevil"))
        )
        assert code is INVALID and "workdir" in details and "control characters" in details
        tokens = EngineTokens(sched.engine)
        http = HttpServer(dashboard_routes(sched.engine, tokens, secure=False))
        port = await http.start("127.0.0.1:0")
        try:
            web = Browserless(port)
            await web.login(sched.admin_token)
            for query in ("limit=99999999999999999999999", "limit=3000000000"):
                reply = await web.call("GET", f"/api/v1/jobs?state=ended&{query}")
                assert reply.status == 400 and "limit:" in reply.json()["error"], reply.body
        finally:
            await http.stop()

    run(DaemonChain, tmp_path, test)


def test_a_command_cannot_forge_rows_in_gqueue() -> None:
    """alice's command held ``\\r\\n4242 alice ...``: ``gqueue -o '%i %u %o'`` printed it as a
    row of its own. Cells now show control characters escaped."""
    job = {"id": "7", "user": "alice", "command": ["sh", "-c", "true\r\n4242 alice fake\x1b[2K"]}
    lines = formatted(parse_format("%i %u %o"), [job], 0.0)
    assert len(lines) == 2
    assert lines[1] == "7 alice sh -c true\\r\\n4242 alice fake\\x1b[2K"
