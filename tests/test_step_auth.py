"""srun steps over the agents' real gRPC streams (the scheduler in-process): a node may start a
step only of a job it runs, and only the nodes a step was sent to may answer it; refusals are
recorded in the audit log. The asking node gets the step's output and its end."""

from __future__ import annotations

from pathlib import Path

from rota.v1 import rota_pb2 as pb
from rota.v1 import rota_pb2_grpc as pb_grpc
from tests.support.inprocess import InProcessScheduler
from tests.test_auth import audit, run, submit


def test_a_step_is_started_and_answered_only_by_the_jobs_own_nodes(tmp_path: Path) -> None:
    async def test(sched: InProcessScheduler) -> None:
        tokens = {n: (await sched.admin.AddNode(pb.AddNodeRequest(name=n))).token for n in "ab"}
        a = await sched.agent("a", tokens["a"], gpus=1)
        b = await sched.agent("b", tokens["b"], gpus=1)
        alice = pb_grpc.JobServiceStub(sched.user_channel("alice"))
        job_id = await submit(alice, resources=pb.Resources(gpus=1), slurm_env=True)
        await sched.fresh_pass()
        job = await alice.GetJob(pb.GetJobRequest(id=job_id))
        runner, other = (a, b) if list(job.nodes) == ["a"] else (b, a)
        other_name = "b" if runner is a else "a"
        launch = await runner.latest("launch")

        def start(request_id: int) -> pb.AgentMessage:
            return pb.AgentMessage(
                step_start=pb.StepStart(
                    request_id=request_id,
                    job_id=int(job_id),
                    attempt=launch.attempt,
                    argv=["hostname"],
                    cwd="/",
                )
            )

        other.send.put_nowait(start(7))  # a node that does not run the job
        refused = await other.latest("step_end")
        assert (refused.request_id, refused.exit_code) == (7, 1)
        assert "which it does not run" in refused.error
        assert not [m for m in other.received if m.WhichOneof("msg") == "step_launch"]

        runner.send.put_nowait(start(8))
        order = await runner.latest("step_launch")
        assert (order.step, order.ntasks, [t.rank for t in order.tasks]) == (0, 1, [0])
        forged = pb.StepOutput(request_id=order.request_id, data=b"forged\n")
        other.send.put_nowait(pb.AgentMessage(step_output=forged))
        await other.handled()  # received and refused before the real output
        runner.send.put_nowait(
            pb.AgentMessage(step_output=pb.StepOutput(request_id=order.request_id, data=b"n1\n"))
        )
        # once passed on (to this node, which asked), it leaves the window of the node that sent it
        ack = await runner.wait_for(
            lambda got: next((m.step_output for m in got if m.step_output.ack), None)
        )
        assert (ack.request_id, ack.ack, order.window > 0) == (order.request_id, 3, True)
        runner.send.put_nowait(
            pb.AgentMessage(step_end=pb.StepEnd(request_id=order.request_id, exit_code=0))
        )
        end = await runner.latest("step_end")
        assert (end.request_id, end.step, end.exit_code, end.error) == (8, 0, 0, "")
        outputs = [m.step_output for m in runner.received if m.WhichOneof("msg") == "step_output"]
        assert [(o.request_id, o.data) for o in outputs if not o.ack] == [(8, b"n1\n")]
        refusals = [e for e in await audit(sched) if not e.allowed]
        assert [(e.user, e.action) for e in refusals] == [
            (f"node:{other_name}", "AgentService/Connect step_start"),
            (f"node:{other_name}", "AgentService/Connect step_output"),
        ]

    run(test, tmp_path)
