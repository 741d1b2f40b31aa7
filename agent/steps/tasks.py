"""A step's tasks on this node: each one a ``docker exec`` in the attempt's container, as the
container's user, with srun's environment and the task's own SLURM variables and GPUs.

Output goes to ``send`` as it comes (``StepOutput`` with the launch's request id), at most the
launch's ``window`` of it not yet acknowledged by the scheduler (a task that writes faster
waits on its pipe), then one ``StepEnd`` for the node: the highest exit code and the first task
that failed. Each running exec is recorded in ``records`` so that a restarted agent finds it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import docker
from docker.errors import DockerException

from rota.agent.steps.early_stop import EarlyStop, task_end
from rota.agent.steps.exports import exported as shell_exports
from rota.agent.steps.records import TaskRecords, with_descendants
from rota.messages import AgentMessage, StepEnd, StepLaunch, StepOutput, StepTask, window_cost

log = logging.getLogger("rota.agent")
CHUNK = 256 * 1024  # bytes of output per message
DRAIN_WAIT = 10.0  # seconds stopped tasks' output may wait for room in the window
START_LOOK = 10.0  # seconds a stop waits for a just started exec's process to show

# Variables that describe the node srun ran on: a task on another node keeps its container's.
NODE_VARIABLES = frozenset(
    {
        "SLURMD_NODENAME",
        "SLURM_NODEID",
        "SLURM_GPUS_ON_NODE",
        "SLURM_JOB_GPUS",
        "SLURM_CPUS_ON_NODE",
        "ROTA_GPU_INDICES",
        "ROTA_GPU_UUIDS",
        "NODE_RANK",
        "HOSTNAME",
        "CUDA_VISIBLE_DEVICES",
        "NVIDIA_VISIBLE_DEVICES",
        "PWD",
        "OLDPWD",
        "SHLVL",
        "_",
    }
)


@dataclass(frozen=True, slots=True)
class Target:
    """The attempt's container and the host indices of its GPUs; ``gpu_mode`` as the
    runtime's ("nvidia": the container numbers its GPUs from 0, see ``visible``); when it
    started and must end (Unix seconds; 0: no time limit)."""

    container_id: str
    gpus: tuple[int, ...]
    gpu_mode: str
    start: float = 0.0
    deadline: float = 0.0


def exported(text: bytes) -> dict[str, str]:
    """srun's exported variables (``export -p``), less those that describe its node."""
    env = shell_exports(text.decode("utf-8", "surrogateescape"))
    return {k: v for k, v in env.items() if k not in NODE_VARIABLES}


def task_env(
    order: StepLaunch, task: StepTask, target: Target, base: dict[str, str]
) -> dict[str, str]:
    """srun's environment with the step's and the task's variables on top."""
    env = dict(base)
    step = f"{order.step}"
    env.update(
        SLURM_STEP_ID=step,
        SLURM_STEPID=step,
        SLURM_PROCID=str(task.rank),
        SLURM_LOCALID=str(task.local_id),
        SLURM_NODEID=str(order.node_id),
        SLURM_STEP_NUM_TASKS=str(order.ntasks),
        SLURM_STEP_NUM_NODES=str(order.nnodes),
        SLURM_STEP_NODELIST=order.nodelist,
        SLURM_STEP_TASKS_PER_NODE=order.tasks_per_node,
        SLURM_NTASKS=str(order.ntasks),
        SLURM_NPROCS=str(order.ntasks),
    )
    if task.gpu_indices:
        env["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for i in visible(task, target))
        env["SLURM_STEP_GPUS"] = ",".join(str(i) for i in task.gpu_indices)
    return env


def visible(task: StepTask, target: Target) -> list[int]:
    """The task's GPUs as its container numbers them, in the task's order. "nvidia": the
    container sees only the job's GPUs, numbered from 0 in host index order (the engine's and
    NVML's, by PCI bus), whatever order they were allocated in; a GPU the container does not
    have is left out. Otherwise ("env") the container sees the host's numbering."""
    if target.gpu_mode != "nvidia":
        return list(task.gpu_indices)
    numbered = sorted(target.gpus)
    return [numbered.index(i) for i in task.gpu_indices if i in numbered]


class StepTasks:
    """The tasks of one StepLaunch on ``node``, stopped early as srun's ``-K``/``-W`` say."""

    def __init__(
        self,
        order: StepLaunch,
        target: Target,
        api: docker.APIClient,
        send: Callable[[AgentMessage], None],
        timed_out: Callable[[], bool],
        records: TaskRecords,
        node: str = "",
    ) -> None:
        self.order = order
        self.target = target
        self.api = api
        self.send = send
        self.timed_out = timed_out
        self.records = records
        self._execs: dict[int, str] = {}  # rank -> its exec's id
        self._lock = threading.Condition()  # also signals room in the window
        self._unacked = 0  # bytes of output sent and not yet acknowledged
        self._cancelled = False
        self._signal = signal.SIGTERM  # what the latest stop sends
        self._stopped_at = 0.0  # when cancel was called (monotonic)
        self._abandoned = False  # the scheduler's stream is gone: no acknowledgement will come
        self.early = EarlyStop(order, node, self._stop, lambda text: self._output(text, True))

    def run(self) -> None:
        """Run every task to its end, then send the node's StepEnd (blocking)."""
        order = self.order
        results: dict[int, tuple[int, str]] = {}
        try:
            user = self.api.inspect_container(self.target.container_id)["Config"].get("User", "")
        except DockerException as exc:
            self.send(StepEnd(order.request_id, 1, error=f"the job's container: {exc}"))
            return
        base = exported(order.environment)
        threads = [
            threading.Thread(target=self._task, args=(task, user, base, results), daemon=True)
            for task in order.tasks
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        worst = max((code for code, _ in results.values()), default=0)
        first = self.early.first_failed
        failed = next(
            (
                f"task {rank}: {why}"
                for rank, (code, why) in sorted(
                    results.items(), key=lambda r: (r[0] != first, r[0])
                )
                if code
            ),
            "",
        )
        report = self.early.report({r: why for r, (code, why) in results.items() if code})
        self._output(report, True)
        self.send(
            StepEnd(
                order.request_id,
                worst,
                timed_out=self.timed_out(),
                failed_task=failed,
                reported=bool(report) or self.early.fired,
            )
        )

    def cancel(self, abandon: bool = False, kill: bool = False, named: bool = False) -> None:
        """Stop the tasks for a reason of the scheduler's or the node's (``_stop``; ``kill``:
        with SIGKILL; ``named``: srun's -K/-W, so the stopped tasks are named at the end)."""
        self.early.silence(named)
        self._stop(signal.SIGKILL if kill else signal.SIGTERM, abandon)

    def _stop(self, sig: signal.Signals, abandon: bool = False) -> None:
        """Stop the tasks: ``sig`` to each exec's process and every process under it (what
        they write then, a trap's last words, still goes out while the window has room), on a
        thread of its own that waits up to ``START_LOOK`` for a process still starting; a task
        not started yet stops itself once it has (``_task``).
        ``abandon``: the scheduler's stream is gone, so output waiting for room is dropped."""
        with self._lock:
            self._cancelled = True
            self._signal = sig
            self._stopped_at = self._stopped_at or time.monotonic()
            self._abandoned = self._abandoned or abandon
            execs = list(self._execs.values())
            self._lock.notify_all()
        # The engine answers an exec's start before its process is up (no Pid yet): the stop
        # looks again for a while, on a thread of its own so that the caller never waits.
        threading.Thread(
            target=self._terminate, args=(execs, START_LOOK, sig), name="step-stop", daemon=True
        ).start()

    def _terminate(
        self, execs: list[str], wait: float = 0.0, sig: signal.Signals = signal.SIGTERM
    ) -> None:
        """``sig`` to the processes of ``execs`` and those under them; for up to ``wait``
        seconds, an exec whose process is not up yet is looked at again."""
        deadline = time.monotonic() + wait
        pids: list[int] = []
        for exec_id in execs:
            pid = 0
            while True:
                with contextlib.suppress(DockerException):
                    pid = int(self.api.exec_inspect(exec_id).get("Pid") or 0)
                if pid or time.monotonic() >= deadline:
                    break
                time.sleep(0.05)
            pids.append(pid)
        for pid in with_descendants([p for p in pids if p]):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)

    def acked(self, size: int) -> None:
        """The scheduler passed on one message of ``size`` bytes of this node's output."""
        with self._lock:
            self._unacked -= window_cost(size)
            self._lock.notify_all()

    def _output(self, data: bytes | None, stderr: bool) -> None:
        """Send ``data`` as the window allows (waits for room; dropped instead when the
        scheduler's stream is gone, or the tasks were stopped ``DRAIN_WAIT`` seconds ago)."""
        if not data:
            return
        window = self.order.window
        for at in range(0, len(data), CHUNK):
            piece = data[at : at + CHUNK]
            cost = window_cost(len(piece))  # at least MESSAGE_COST: a byte is still a message
            with self._lock:
                while window and self._unacked and self._unacked + cost > window:
                    if self._given_up():
                        return
                    self._lock.wait(1.0)
                self._unacked += cost
            self.send(StepOutput(self.order.request_id, piece, stderr))

    def _given_up(self) -> bool:
        """Whether output that waits for room is dropped (with the lock held)."""
        return self._abandoned or (
            self._cancelled and time.monotonic() - self._stopped_at > DRAIN_WAIT
        )

    def _task(
        self, task: StepTask, user: str, base: dict[str, str], results: dict[int, tuple[int, str]]
    ) -> None:
        order = self.order
        env = task_env(order, task, self.target, base)
        try:
            exec_id = self.api.exec_create(
                self.target.container_id,
                list(order.argv),
                environment=env,
                workdir=order.cwd or None,
                user=user,
                stdout=True,
                stderr=True,
            )["Id"]
            with self._lock:
                self._execs[task.rank] = exec_id
                cancelled = self._cancelled
            if cancelled:
                results[task.rank] = (1, "Cancelled before it started")
                self.early.ended(task.rank, 1)
                return
            self.records.add(exec_id, f"{order.job_id}.{order.step} task {task.rank}")
            stream = self.api.exec_start(exec_id, stream=True, demux=True)
            with self._lock:
                cancelled = self._cancelled
            if cancelled:  # cancel() may have looked before this process was up
                self._terminate([exec_id], START_LOOK, self._signal)
            label = _Label(task.rank) if order.label else None
            for out, err in stream:
                for data, stderr in ((out, False), (err, True)):
                    self._output(label.lines(data, stderr) if label and data else data, stderr)
            if label is not None:
                for stderr in (False, True):
                    self._output(label.rest(stderr), stderr)
            code = int(self.api.exec_inspect(exec_id).get("ExitCode") or 0)
        except (DockerException, OSError) as exc:
            log.warning("step %d.%d task %d: %s", order.job_id, order.step, task.rank, exc)
            self.send(StepOutput(order.request_id, f"task {task.rank}: {exc}\n".encode(), True))
            results[task.rank] = (1, "could not start")
            self.early.ended(task.rank, 1)
            return
        finally:
            with self._lock:
                exec_id = self._execs.pop(task.rank, "")
            if exec_id:
                self.records.remove(exec_id)
        results[task.rank] = (code, task_end(code))
        self.early.ended(task.rank, code)


class _Label:
    """srun -l: whole lines of a task's output, each after ``RANK: ``."""

    def __init__(self, rank: int) -> None:
        self.prefix = f"{rank}: ".encode()
        self.partial = {False: b"", True: b""}

    def lines(self, data: bytes, stderr: bool) -> bytes:
        text = self.partial[stderr] + data
        whole, newline, self.partial[stderr] = text.rpartition(b"\n")
        if not newline:
            return b""
        return b"".join(self.prefix + line + b"\n" for line in whole.split(b"\n"))

    def rest(self, stderr: bool) -> bytes:
        left, self.partial[stderr] = self.partial[stderr], b""
        return self.prefix + left + b"\n" if left else b""
