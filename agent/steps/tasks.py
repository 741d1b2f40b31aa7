"""A step's tasks on this node: each one a ``docker exec`` in the attempt's container, as the
container's user, with srun's environment and the task's own SLURM variables and GPUs.

Output goes to ``send`` as it comes (``StepOutput`` with the launch's request id), then one
``StepEnd`` for the node: the highest exit code and the first task that failed.
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

from rota.agent.steps.exports import exported as shell_exports
from rota.messages import AgentMessage, StepEnd, StepLaunch, StepOutput, StepTask

log = logging.getLogger("rota.agent")
CHUNK = 256 * 1024  # bytes of output per message
START_LOOK = 2.0  # seconds a task cancelled as it started waits to see its process

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
    """The attempt's container and the host indices of its GPUs, in the order it sees them;
    ``gpu_mode`` as the runtime's ("nvidia": the container numbers its GPUs from 0); when it
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
        if target.gpu_mode == "nvidia":
            seen = [str(target.gpus.index(i)) for i in task.gpu_indices if i in target.gpus]
        else:
            seen = [str(i) for i in task.gpu_indices]
        env["CUDA_VISIBLE_DEVICES"] = ",".join(seen)
        env["SLURM_STEP_GPUS"] = ",".join(str(i) for i in task.gpu_indices)
    return env


class StepTasks:
    """The tasks of one StepLaunch on this node."""

    def __init__(
        self,
        order: StepLaunch,
        target: Target,
        api: docker.APIClient,
        send: Callable[[AgentMessage], None],
        timed_out: Callable[[], bool],
    ) -> None:
        self.order = order
        self.target = target
        self.api = api
        self.send = send
        self.timed_out = timed_out
        self._execs: dict[int, str] = {}  # rank -> its exec's id
        self._lock = threading.Lock()
        self._cancelled = False

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
        failed = next(
            (f"task {rank}: {why}" for rank, (code, why) in sorted(results.items()) if code),
            "",
        )
        self.send(StepEnd(order.request_id, worst, timed_out=self.timed_out(), failed_task=failed))

    def cancel(self) -> None:
        """Stop the tasks: SIGTERM to each exec's process and every process under it (a task
        whose process has not started yet stops itself once it has, ``_task``)."""
        with self._lock:
            self._cancelled = True
            execs = list(self._execs.values())
        self._terminate(execs)

    def _terminate(self, execs: list[str], wait: float = 0.0) -> None:
        """SIGTERM to the processes of ``execs`` and those under them; for up to ``wait``
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
        for pid in _with_descendants([p for p in pids if p]):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGTERM)

    def _output(self, data: bytes | None, stderr: bool) -> None:
        if not data:
            return
        for at in range(0, len(data), CHUNK):
            self.send(StepOutput(self.order.request_id, data[at : at + CHUNK], stderr))

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
                return
            stream = self.api.exec_start(exec_id, stream=True, demux=True)
            with self._lock:
                cancelled = self._cancelled
            if cancelled:  # cancel() may have looked before this process was up
                self._terminate([exec_id], wait=START_LOOK)
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
            return
        finally:
            with self._lock:
                self._execs.pop(task.rank, None)
        why = f"Killed by signal {code - 128}" if code > 128 else f"Exited with exit code {code}"
        results[task.rank] = (code, why)


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


def _with_descendants(pids: list[int]) -> list[int]:
    """``pids`` and every process under them (from the host's /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as stat:
                text = stat.read()
        except OSError:
            continue
        parent = int(text[text.rindex(b")") + 2 :].split()[1])
        children.setdefault(parent, []).append(int(entry.name))
    found: list[int] = []
    todo = list(pids)
    while todo and len(found) < 100_000:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, ()))
    return found
