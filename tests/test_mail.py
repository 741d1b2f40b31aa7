"""sbatch's --mail-type/--mail-user: a scheduler with a mail relay sends BEGIN, END and FAIL
mails through it (a real SMTP server on 127.0.0.1 here), subjects as SLURM's; without a
relay the submission is accepted and gsub warns that no mail is sent."""

from __future__ import annotations

import asyncio
import getpass
from pathlib import Path

import pytest

from rota.v1 import rota_pb2 as pb
from tests.cluster import Cluster, wait_for
from tests.support.inprocess import InProcessScheduler
from tests.support.smtp import SmtpRelay

SCRIPT = """#!/bin/sh
#SBATCH --job-name={name}
#SBATCH --mail-type={types}
{user}#ROTA image={image}
exit {code}
"""


@pytest.mark.docker
def test_begin_end_and_fail_mails_go_through_the_relay(
    cluster: Cluster, test_image: str, tmp_path: Path
) -> None:
    with SmtpRelay() as relay:
        config = tmp_path / "scheduler.yaml"
        config.write_text(
            "scheduler:\n  open_registration: true\n"
            f"  mail_relay: {relay.address}\n  mail_domain: lab.example\n"
        )
        cluster.start_scheduler("--config", str(config))
        cluster.start_agent("n1", gpus=1)
        jobs = {}
        for name, types, user, code in (
            ("ok", "BEGIN,END", "#SBATCH --mail-user=ann@lab.example\n", 0),
            ("bad", "ALL", "", 3),
        ):
            script = tmp_path / f"{name}.sh"
            script.write_text(
                SCRIPT.format(name=name, types=types, user=user, image=test_image, code=code)
            )
            submitted = cluster.cli("gsub", "--parsable", str(script), check=True)
            assert "warning" not in submitted.stderr
            jobs[name] = submitted.stdout.strip()
        cluster.wait_state(jobs["ok"], "COMPLETED")
        cluster.wait_state(jobs["bad"], "FAILED")
        wait_for(lambda: len(relay.mails()) >= 4, 30, what="four mails")
        got = sorted((to, m["Subject"]) for _, (to,), m in relay.mails())
        me = f"{getpass.getuser()}@lab.example"
        ok, bad = jobs["ok"], jobs["bad"]
        assert [(to, s.split(",")[0]) for to, s in got] == sorted(
            [
                ("ann@lab.example", f"rota Job_id={ok} Name=ok Began"),
                ("ann@lab.example", f"rota Job_id={ok} Name=ok Ended"),
                (me, f"rota Job_id={bad} Name=bad Began"),
                (me, f"rota Job_id={bad} Name=bad Failed"),
            ]
        )
        ended = next(s for to, s in got if "Name=ok Ended" in s)
        assert ended.endswith(", COMPLETED, ExitCode 0")
        failed = next(s for to, s in got if "Failed" in s)
        assert failed.endswith(", FAILED, ExitCode 3")
        assert all(m["From"] == "rota@lab.example" for _, _, m in relay.mails())
        shown = cluster.cli("gcontrol", "show", "job", ok, check=True).stdout
        assert "mail END sent to ann@lab.example" in shown


def test_without_a_relay_mail_is_accepted_with_a_warning(tmp_path: Path) -> None:
    async def main() -> None:
        async with InProcessScheduler(tmp_path) as sched:
            added = await sched.admin.AddNode(pb.AddNodeRequest(name="n1", user="root"))
            await sched.agent("n1", added.token, 1)
            spec = pb.JobSpec(image="img", command=["true"], mail_type=["END"])
            request = pb.SubmitJobsRequest(items=[pb.SubmitItem(spec=spec)], user="ann")
            reply = await sched.jobs.SubmitJobs(request)
            assert reply.jobs[0].job_ids
            assert list(reply.jobs[0].warnings) == [
                "mail_type: accepted, but no mail is sent: the scheduler has no mail_relay setting"
            ]
            bad = pb.JobSpec(image="img", command=["true"], mail_type=["SOMETIMES"])
            with pytest.raises(Exception, match="mail_type: SOMETIMES unknown"):
                await sched.jobs.SubmitJobs(
                    pb.SubmitJobsRequest(items=[pb.SubmitItem(spec=bad)], user="ann")
                )

    asyncio.run(main())
