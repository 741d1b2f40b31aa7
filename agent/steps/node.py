"""srun steps on this node: the spools of the attempts that run here, the sruns waiting in
them, and the tasks this node runs for any step of its jobs.

The runtime calls ``prepare`` before it creates a job's container (the spool, the mounts, the
``PATH`` and, for a batch job's other nodes, the command that keeps the container up),
``started`` once it runs, ``time_limit`` just before it stops it at its time limit and
``ended`` when it is over. The agent passes the scheduler's step orders to ``order``; what
this node sends goes through ``send`` (set by ``connect``).

``sbatch`` and ``scancel`` here become a ``JobCommand`` to the scheduler, whose
``JobCommandReply`` (what to print, the exit code) is written to their FIFOs as an srun's;
the exit code's line also carries ``wait ID`` (sbatch --wait: ask again with
``sbatch-wait``) or ``ended`` (the answer that ends such a wait).
An srun here becomes a ``StepStart`` to the scheduler, which checks it against the job and
answers with ``StepLaunch`` orders to the step's nodes; their output and ends come back as
``StepOutput`` and one ``StepEnd`` for this srun, written to its FIFOs.

Tasks run only while the scheduler follows them: when its stream ends, this node's tasks are
stopped (the scheduler has failed their steps), and an agent that restarts stops the tasks an
earlier process left running in the containers it adopts (``records``).
"""

from __future__ import annotations

import itertools
import logging
import os
import select
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import docker
from docker.types import Mount

from rota.agent.steps.records import TaskRecords, stop_left
from rota.agent.steps.spool import (
    CONTAINER_SPOOL,
    CONTAINER_TOOLS,
    HOLD,
    JobSpool,
    SpoolError,
    install_tools,
)
from rota.agent.steps.srun import OutputBudget, Srun
from rota.agent.steps.tasks import StepTasks, Target
from rota.messages import (
    AgentMessage,
    JobCommand,
    JobCommandReply,
    JobRequeue,
    LaunchOrder,
    StepCancel,
    StepEnd,
    StepLaunch,
    StepOutput,
    StepStart,
)

log = logging.getLogger("rota.agent")
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
MAX_SRUNS = 64  # sruns of one attempt served at once (the rest wait for a slot)
START_WAIT = 300.0  # seconds a step waits for its job's container to start on this node
REPORT_WAIT = 5.0  # seconds sruns have to report their steps cancelled at the time limit
LISTEN_TICK = 0.2  # seconds between the listener's looks at whether its attempt ended
Key = tuple[int, int]  # (job id, attempt)
COMMANDS = ("sbatch", "scancel", "sbatch-wait")  # relayed to the scheduler as a JobCommand


@dataclass
class Held:
    """An attempt's spool and what uses it."""

    spool: JobSpool
    budget: OutputBudget = field(default_factory=OutputBudget)  # its sruns' queued output
    target: Target | None = None
    ctl: int = -1
    stopping: bool = False
    timed_out: bool = False
    requeued: bool = False  # `scontrol requeue` asked once: the scheduler stops the attempt


class NodeSteps:
    """Every attempt's steps on this node. Thread-safe."""

    def __init__(self, root: Path, node: str, base_url: str | None = None) -> None:
        self.root = root
        self.node = node
        self.tools = install_tools(root / "bin")
        self._base_url = base_url
        self._api: docker.APIClient | None = None
        self._send: Callable[[AgentMessage], None] = lambda msg: None
        self._lock = threading.Lock()
        self._held: dict[Key, Held] = {}
        self._sruns: dict[int, Srun] = {}
        self._tasks: dict[int, StepTasks] = {}  # by the scheduler's request id
        self._starting: set[int] = set()  # launches whose tasks are not running yet
        self._early_cancels: set[int] = set()  # of those, the ones cancelled already
        self._ids = itertools.count(1)

    def connect(self, send: Callable[[AgentMessage], None]) -> None:
        self._send = send

    # ------------------------------------------------------------ the runtime's hooks

    def prepare(
        self,
        order: LaunchOrder,
        args: dict[str, Any],
        uid: int,
        gid: int,
        image_path: Callable[[str], str],
    ) -> None:
        """Make the attempt's spool and add to the container's create ``args`` its mounts,
        ``PATH`` (``image_path(image)``: the image's own) and, for a steps-only container, the
        command that keeps it up. Nothing for jobs without SLURM's variables."""
        if not order.spec.slurm_env and not order.steps_only:
            return
        spool = JobSpool(self._spool_dir(order.job_id, order.attempt), uid, gid)
        spool.create()
        spool.note_spec(order.spec.constraint)
        with self._lock:
            self._held[(order.job_id, order.attempt)] = Held(spool)
        args["mounts"] = [
            *args.get("mounts", []),
            Mount(target=CONTAINER_SPOOL, source=str(spool.root), type="bind"),
            Mount(target=CONTAINER_TOOLS, source=str(self.tools), type="bind", read_only=True),
        ]
        env = args["environment"]
        env["PATH"] = (
            f"{CONTAINER_TOOLS}:{env.get('PATH') or image_path(order.spec.image) or DEFAULT_PATH}"
        )
        if order.steps_only:
            args["command"] = ["/bin/sh", HOLD]

    def started(self, job_id: int, attempt: int, target: Target) -> None:
        """The container runs: listen to its sruns (an adopted one's spool is found again)."""
        key = (job_id, attempt)
        adopted = False
        with self._lock:
            held = self._held.get(key)
            left = self._records(key).found() if held is None else []
            if left:  # tasks an earlier agent process started there
                threading.Thread(
                    target=self._stop_left, args=(key, left, target.container_id), daemon=True
                ).start()
            if held is None:  # adopted from an earlier agent process
                spool = JobSpool(self._spool_dir(job_id, attempt), -1, -1)
                if not spool.ctl.exists():
                    return
                held = self._held[key] = Held(spool)
                adopted = True
            held.target = target
            if not adopted:
                held.ctl = held.spool.open_ctl()
        held.spool.describe(target.start, target.deadline)
        threading.Thread(target=self._listen, args=(key, held, adopted), daemon=True).start()

    def time_limit(self, job_id: int, attempt: int) -> None:
        """The attempt reached its time limit: stop its steps' tasks here and give its sruns
        up to ``REPORT_WAIT`` seconds to report the step cancelled before the container is
        stopped."""
        key = (job_id, attempt)
        with self._lock:
            held = self._held.get(key)
            if held is not None:
                held.timed_out = True
            tasks = [t for t in self._tasks.values() if _key(t.order) == key]
        for task in tasks:
            task.cancel()
        deadline = time.monotonic() + REPORT_WAIT
        while time.monotonic() < deadline:
            with self._lock:
                if not any(s.key == key for s in self._sruns.values()):
                    return
            time.sleep(0.02)

    def ended(self, job_id: int, attempt: int) -> None:
        """The container is gone: end its sruns and forget the spool."""
        key = (job_id, attempt)
        with self._lock:
            held = self._held.pop(key, None)
            sruns = [s for s in self._sruns.values() if s.key == key]
            tasks = [t for t in self._tasks.values() if _key(t.order) == key]
        for task in tasks:
            task.cancel()
        self._records(key).clear()
        if held is None:
            return
        with self._lock:
            held.stopping = True  # the listener sees it within LISTEN_TICK and closes ctl
        for srun in sruns:
            srun.finish(1)
        held.spool.remove()

    # ------------------------------------------------------------ the scheduler's orders

    def order(
        self, order: StepLaunch | StepOutput | StepEnd | StepCancel | JobCommandReply
    ) -> None:
        if isinstance(order, JobCommandReply):
            self._replied(order)
        elif isinstance(order, StepLaunch):
            self._launch(order)
        elif isinstance(order, StepOutput) and order.ack:  # for a StepLaunch of this node
            task = self._tasks.get(order.request_id)
            if task is not None:
                task.acked(order.ack)
        elif isinstance(order, StepOutput):
            srun = self._sruns.get(order.request_id)
            if srun is not None:
                srun.write(order.data, order.stderr)
        elif isinstance(order, StepEnd):
            self._step_ended(order)
        else:
            with self._lock:
                task = self._tasks.get(order.request_id)
                if task is None and order.request_id in self._starting:
                    self._early_cancels.add(order.request_id)  # _run cancels its tasks
            if task is not None:
                task.cancel(kill=order.kill, named=order.named)

    def _launch(self, order: StepLaunch) -> None:
        with self._lock:
            self._starting.add(order.request_id)
        threading.Thread(target=self._run, args=(order,), daemon=True).start()

    def _run(self, order: StepLaunch) -> None:
        """Wait for the attempt's container (a gang's other nodes may still be starting
        theirs), then run the tasks."""
        deadline = time.monotonic() + START_WAIT
        while True:
            with self._lock:
                held = self._held.get(_key(order))
                target = held.target if held is not None and not held.stopping else None
            stopped = held is not None and held.stopping
            if target is not None or stopped or time.monotonic() > deadline:
                break
            time.sleep(0.02)
        if held is None or target is None:
            with self._lock:
                self._starting.discard(order.request_id)
                self._early_cancels.discard(order.request_id)
            self._send(StepEnd(order.request_id, 1, error=f"the job does not run on {self.node}"))
            return
        found = held
        tasks = StepTasks(
            order,
            target,
            self._exec_api(),
            self._send,
            lambda: found.timed_out,
            self._records(_key(order)),
            self.node,
        )
        with self._lock:
            self._tasks[order.request_id] = tasks
            cancelled = order.request_id in self._early_cancels
            self._early_cancels.discard(order.request_id)
            self._starting.discard(order.request_id)
        if cancelled:
            tasks.cancel()
        try:
            tasks.run()
        finally:
            with self._lock:
                self._tasks.pop(order.request_id, None)

    def _replied(self, reply: JobCommandReply) -> None:
        """The scheduler answered an sbatch or scancel of this node."""
        srun = self._sruns.get(reply.request_id)
        if srun is None:
            return
        if reply.output:
            srun.write(reply.output.encode())
        if reply.error:
            srun.write(reply.error.encode(), stderr=True)
        note = "ended" if reply.ended else ""
        if reply.wait_for and reply.wait_for.replace("_", "").isdigit():
            note = f"wait {reply.wait_for}"
        srun.finish(min(max(reply.exit_code, 0), 255), note)

    def _step_ended(self, end: StepEnd) -> None:
        with self._lock:
            srun = self._sruns.get(end.request_id)
            held = self._held.get(srun.key) if srun is not None else None
        if srun is None:
            return
        step = f"{srun.key[0]}.{end.step}"
        if end.error:
            srun.write(f"srun: error: {end.error}\n".encode(), stderr=True)
        if end.timed_out or (held is not None and held.timed_out):
            when = time.strftime("%Y-%m-%dT%H:%M:%S")
            srun.write(
                f"slurmstepd: error: *** STEP {step} ON {self.node} CANCELLED AT {when} "
                "DUE TO TIME LIMIT ***\n".encode(),
                stderr=True,
            )
        elif end.failed_task and not end.reported:
            srun.write(f"srun: error: {end.failed_task}\n".encode(), stderr=True)
        code = end.exit_code if end.exit_code or not (end.error or end.timed_out) else 1
        srun.finish(min(max(code, 0), 255))

    # ------------------------------------------------------------ sruns

    def _listen(self, key: Key, held: Held, adopted: bool = False) -> None:
        """Read ``ctl`` until the attempt ends; each line starts or cancels an srun. Nothing
        ever writes to ``ctl`` but the job (which may keep it full): the end of the attempt is
        noticed by polling ``held.stopping``. An adopted attempt's requests that waited on an
        earlier agent process are released (``JobSpool.release``) before ``ctl`` opens, so
        that one still waiting to write its line there is heard afresh, not released."""
        if adopted:
            held.spool.release()
            with self._lock:
                if held.stopping:
                    return
                held.ctl = held.spool.open_ctl()
        pending = b""
        poller = select.poll()
        poller.register(held.ctl, select.POLLIN)
        try:
            while not held.stopping:
                if not poller.poll(LISTEN_TICK * 1000):
                    continue
                data = os.read(held.ctl, 4096)
                if not data:
                    return
                pending += data
                *lines, pending = pending.split(b"\n")
                pending = pending[-256:]
                for line in lines:
                    if held.stopping:
                        return
                    self._request(key, held, line.decode("ascii", "replace").strip())
        except OSError as exc:
            log.warning("job %d: step spool closed: %s", key[0], exc)
        finally:
            with self._lock:
                os.close(held.ctl)
                held.ctl = -1

    def _request(self, key: Key, held: Held, line: str) -> None:
        verb, _, name = line.partition(" ")
        if verb == "cancel":
            self._cancel(key, name)
            return
        if verb == "requeue":
            if not held.requeued:
                held.requeued = True
                self._send(JobRequeue(*key))
            return
        if verb not in ("start", *COMMANDS) or not self._slot(key, held):
            return
        spool = held.spool
        try:
            out = spool.open_fifo(name, "out")
        except SpoolError as exc:
            log.warning("job %d: srun request refused: %s", key[0], exc)
            return
        try:
            err = spool.open_fifo(name, "err")
        except SpoolError:
            os.close(out)
            return
        request_id = next(self._ids)
        tool = "srun" if verb == "start" else verb.removesuffix("-wait")  # as it prints
        srun = Srun(
            key, spool, name, out, err, lambda _: self._forget(request_id), held.budget, tool
        )
        with self._lock:
            self._sruns[request_id] = srun  # holds a slot until its exit code is handed over
        if verb in COMMANDS:
            self._command(key, verb, request_id, srun)
            return
        try:
            request = spool.read(name)
        except SpoolError as exc:
            srun.write(f"srun: error: {exc}\n".encode(), stderr=True)
            srun.finish(1)
            return
        self._send(
            StepStart(
                request_id,
                key[0],
                key[1],
                request.layout,
                request.argv,
                request.environment,
                request.cwd,
            )
        )

    def _command(self, key: Key, tool: str, request_id: int, waiter: Srun) -> None:
        """Relay an sbatch or scancel to the scheduler (``waiter``: its FIFOs)."""
        try:
            request = waiter.spool.read_command(waiter.name)
        except SpoolError as exc:
            waiter.write(f"{tool.removesuffix('-wait')}: error: {exc}\n".encode(), stderr=True)
            waiter.finish(1)
            return
        self._send(
            JobCommand(
                request_id,
                key[0],
                key[1],
                tool,
                request.argv,
                request.script,
                request.script_index,
                request.cwd,
                request.environment,
            )
        )

    def _slot(self, key: Key, held: Held) -> bool:
        """Wait while the attempt has ``MAX_SRUNS`` sruns (each a thread of the agent's, until
        it handed over its exit code): a job's sruns beyond them wait for their turn. False
        when the attempt ended meanwhile."""
        while not held.stopping:
            with self._lock:
                if sum(1 for s in self._sruns.values() if s.key == key) < MAX_SRUNS:
                    return True
            time.sleep(LISTEN_TICK)
        return False

    def _forget(self, request_id: int) -> None:
        """An srun was handed its exit code."""
        with self._lock:
            self._sruns.pop(request_id, None)

    def _cancel(self, key: Key, name: str) -> None:
        """srun was interrupted: tell the scheduler to stop its step."""
        with self._lock:
            found = [i for i, s in self._sruns.items() if s.key == key and s.name == name]
        for request_id in found:
            self._send(StepCancel(request_id))

    def disconnected(self) -> None:
        """The scheduler's stream ended: every srun waiting here fails and every task running
        here is stopped (the scheduler failed their steps, or, when it died, records them
        FAILED at the job's next step; the other nodes stop theirs when the scheduler tells
        them, or when their own stream ends)."""
        with self._lock:
            sruns = list(self._sruns.items())
            tasks = list(self._tasks.values())
        for _, srun in sruns:
            srun.write(
                f"{srun.tool}: error: lost contact with the scheduler\n".encode(), stderr=True
            )
            srun.finish(1)
        for task in tasks:
            task.cancel(abandon=True)

    def _stop_left(self, key: Key, left: list[tuple[str, str]], container_id: str) -> None:
        """Stop the tasks an earlier agent process left running in an adopted container."""
        try:
            stopped = stop_left(self._records(key), left, self._exec_api(), container_id)
        except Exception:  # an engine that fails here must not end the adoption
            log.exception("job %d: the steps' tasks left running could not be stopped", key[0])
            return
        if stopped:
            log.warning(
                "job %d attempt %d: stopped %d step task(s) an earlier agent process left "
                "running (%s); their steps ended FAILED when it stopped",
                key[0],
                key[1],
                len(stopped),
                ", ".join(sorted(stopped)),
            )

    def _exec_api(self) -> docker.APIClient:
        if self._api is None:
            self._api = (
                docker.APIClient(base_url=self._base_url, timeout=60)
                if self._base_url
                else docker.from_env(timeout=60).api
            )
        return self._api

    def _spool_dir(self, job_id: int, attempt: int) -> Path:
        return self.root / f"{job_id}-{attempt}"

    def _records(self, key: Key) -> TaskRecords:
        """Where the attempt's running tasks are recorded: beside the spools, never mounted."""
        return TaskRecords(self.root / "tasks" / f"{key[0]}-{key[1]}")


def _key(order: StepLaunch) -> Key:
    return (order.job_id, order.attempt)
