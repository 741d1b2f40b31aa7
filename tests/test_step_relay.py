"""The step relay's bounds (issue 24): a step's nodes may have only their window of output in
the scheduler, acknowledged once the asking node's stream took it; a node that ignores its
window has its part ended with the reason, and the step's tasks are stopped everywhere, as
they are when the asking node's stream ends. The hub and relay as the daemon builds them, on
an event loop, with each node's stream as its outbox (``sent`` is what the stream calls once
it wrote a message)."""

from __future__ import annotations

import asyncio

from rota.messages import (
    StepCancel,
    StepEnd,
    StepLaunch,
    StepLayout,
    StepOutput,
    StepStart,
    StepTask,
)
from rota.scheduler.agent_hub import AgentHub, AgentSession
from rota.scheduler.cluster.users import AuditEntry
from rota.scheduler.core.job_steps import StepBegun
from rota.scheduler.core.step_layout import NodeTasks, StepPlan
from rota.scheduler.core_thread import InlineExecutor
from rota.scheduler.step_relay import MIN_WINDOW, StepRelay
from rota.states import JobState

MiB = 1 << 20


class TwoNodeSteps:
    """``JobSteps``' two calls for job 12's step 0: one task on n1, one on n2."""

    def __init__(self) -> None:
        self.ended: list[tuple[JobState, int, str]] = []

    def begin(self, node: str, start: StepStart) -> StepBegun:
        parts = (NodeTasks("n1", 0, (StepTask(0, 0),)), NodeTasks("n2", 1, (StepTask(1, 0),)))
        return StepBegun(12, "12", 1, 0, StepPlan(parts))

    def end(self, begun: StepBegun, state: JobState, code: int, why: str) -> None:
        self.ended.append((state, code, why))


async def drained(session: AgentSession) -> list[object]:
    for _ in range(5):  # let the relay's tasks run
        await asyncio.sleep(0)
    items = []
    while not session.outbox.empty():
        items.append(session.outbox.get_nowait())
    return items


async def started() -> tuple[AgentHub, StepRelay, TwoNodeSteps, AgentSession, AgentSession]:
    async def record(entry: AuditEntry) -> None:
        pass

    hub = AgentHub(record)
    n1, n2 = hub.new_session("n1"), hub.new_session("n2")
    hub.attach(n1)
    hub.attach(n2)
    steps = TwoNodeSteps()
    relay = StepRelay(hub, InlineExecutor(), steps, window=2 * MIN_WINDOW)  # type: ignore[arg-type]
    relay.start(n1, StepStart(5, 12, 1, StepLayout(), ("yes",)))
    return hub, relay, steps, n1, n2


def test_output_is_passed_on_within_each_nodes_window_and_a_flood_ends_its_part() -> None:
    async def main() -> None:
        _, relay, steps, n1, n2 = await started()
        (launch1,) = await drained(n1)
        (launch2,) = await drained(n2)
        assert isinstance(launch1, StepLaunch) and isinstance(launch2, StepLaunch)
        assert launch1.window == launch2.window == MIN_WINDOW  # the step's window, shared
        rid = launch2.request_id

        relay.deliver(n2, StepOutput(rid, b"a" * MiB))
        (passed,) = await drained(n1)
        assert passed == StepOutput(5, b"a" * MiB)
        assert await drained(n2) == []  # not acknowledged before n1's stream took it
        relay.sent(n1, passed)  # type: ignore[arg-type]
        assert await drained(n2) == [StepOutput(rid, b"", ack=MiB)]

        # n2 ignores its window: twice the window unacknowledged is the most it may send
        for _ in range(2):
            relay.deliver(n2, StepOutput(rid, b"b" * MiB))
        relay.deliver(n2, StepOutput(rid, b"c"))
        relay.deliver(n2, StepOutput(rid, b"d" * MiB))  # after its part ended: dropped
        to_n1 = await drained(n1)
        data = [o for o in to_n1 if isinstance(o, StepOutput)]
        assert [len(o.data) for o in data] == [MiB, MiB]  # the rest never reached n1
        assert await drained(n2) == [StepCancel(rid)]  # its tasks are stopped
        assert StepCancel(launch1.request_id) in to_n1  # and the others'
        relay.deliver(n1, StepEnd(launch1.request_id, 143, failed_task="task 0: Killed"))
        end = [o for o in await drained(n1) if isinstance(o, StepEnd)]
        why = f"n2: node n2 sent more than the step's output window ({MiB} bytes unacknowledged)"
        assert end == [StepEnd(5, 143, why, False, 0, "n1: task 0: Killed")]
        assert steps.ended == [(JobState.FAILED, 143, why)]

    asyncio.run(main())


def test_a_step_whose_asking_stream_ended_is_stopped_and_failed() -> None:
    async def main() -> None:
        hub, relay, steps, n1, n2 = await started()
        await drained(n1)
        (launch2,) = await drained(n2)
        relay.deliver(n2, StepOutput(launch2.request_id, b"lost"))  # type: ignore[attr-defined]
        await drained(n1)
        relay.gone(n1)
        hub.detach(n1)
        assert await drained(n2) == [StepCancel(launch2.request_id)]  # type: ignore[attr-defined]
        relay.deliver(n2, StepEnd(launch2.request_id, 143))  # type: ignore[attr-defined]
        await drained(n2)
        assert steps.ended == [
            (
                JobState.FAILED,
                143,
                "node n1, where srun ran, disconnected; n1: node n1 "
                "disconnected while sending output",
            )
        ]

    asyncio.run(main())
