"""srun steps between nodes (event loop): a node's ``StepStart`` is checked and numbered on
the core thread (``JobSteps.begin``), a ``StepLaunch`` goes to every node of the step (one
``Relay`` request each, so only that node may answer it and its disconnection ends its part),
their output is passed on to the node that asked as it comes, and once every node has ended
its tasks the step's end is recorded and sent there.

Output is bounded by windows, as sessions are: a step's nodes share ``window`` bytes (each at
least ``MIN_WINDOW``) of output the scheduler holds, acknowledged to the node once the asking
node's stream took it (``sent``), so a flood waits on its own node instead of filling the
scheduler's memory or the asking node's stream. A node that sends twice its window has its
part ended with an error. A part that ends with an error (its node lost, or over its window)
stops the step's tasks everywhere, as does the loss of the asking node's stream.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from dataclasses import dataclass, field

from rota.hostlist import compress
from rota.messages import StepCancel, StepEnd, StepLaunch, StepLayout, StepOutput, StepStart
from rota.scheduler.agent_hub import AgentHub, AgentSession, Relay
from rota.scheduler.core.errors import AccessDenied, UserError
from rota.scheduler.core.job_steps import JobSteps, StepBegun
from rota.scheduler.core_thread import Executor
from rota.states import JobState

log = logging.getLogger("rota.scheduler")
MAX_STEPS = 64  # steps of one job running at once
WINDOW = 4 << 20  # bytes of a step's output the scheduler holds at once, shared by its nodes
MIN_WINDOW = 1 << 20  # each node's share at least (the agents send 256 KiB a message)
StepData = StepOutput | StepEnd


@dataclass
class _Running:
    """A step in progress: where it was asked for, its relay requests by node and the output
    passed on to the asking stream and not yet written to it (launch request id, bytes)."""

    origin: AgentSession  # the stream that asked: only it is answered
    request_id: int  # the asking agent's
    job_id: int
    requests: dict[str, int] = field(default_factory=dict)
    cancelled: bool = False
    lost: str = ""  # why the step was stopped by the scheduler (its asking stream ended)
    passed: deque[tuple[int, int]] = field(default_factory=deque)
    stopped: set[int] = field(default_factory=set)  # relay requests told to stop


@dataclass
class _Part:
    """One node's part of a step: its window and the bytes of it in use."""

    node: str
    window: int
    held: int = 0


class StepRelay:
    """Steps in progress, over the hub's relay."""

    def __init__(
        self, hub: AgentHub, core: Executor, steps: JobSteps, window: int = WINDOW
    ) -> None:
        self.hub = hub
        self.core = core
        self.steps = steps
        self.window = window
        self.relay: Relay[StepData] = hub.relay(lambda why: StepEnd(0, 1, error=why))
        self._running: dict[tuple[int, int], _Running] = {}  # by (session id, request id)
        self._parts: dict[int, _Part] = {}  # by relay request id
        self._tasks: set[asyncio.Task[None]] = set()

    def start(self, session: AgentSession, start: StepStart) -> None:
        """Run the step ``session``'s node asks for (on a task of its own; never waits)."""
        key = (session.id, start.request_id)
        if key in self._running:
            return
        running = _Running(session, start.request_id, start.job_id)
        self._running[key] = running
        task = asyncio.create_task(self._run(session, start, running))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def cancel(self, session: AgentSession, cancel: StepCancel) -> None:
        """srun was interrupted on ``session``'s node: stop its step's tasks everywhere."""
        running = self._running.get((session.id, cancel.request_id))
        if running is None:
            return
        running.cancelled = True
        self._stop(running)

    def gone(self, session: AgentSession) -> None:
        """``session``'s stream ended: the steps it asked for have no srun to answer any more
        (a newer stream of its node is another agent process), so their tasks are stopped."""
        for running in list(self._running.values()):
            if running.origin is session and not running.lost:
                running.lost = f"node {session.node}, where srun ran, disconnected"
                self._stop(running)

    def deliver(self, session: AgentSession, data: StepData) -> None:
        """Output or the end of a node's tasks, for the StepLaunch it answers. Output beyond
        twice the node's window ends its part instead (and stops its tasks there)."""
        part = self._parts.get(data.request_id)
        if isinstance(data, StepOutput) and part is not None and part.node == session.node:
            part.held += len(data.data)
            if part.held > 2 * part.window:
                why = (
                    f"node {part.node} sent more than the step's output window "
                    f"({part.window} bytes unacknowledged)"
                )
                log.warning("step output refused: %s", why)
                self.relay.deliver(session, data.request_id, StepEnd(data.request_id, 1, why), "")
                self.relay.close(data.request_id)
                del self._parts[data.request_id]
                for running in self._running.values():
                    if data.request_id in running.requests.values():
                        self._stop(running)  # its own tasks first
                return
        what = "step_output" if isinstance(data, StepOutput) else "step_end"
        self.relay.deliver(session, data.request_id, data, what)

    def sent(self, session: AgentSession, out: StepOutput) -> None:
        """``out`` was written to ``session``'s stream: acknowledge it to the node it came
        from (the asking stream writes in the order output was passed on)."""
        if out.ack:
            return  # an acknowledgement to a step's node
        running = self._running.get((session.id, out.request_id))
        if running is not None and running.passed:
            self._ack(*running.passed.popleft())

    def _ack(self, request_id: int, size: int) -> None:
        part = self._parts.get(request_id)
        if part is None:
            return
        part.held -= size
        live = self.hub.live(part.node)
        if live is not None:
            live.outbox.put_nowait(StepOutput(request_id, b"", ack=size))

    def _stop(self, running: _Running) -> None:
        """Stop the step's tasks on every node (once)."""
        for node, request_id in running.requests.items():
            live = self.hub.live(node)
            if live is not None and request_id not in running.stopped:
                running.stopped.add(request_id)
                live.outbox.put_nowait(StepCancel(request_id))

    async def _run(self, session: AgentSession, start: StepStart, running: _Running) -> None:
        origin = session.node
        try:
            if sum(1 for r in self._running.values() if r.job_id == start.job_id) > MAX_STEPS:
                raise UserError(f"at most {MAX_STEPS} steps of a job may run at once")
            begun = await self.core.call(self.steps.begin, origin, start)
        except AccessDenied as exc:
            self.hub.refuse(session, "step_start", f"job={start.job_id}", str(exc))
            self._answer(session, StepEnd(start.request_id, 1, error=str(exc)))
            del self._running[(session.id, start.request_id)]
            return
        except UserError as exc:
            self._answer(session, StepEnd(start.request_id, 1, error=str(exc)))
            del self._running[(session.id, start.request_id)]
            return
        except Exception:  # the asking srun must hear back whatever went wrong
            log.exception("step of job %d from node %s could not start", start.job_id, origin)
            self._answer(session, StepEnd(start.request_id, 1, error="the scheduler failed"))
            del self._running[(session.id, start.request_id)]
            return
        try:
            ends = await self._launch(begun, start, running)
            state, code, why, (failed, reported), timed_out = _outcome(ends, running)
            await self.core.call(self.steps.end, begun, state, code, why or failed)
            self._answer(
                session,
                StepEnd(start.request_id, code, why, timed_out, begun.step, failed, reported),
            )
        finally:
            for request_id in running.requests.values():
                self.relay.close(request_id)
                self._parts.pop(request_id, None)
            del self._running[(session.id, start.request_id)]

    async def _launch(
        self, begun: StepBegun, start: StepStart, running: _Running
    ) -> list[tuple[str, StepEnd]]:
        plan = begun.plan
        nodelist = compress([n.node for n in plan.nodes])
        window = max(MIN_WINDOW, self.window // len(plan.nodes))
        followers = []
        for part in plan.nodes:
            request_id, queue = self.relay.open(part.node)
            running.requests[part.node] = request_id
            self._parts[request_id] = _Part(part.node, window)
            order = StepLaunch(
                request_id=request_id,
                job_id=begun.job_id,
                attempt=begun.attempt,
                step=begun.step,
                node_id=part.node_id,
                nnodes=len(plan.nodes),
                ntasks=plan.ntasks,
                tasks=part.tasks,
                argv=start.argv,
                environment=start.environment,
                cwd=start.cwd,
                nodelist=nodelist,
                tasks_per_node=plan.tasks_per_node,
                label=start.layout.label,
                window=window,
                kill_on_bad_exit=start.layout.kill_on_bad_exit,
                wait=start.layout.wait,
            )
            live = self.hub.live(part.node)
            if live is None:
                queue.put_nowait(StepEnd(request_id, 1, error=f"node {part.node} is not connected"))
            else:
                live.outbox.put_nowait(order)
            followers.append(
                asyncio.create_task(self._follow(part.node, request_id, queue, running))
            )
        if running.cancelled or running.lost:  # while the step was being numbered
            self._stop(running)
        return await self._ends(followers, start.layout, running)

    async def _ends(
        self,
        followers: list[asyncio.Task[tuple[str, StepEnd]]],
        layout: StepLayout,
        running: _Running,
    ) -> list[tuple[str, StepEnd]]:
        """Each node's end, in the order they came; with srun's ``-K`` a node's tasks failing
        stops the other nodes' at once, with ``-W N`` a node's tasks ending stops them N
        seconds later, as SLURM's srun does."""
        ends: list[tuple[str, StepEnd]] = []
        later: asyncio.Task[None] | None = None
        try:
            for follower in asyncio.as_completed(followers):
                node, end = await follower
                ends.append((node, end))
                if len(ends) == len(followers):
                    break
                ended = {n for n, _ in ends}
                if layout.kill_on_bad_exit and (end.exit_code or end.error):
                    self._stop_others(running, ended)
                elif layout.wait and later is None:  # then SIGKILL, as srun -W sends
                    later = asyncio.create_task(self._stop_later(layout.wait, running, ended))
        finally:
            for task in [*followers, later]:
                if task is not None and not task.done():
                    task.cancel()
        return ends

    async def _stop_later(self, seconds: float, running: _Running, ended: set[str]) -> None:
        await asyncio.sleep(seconds)
        self._stop_others(running, ended, kill=True)

    def _stop_others(self, running: _Running, ended: set[str], kill: bool = False) -> None:
        """Stop the tasks of the step's nodes not in ``ended`` (``kill``: with SIGKILL)."""
        for node, request_id in running.requests.items():
            live = self.hub.live(node)
            if node not in ended and live is not None and request_id not in running.stopped:
                running.stopped.add(request_id)
                live.outbox.put_nowait(StepCancel(request_id, kill, named=True))

    async def _follow(
        self, node: str, request_id: int, queue: asyncio.Queue[StepData], running: _Running
    ) -> tuple[str, StepEnd]:
        """Pass ``node``'s output on to the asking node until its tasks end; a part that
        fails stops the others."""
        while True:
            data = await queue.get()
            if isinstance(data, StepEnd):
                if data.error:
                    self._stop(running)
                return node, data
            out = StepOutput(running.request_id, data.data, data.stderr)
            if self._answer(running.origin, out):
                running.passed.append((request_id, len(data.data)))
            else:
                self._ack(request_id, len(data.data))  # dropped: nobody will take it

    def _answer(self, session: AgentSession, message: StepOutput | StepEnd) -> bool:
        """Answer the stream that asked, while it lives (a newer stream of its node is another
        agent process, which knows nothing of the request); whether it was queued."""
        if self.hub.live(session.node) is session:
            session.outbox.put_nowait(message)
            return True
        return False


def _outcome(
    ends: list[tuple[str, StepEnd]], running: _Running
) -> tuple[JobState, int, str, tuple[str, bool], bool]:
    """(state, exit code, error, (first failed task with its node, whether its node reported
    it in the output already), timed out) of a step."""
    code = max((e.exit_code for _, e in ends), default=0)
    errors = [f"{node}: {e.error}" for node, e in ends if e.error]
    if running.lost:
        errors.insert(0, running.lost)
    failed = next(
        ((f"{node}: {e.failed_task}", e.reported) for node, e in ends if e.failed_task), ("", False)
    )
    timed_out = any(e.timed_out for _, e in ends)
    if timed_out:
        state = JobState.TIMEOUT
    elif running.cancelled and not running.lost:
        state = JobState.CANCELLED
    elif code or errors:
        state = JobState.FAILED
    else:
        state = JobState.COMPLETED
    return state, code or (1 if errors else 0), "; ".join(errors), failed, timed_out
