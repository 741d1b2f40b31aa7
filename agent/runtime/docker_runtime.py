"""Runs job attempts as Docker containers with exactly their GPUs, and watches them.

Every container carries labels (node, job id, attempt) and a unique name, so a restarted agent
adopts what is still there and a second launch of the same attempt never starts a second
container. A container stays until the scheduler acknowledges its final report, so a report
lost with a connection is sent again; its output is kept in a file per attempt.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import docker
import requests
from docker.errors import APIError, DockerException, ImageNotFound, NotFound
from docker.types import DeviceRequest, Mount

from rota.agent.runtime import outfiles
from rota.agent.runtime.mounts import MountStager
from rota.agent.runtime.outfiles import OutputFiles
from rota.agent.runtime.policy import ContainerPolicy
from rota.jobspec import Mount as JobMount
from rota.messages import AgentEvent, EventKind, KillOrder, LaunchOrder, RunningAttempt
from rota.validate import SpecError

log = logging.getLogger("rota.agent")

LABEL_NODE = "rota.node"
LABEL_JOB = "rota.job_id"
LABEL_ATTEMPT = "rota.attempt"
LABEL_DISPLAY = "rota.display_id"
LABEL_LIMIT = "rota.time_limit"
LABEL_GPUS = "rota.gpus"  # host GPU indices, comma-separated
GPU_MODES = ("auto", "nvidia", "env")
_ENGINE_DOWN = (requests.exceptions.ConnectionError, requests.exceptions.Timeout)


@dataclass(frozen=True, slots=True)
class EngineHealth:
    """Whether the container engine answered its last ping, and why not."""

    healthy: bool
    error: str = ""


@dataclass(eq=False)
class _Attempt:
    job_id: int
    attempt: int
    container_id: str = ""
    display_id: str = ""
    gpus: tuple[int, ...] = ()  # host indices
    deadline: float = 0.0
    running: bool = False
    final: AgentEvent | None = None
    stop_kind: EventKind | None = None  # KILLED, TIMED_OUT or LOST once the agent stops it
    stop_reason: str = ""  # reported as the message of the final report

    @property
    def key(self) -> tuple[int, int]:
        return (self.job_id, self.attempt)


class DockerRuntime:
    """The agent's one interface to the container engine. Thread-safe.

    ``report`` receives every event; ``clock`` gives Unix seconds (event times, time limits).
    ``max_output``: bytes kept of an attempt's output in its log and in each of its output files.
    """

    def __init__(
        self,
        node: str,
        data_dir: Path,
        report: Callable[[AgentEvent], None],
        clock: Callable[[], float],
        gpu_mode: str = "auto",
        base_url: str | None = None,
        network: str = "",
        kill_grace: float = 10.0,
        policy: ContainerPolicy | None = None,
        max_output: int = 1 << 30,
    ) -> None:
        self.node = node
        self.max_output = max_output  # bytes kept of an attempt's output, per file
        self.policy = policy or ContainerPolicy()
        self.log_dir = data_dir / "logs"
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.mounts = MountStager(data_dir / "mounts")  # bind sources, opened without a race
        self._report = report
        self._clock = clock
        self._base_url = base_url
        self._client = self._new_client(timeout=60)
        self._probe = self._new_client(timeout=3)  # health pings answer fast or count as down
        self._kill_grace = kill_grace
        self._lock = threading.Lock()
        self._attempts: dict[tuple[int, int], _Attempt] = {}
        self.gpu_mode = self._resolve_gpu_mode(gpu_mode)
        self.network = network or self._default_network()

    def _new_client(self, timeout: int) -> docker.DockerClient:
        if self._base_url:
            return docker.DockerClient(base_url=self._base_url, timeout=timeout)
        return docker.from_env(timeout=timeout)

    def _resolve_gpu_mode(self, mode: str) -> str:
        if mode not in GPU_MODES:
            raise ValueError(f"unknown GPU mode {mode!r}; use one of {', '.join(GPU_MODES)}")
        if mode != "auto":
            return mode
        try:
            runtimes = self._client.info().get("Runtimes", {})
        except (DockerException, *_ENGINE_DOWN):
            runtimes = {}
        if "nvidia" in runtimes:
            return "nvidia"
        log.warning(
            "GPU mode env: the engine has no nvidia runtime, so containers only get "
            "CUDA_VISIBLE_DEVICES and no GPU device (a test/demo mode)"
        )
        return "env"

    def _default_network(self) -> str:
        try:
            if self._client.networks.list(names=["bridge"]):
                return ""
        except (DockerException, *_ENGINE_DOWN):
            return ""
        log.info("the engine has no bridge network; job containers run with network none")
        return "none"

    # ------------------------------------------------------------------ state

    def health(self) -> EngineHealth:
        """Ping the engine with a short timeout."""
        try:
            self._probe.ping()
        except Exception as exc:  # any failure to answer means unhealthy
            return EngineHealth(False, f"container engine not answering: {_short(exc)}")
        return EngineHealth(True)

    def attempts(self) -> list[RunningAttempt]:
        """Attempts this agent holds: running, or ended with a report not yet acknowledged."""
        with self._lock:
            return [
                RunningAttempt(a.job_id, a.attempt, a.container_id, a.running)
                for a in self._attempts.values()
            ]

    def gpu_jobs(self) -> dict[int, str]:
        """Host GPU index -> display id of the attempt holding it (launching or running)."""
        with self._lock:
            return {
                gpu: a.display_id or str(a.job_id)
                for a in self._attempts.values()
                if a.final is None
                for gpu in a.gpus
            }

    def container_info(self, container_id: str) -> tuple[int, str] | None:
        """(host pid of the container's init process, job display id); None when it is gone.

        Used to map GPU processes to jobs (``owners.ProcessOwners``).
        """
        try:
            attrs = self._probe.api.inspect_container(container_id)
        except (DockerException, *_ENGINE_DOWN):
            return None
        labels = attrs.get("Config", {}).get("Labels") or {}
        display = labels.get(LABEL_DISPLAY) or labels.get(LABEL_JOB, "")
        return int(attrs.get("State", {}).get("Pid") or 0), display

    def finals(self) -> list[AgentEvent]:
        """Final reports not yet acknowledged (sent again after a reconnect)."""
        with self._lock:
            return [a.final for a in self._attempts.values() if a.final is not None]

    def is_running(self, job_id: int, attempt: int) -> bool:
        with self._lock:
            found = self._attempts.get((job_id, attempt))
            return found is not None and found.running

    def is_pending(self, job_id: int, attempt: int) -> bool:
        """True while the attempt is being launched (no container running or ended yet)."""
        with self._lock:
            found = self._attempts.get((job_id, attempt))
            return found is not None and not found.running and found.final is None

    def log_path(self, job_id: int, attempt: int) -> Path:
        return self.log_dir / str(job_id) / f"{attempt}.log"

    # ------------------------------------------------------------------ adopt

    def adopt(self) -> None:
        """Take over this node's containers left by an earlier agent process.

        Running ones are watched with their original deadlines; ended ones are reported with
        their real exit codes.
        """
        containers = self._client.containers.list(
            all=True, filters={"label": f"{LABEL_NODE}={self.node}"}
        )
        for container in containers:
            labels = container.labels
            att = _Attempt(
                int(labels[LABEL_JOB]),
                int(labels[LABEL_ATTEMPT]),
                container.id,
                labels.get(LABEL_DISPLAY, ""),
                tuple(int(i) for i in labels.get(LABEL_GPUS, "").split(",") if i.isdigit()),
            )
            state = container.attrs.get("State", {})
            started = _parse_time(state.get("StartedAt", ""))
            limit = float(labels.get(LABEL_LIMIT, "0") or 0)
            att.deadline = started + limit if limit and started else 0.0
            with self._lock:
                if att.key in self._attempts:
                    continue
                self._attempts[att.key] = att
            if state.get("Running"):
                att.running = True
                log.info(
                    "adopted running job %s attempt %d",
                    labels.get(LABEL_DISPLAY),
                    att.attempt,
                    extra={"job": labels.get(LABEL_DISPLAY), "attempt": att.attempt},
                )
                self._spawn(self._watch, att)
            elif state.get("Status") == "created":
                self._remove(att)  # never started: the scheduler sends the launch again
                with self._lock:
                    self._attempts.pop(att.key, None)
            else:
                self._spawn(self._finish, att)

    # ------------------------------------------------------------------ launch

    def launch(self, order: LaunchOrder) -> None:
        """Start the attempt on a worker thread (a second order for it is ignored)."""
        att = _Attempt(
            order.job_id, order.attempt, display_id=order.display_id, gpus=order.gpu_indices
        )
        with self._lock:
            existing = self._attempts.get(att.key)
            if existing is None:
                self._attempts[att.key] = att
        if existing is not None:
            if existing.final is not None:
                self._report(existing.final)
            return
        self._spawn(self._launch_or_fail, order, att)

    def _launch_or_fail(self, order: LaunchOrder, att: _Attempt) -> None:
        """``_launch``; an unexpected error before the container runs fails the attempt with
        its reason (the scheduler frees its GPUs), one while it runs is logged and the attempt
        is reported when its container ends."""
        try:
            self._launch(order, att)
        except Exception as exc:  # the launch thread reports every attempt it took
            log.exception(
                "job %d attempt %d: unexpected error",
                att.job_id,
                att.attempt,
                extra={"job": att.job_id, "attempt": att.attempt},
            )
            if att.final is not None:
                return
            if att.running:
                self._finish(att)
            else:
                self._fail(att, f"node {self.node} could not start it: {_short(exc)}")

    def _launch(self, order: LaunchOrder, att: _Attempt) -> None:
        try:
            mounts = self.policy.admit(order)
            files = outfiles.plan(order, self.node, self.policy.allowed_mounts)
            outfiles.create(files, *self.policy.run_as(order))
            mounts = self.mounts.stage(_stage_key(att), mounts)
        except SpecError as exc:
            self._fail(att, f"refused by node {self.node}: {exc}")
            return
        try:
            self._ensure_image(order)
            args = self._create_args(order, mounts)
            args["labels"].update(files.labels())
            if args.get("device_requests"):
                log.info(
                    "job %s attempt %d: GPUs %s passed as an nvidia DeviceRequest",
                    order.display_id,
                    order.attempt,
                    ",".join(order.gpu_uuids),
                    extra={"job": order.display_id, "attempt": order.attempt},
                )
            container = self._client.containers.create(**args)
        except _ENGINE_DOWN as exc:
            self._fail(att, f"container engine not answering: {_short(exc)}", engine_fault=True)
            return
        except (APIError, DockerException) as exc:
            self._fail(att, _engine_message(exc))
            return
        att.container_id = container.id
        try:
            container.start()
        except (APIError, DockerException, *_ENGINE_DOWN) as exc:
            engine_down = isinstance(exc, _ENGINE_DOWN)
            self._remove(att)
            self._fail(att, _engine_message(exc), engine_fault=engine_down)
            return
        self.mounts.release(_stage_key(att))  # the started container keeps its own copy
        now = self._clock()
        att.deadline = now + order.time_limit if order.time_limit else 0.0
        att.running = True
        self._report(AgentEvent(att.job_id, att.attempt, EventKind.STARTED, time=now))
        self._watch(att)

    def _ensure_image(self, order: LaunchOrder) -> None:
        spec = order.spec
        if spec.pull == "always":
            self._client.images.pull(spec.image)
            return
        try:
            self._client.images.get(spec.image)
        except ImageNotFound:
            if spec.pull == "never":
                raise DockerException(
                    f"image {spec.image} is not present on the node and pull is never"
                ) from None
            try:
                self._client.images.pull(spec.image)
            except (APIError, DockerException) as exc:
                raise DockerException(
                    f"image {spec.image} is not present on the node and pulling it failed: "
                    f"{_engine_message(exc)}"
                ) from None

    def _create_args(self, order: LaunchOrder, mounts: tuple[JobMount, ...]) -> dict[str, Any]:
        """``containers.create`` arguments; ``mounts`` as ``policy.admit`` resolved them."""
        spec = order.spec
        env = order.container_env  # policy.admit refused user values for the GPU variables
        uid, gid = self.policy.run_as(order)
        kwargs: dict[str, Any] = {"user": f"{uid}:{gid}", **self.policy.hardening()}
        indices = ",".join(str(i) for i in order.gpu_indices)
        if self.gpu_mode == "nvidia" and order.gpu_uuids:
            kwargs["device_requests"] = [
                DeviceRequest(
                    driver="nvidia", device_ids=list(order.gpu_uuids), capabilities=[["gpu"]]
                )
            ]
        elif self.gpu_mode == "nvidia":
            env["NVIDIA_VISIBLE_DEVICES"] = "void"
        else:
            env["CUDA_VISIBLE_DEVICES"] = indices
            env["NVIDIA_VISIBLE_DEVICES"] = indices or "void"
        if order.host_network:
            kwargs["network_mode"] = "host"
        elif self.network:
            kwargs["network_mode"] = self.network
        if spec.cpus:
            kwargs["nano_cpus"] = int(spec.cpus * 1e9)
        if spec.memory:
            kwargs["mem_limit"] = spec.memory
        if spec.shm_size:
            kwargs["shm_size"] = spec.shm_size
        if spec.workdir:
            kwargs["working_dir"] = spec.workdir
        if mounts:
            kwargs["mounts"] = [
                Mount(target=m.target, source=m.source, type="bind", read_only=m.read_only)
                for m in mounts
            ]
        return dict(
            image=spec.image,
            command=list(spec.command),
            name=_container_name(self.node, order.job_id, order.attempt),
            environment=env,
            labels={
                LABEL_NODE: self.node,
                LABEL_JOB: str(order.job_id),
                LABEL_ATTEMPT: str(order.attempt),
                LABEL_DISPLAY: order.display_id,
                LABEL_LIMIT: str(order.time_limit),
                LABEL_GPUS: indices,
            },
            init=True,
            detach=True,
            **kwargs,
        )

    def _fail(self, att: _Attempt, message: str, engine_fault: bool = False) -> None:
        self.mounts.release(_stage_key(att))
        report = AgentEvent(
            att.job_id,
            att.attempt,
            EventKind.LAUNCH_FAILED,
            message=message,
            time=self._clock(),
            engine_fault=engine_fault,
        )
        att.final = report
        log.warning(
            "job %d attempt %d could not start: %s",
            att.job_id,
            att.attempt,
            message,
            extra={"job": att.job_id, "attempt": att.attempt},
        )
        self._report(report)

    # ------------------------------------------------------------------ watch

    def _watch(self, att: _Attempt) -> None:
        """Follow output, enforce the deadline, then report how the attempt ended."""
        follower = self._spawn(self._follow_logs, att)
        while True:
            remaining = att.deadline - self._clock() if att.deadline else 3600.0
            if att.deadline and remaining <= 0 and not att.stop_kind:
                att.stop_kind = EventKind.TIMED_OUT
                self._spawn(self._stop, att, self._kill_grace)
                remaining = self._kill_grace + 5
            try:
                self._client.containers.get(att.container_id).wait(timeout=max(remaining, 0.5))
                break
            except NotFound:
                break
            except _ENGINE_DOWN:
                if att.deadline and self._clock() < att.deadline:
                    time.sleep(0.5)
                continue
            except (APIError, DockerException):
                time.sleep(1.0)
        follower.join(timeout=5)
        self._finish(att)

    def _follow_logs(self, att: _Attempt) -> None:
        path = self.log_path(att.job_id, att.attempt)
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            container = self._client.containers.get(att.container_id)
            files = [
                self._spawn(self._follow_file, container, target, stdout, stderr)
                for target, stdout, stderr in OutputFiles.from_labels(container.labels).streams()
            ]
            with path.open("wb") as out:
                capped = outfiles.CappedWriter(out, self.max_output)
                for chunk in container.logs(stream=True, follow=True):
                    if not capped.write(chunk):
                        break
            for follower in files:  # done before the complete output is written over them
                follower.join(timeout=5)
        except (DockerException, *_ENGINE_DOWN, OSError):
            pass  # the whole output is fetched again when the attempt ends

    def _follow_file(self, container: Any, path: str, stdout: bool, stderr: bool) -> None:
        """The job's own output file (``--output``/``--error``) as the output comes."""
        try:
            uid, gid = outfiles.owner(container.attrs.get("Config", {}).get("User", ""))
            stream = container.logs(stdout=stdout, stderr=stderr, stream=True, follow=True)
            outfiles.write(path, uid, gid, stream, self.max_output)
        except (DockerException, *_ENGINE_DOWN, OSError):
            pass  # written whole when the attempt ends, which reports why it cannot be

    def _write_files(self, container: Any) -> list[str]:
        """The job's output files, complete (the attempt has ended); a note for the final
        report per file that could not be written or was cut at ``max_output``."""
        notes = []
        for path, stdout, stderr in OutputFiles.from_labels(container.labels).streams():
            try:
                uid, gid = outfiles.owner(container.attrs.get("Config", {}).get("User", ""))
                stream = container.logs(stdout=stdout, stderr=stderr, stream=True, follow=False)
                if outfiles.write(path, uid, gid, stream, self.max_output):
                    notes.append(f"output file {path} {outfiles.truncation_note(self.max_output)}")
            except _ENGINE_DOWN:
                raise  # written again once the engine answers
            except (DockerException, OSError) as exc:
                is_os = isinstance(exc, OSError)
                reason = (exc.strerror or str(exc)) if is_os else _engine_message(exc)
                log.warning("cannot write the job's output file %s: %s", path, reason)
                notes.append(f"output file {path} not written: {reason}")
        return notes

    def _save_log(self, att: _Attempt, container: Any) -> list[str]:
        """The attempt's complete output into its log file (at most ``max_output`` bytes,
        streamed, never whole in memory); a note for the final report when it was cut."""
        path = self.log_path(att.job_id, att.attempt)
        tmp = path.with_suffix(".tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with tmp.open("wb") as out:
                capped = outfiles.CappedWriter(out, self.max_output)
                for chunk in container.logs(stdout=True, stderr=True, stream=True, follow=False):
                    if not capped.write(chunk):
                        break
            tmp.replace(path)
        except _ENGINE_DOWN:
            raise  # saved again once the engine answers
        except OSError as exc:
            log.warning("cannot save the output of job %d: %s", att.job_id, exc)
            return [f"output not saved on node {self.node}: {exc.strerror or exc}"]
        return [f"output {outfiles.truncation_note(self.max_output)}"] if capped.truncated else []

    def _finish(self, att: _Attempt) -> None:
        """Save the complete output, then report the end (kept until acknowledged)."""
        while True:
            try:
                container = self._client.containers.get(att.container_id)
                state = container.attrs.get("State", {})
                if state.get("Running"):
                    container.wait()
                    continue
                notes = self._save_log(att, container) + self._write_files(container)
                break
            except NotFound:
                report = AgentEvent(
                    att.job_id,
                    att.attempt,
                    EventKind.LOST,
                    message="container disappeared",
                    time=self._clock(),
                )
                self._complete(att, report)
                return
            except (DockerException, *_ENGINE_DOWN):
                time.sleep(1.0)
        code = int(state.get("ExitCode", 0) or 0)
        kind = att.stop_kind or EventKind.EXITED
        report = AgentEvent(
            att.job_id,
            att.attempt,
            kind,
            exit_code=code,
            oom_killed=bool(state.get("OOMKilled")),
            message="; ".join(filter(None, [att.stop_reason or state.get("Error", ""), *notes])),
            time=_parse_time(state.get("FinishedAt", "")) or self._clock(),
        )
        self._complete(att, report)

    def _complete(self, att: _Attempt, report: AgentEvent) -> None:
        with self._lock:
            att.running = False
            att.final = report
        self._report(report)

    # ------------------------------------------------------------------ stop

    def kill(self, order: KillOrder) -> None:
        """Stop an attempt: SIGTERM, ``grace`` seconds, SIGKILL; reported as KILLED."""
        with self._lock:
            att = self._attempts.get((order.job_id, order.attempt))
        if att is None:
            self._report(
                AgentEvent(
                    order.job_id,
                    order.attempt,
                    EventKind.LOST,
                    message="no container for this attempt",
                    time=self._clock(),
                )
            )
            return
        if att.final is not None:
            self._report(att.final)
            return
        if not att.stop_kind:
            att.stop_kind = EventKind.KILLED
        self._spawn(self._stop, att, order.grace)

    def _stop(self, att: _Attempt, grace: float) -> None:
        while att.container_id:
            try:
                self._client.containers.get(att.container_id).stop(timeout=int(max(grace, 0)))
                return
            except NotFound:
                return
            except (DockerException, *_ENGINE_DOWN):
                time.sleep(1.0)

    def fence(self, reason: str) -> None:
        """Stop every running attempt because this node lost the scheduler; they are reported
        LOST (the scheduler ends them NODE_FAIL and requeues those that allow it)."""
        with self._lock:
            running = [a for a in self._attempts.values() if a.running and not a.stop_kind]
            for att in running:
                att.stop_kind, att.stop_reason = EventKind.LOST, f"fenced: {reason}"
        for att in running:
            self._spawn(self._stop, att, self._kill_grace)

    def keep_only(self, keep: set[tuple[int, int]]) -> None:
        """After a (re)connect: stop running attempts the scheduler does not list."""
        with self._lock:
            stray = [a for a in self._attempts.values() if a.running and a.key not in keep]
        for att in stray:
            log.warning(
                "stopping job %d attempt %d: the scheduler no longer runs it here",
                att.job_id,
                att.attempt,
                extra={"job": att.job_id, "attempt": att.attempt},
            )
            self.kill(
                KillOrder(att.job_id, att.attempt, "not kept by the scheduler", self._kill_grace)
            )

    def ack(self, job_id: int, attempt: int) -> None:
        """The scheduler recorded the final report: remove the container (output stays)."""
        with self._lock:
            att = self._attempts.get((job_id, attempt))
            if att is None or att.final is None:
                return
            del self._attempts[att.key]
        self._remove(att)

    def _remove(self, att: _Attempt) -> None:
        if not att.container_id:
            return
        try:
            self._client.containers.get(att.container_id).remove(force=True)
        except NotFound:
            pass
        except (DockerException, *_ENGINE_DOWN) as exc:
            log.warning(
                "could not remove container of job %d attempt %d: %s",
                att.job_id,
                att.attempt,
                _short(exc),
                extra={"job": att.job_id, "attempt": att.attempt},
            )

    def close(self) -> None:
        self._client.close()
        self._probe.close()

    @staticmethod
    def _spawn(target: Callable[..., None], *args: Any) -> threading.Thread:
        thread = threading.Thread(target=_logged, args=(target, *args), daemon=True)
        thread.start()
        return thread


def _logged(target: Callable[..., None], *args: Any) -> None:
    """Run a worker thread's ``target``; an error escaping it is logged, not lost."""
    try:
        target(*args)
    except Exception:
        log.exception("agent worker %s failed", getattr(target, "__name__", target))


def _stage_key(att: _Attempt) -> str:
    return f"{att.job_id}-{att.attempt}"


def _container_name(node: str, job_id: int, attempt: int) -> str:
    safe = re.sub(r"[^A-Za-z0-9_.-]", "-", node)
    return f"rota-{safe}-{job_id}-{attempt}"


def _parse_time(text: str) -> float:
    """Docker's RFC 3339 time with nanoseconds -> Unix seconds (0 for the zero time)."""
    if not text or text.startswith("0001-"):
        return 0.0
    m = re.match(r"^(.*T\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$", text)
    if not m:
        return 0.0
    frac = (m.group(2) or "0")[:6].ljust(6, "0")
    zone = "+00:00" if m.group(3) == "Z" else m.group(3)
    return datetime.fromisoformat(f"{m.group(1)}.{frac}{zone}").timestamp()


def _engine_message(exc: BaseException) -> str:
    if isinstance(exc, APIError):
        return str(exc.explanation or exc)
    return _short(exc)


def _short(exc: BaseException) -> str:
    return str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
