"""End-to-end harness: a real scheduler and real agents as subprocesses on 127.0.0.1, the real
CLI as subprocesses, and a real Docker engine with a busybox image built FROM scratch.

Every cluster gets its own XDG directories, port and node names (unique per test), so tests
can run in parallel on one engine without touching each other's containers.
"""

from __future__ import annotations

import getpass
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

TEST_IMAGE = "rota-test-busybox:latest"
DOCKERFILE = """FROM scratch
COPY busybox /bin/busybox
RUN ["/bin/busybox", "--install", "-s", "/bin"]
"""


def docker_available() -> bool:
    try:
        return subprocess.run(["docker", "info"], capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def require_docker() -> None:
    """Skip outside CI when no engine runs; in CI (CI=true) a missing engine is a failure."""
    if docker_available():
        return
    if os.environ.get("CI"):
        pytest.fail("Docker engine not available in CI; .ci/run must start dockerd")
    pytest.skip("no Docker engine (start dockerd; CI always runs these tests)")


def build_test_image() -> str:
    """Build the busybox image FROM scratch (no registry needed); idempotent."""
    busybox = shutil.which("busybox")
    if busybox is None:
        pytest.fail("busybox-static is needed for the test image (apt-get install busybox-static)")
    with tempfile.TemporaryDirectory() as ctx:
        shutil.copy(busybox, Path(ctx) / "busybox")
        (Path(ctx) / "Dockerfile").write_text(DOCKERFILE)
        subprocess.run(
            ["docker", "build", "-q", "-t", TEST_IMAGE, ctx], check=True, capture_output=True
        )
    return TEST_IMAGE


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(
    predicate: Callable[[], Any], timeout: float = 30.0, interval: float = 0.1, what: str = ""
) -> Any:
    """Poll until ``predicate()`` is truthy; return its value or fail naming ``what``."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(
        f"timed out after {timeout}s waiting for {what or predicate}; last value {last!r}"
    )


def scheduler_passes(http_port: int) -> int:
    """How many scheduling passes the scheduler serving /metrics on ``http_port`` (its
    ``--http-listen``) has finished."""
    url = f"http://127.0.0.1:{http_port}/metrics"
    with urllib.request.urlopen(url, timeout=10) as reply:
        text = reply.read().decode()
    for line in text.splitlines():
        if line.startswith("rota_scheduling_pass_seconds_count "):
            return int(float(line.split()[1]))
    raise AssertionError("no rota_scheduling_pass_seconds_count in /metrics")


def fresh_passes(http_port: int, count: int = 1, timeout: float = 30.0) -> None:
    """Wait until ``count`` passes that began after this call have finished (the one in
    progress, if any, is not counted)."""
    seen = scheduler_passes(http_port)
    wait_for(
        lambda: scheduler_passes(http_port) >= seen + count + 1,
        timeout,
        what=f"{count} scheduling pass(es) after now",
    )


@dataclass
class Cluster:
    """A scheduler plus agents for one test. ``cli`` runs a rota command against it."""

    root: Path
    port: int = field(default_factory=free_port)
    tag: str = field(default_factory=lambda: uuid.uuid4().hex[:6])
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    scheduler_args: list[str] = field(default_factory=list)
    env_extra: dict[str, str] = field(default_factory=dict)  # e.g. ROTA_CA for a TLS cluster
    token: str = ""  # the token of the admin named after the OS user (as `rota up` makes)
    ports_port: int = 0  # where jobs' web ports are served (--web-ports-listen); 0: not

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.pop("COLUMNS", None)  # pytest-xdist's workers set 80: CLI output is not fitted
        env.pop("SQUEUE_FORMAT", None)  # a SLURM user's shell: gqueue would take its columns
        env.update(
            XDG_DATA_HOME=str(self.root / "data"),
            XDG_CONFIG_HOME=str(self.root / "config"),
            ROTA_SCHEDULER=self.address,
            PYTHONUNBUFFERED="1",
        )
        if self.token:
            env["ROTA_TOKEN"] = self.token
        env.update(self.env_extra)
        return env

    def node_name(self, short: str) -> str:
        return f"{short}-{self.tag}"

    def spawn(
        self, key: str, args: list[str], env: dict[str, str] | None = None
    ) -> subprocess.Popen[bytes]:
        log = (self.root / f"{key}.log").open("ab")
        proc = subprocess.Popen(
            [sys.executable, "-m", "rota.cli.rota_main", *args],
            env=env or self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.procs[key] = proc
        return proc

    def start_scheduler(self, *extra: str) -> subprocess.Popen[bytes]:
        args = [
            "scheduler",
            "--listen",
            self.address,
            "--db",
            f"sqlite:///{self.root / 'sched.db'}",
        ]
        args += list(extra or self.scheduler_args or ["--open-registration"])
        if not {"--http-listen", "--config"} & set(args):  # free, never a running cluster's 9718
            args += ["--http-listen", f"127.0.0.1:{free_port()}"]
        if not {"--web-ports-listen", "--config"} & set(args):  # jobs' web ports' own origin
            self.ports_port = free_port()
            args += ["--web-ports-listen", f"127.0.0.1:{self.ports_port}"]
        proc = self.spawn("scheduler", args)
        wait_for(
            lambda: "listening on" in self.log("scheduler") or proc.poll() is not None,
            20,
            what="scheduler start",
        )
        assert proc.poll() is None, self.log("scheduler")
        if not self.token:
            self.token = self.add_user(getpass.getuser(), admin=True)
        return proc

    def add_user(self, name: str, admin: bool = False) -> str:
        """Make ``name`` a user of this cluster's database; returns their token (commands run
        with ``cli`` speak as that admin, or as another user with ``ROTA_TOKEN``)."""
        from rota.scheduler.core.users import UsersService
        from rota.scheduler.store.store import Store

        store = Store(f"sqlite:///{self.root / 'sched.db'}")
        try:
            return UsersService(store.users, time.time).add(name, admin)[1]
        finally:
            store.close()

    def start_agent(
        self,
        short: str = "n1",
        gpus: int | None = 2,
        *extra: str,
        env: dict[str, str] | None = None,
        wait: bool = True,
    ) -> subprocess.Popen[bytes]:
        name = self.node_name(short)
        args = [
            "agent",
            "--scheduler",
            self.address,
            "--node",
            name,
            "--data-dir",
            str(self.root / f"agent-{name}"),
            "--heartbeat",
            "0.5",
            "--allowed-mount",
            str(self.root),
            *extra,
        ]
        if gpus is not None:
            args += ["--simulate-gpus", str(gpus)]
        proc = self.spawn(f"agent-{short}", args, env)
        if wait:
            wait_for(
                lambda: self.node(name) and self.node(name)["state"] != "DOWN",
                20,
                what=f"node {name} up",
            )
        return proc

    def log(self, key: str) -> str:
        path = self.root / f"{key}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def kill(self, key: str, sig: int = signal.SIGKILL) -> None:
        proc = self.procs[key]
        if proc.poll() is None:
            os.killpg(proc.pid, sig)
            proc.wait(timeout=30)

    def cli(
        self,
        *args: str,
        input: str | None = None,
        check: bool = False,
        cwd: Path | None = None,
        token: str | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run a user command (gsub, gqueue ...) as a subprocess (in ``cwd`` when given), as
        the user of ``token`` (``add_user``) when given, else as the cluster's admin."""
        module = {"rota": "rota_main"}.get(args[0], args[0])
        result = subprocess.run(
            [sys.executable, "-m", f"rota.cli.{module}", *args[1:]],
            env=self.env if token is None else {**self.env, "ROTA_TOKEN": token},
            capture_output=True,
            text=True,
            input=input,
            timeout=120,
            cwd=cwd,
        )
        if check and result.returncode != 0:
            raise AssertionError(f"{args} exited {result.returncode}: {result.stderr}")
        return result

    def write_job(self, name: str, text: str) -> Path:
        path = self.root / name
        path.write_text(text)
        return path

    def submit(self, text: str, *flags: str) -> str:
        path = self.write_job(f"job-{uuid.uuid4().hex[:6]}.yaml", text)
        out = self.cli("gsub", "--parsable", *flags, str(path), check=True)
        return out.stdout.strip().splitlines()[0]

    def jobs(self) -> list[dict[str, Any]]:
        return json.loads(self.cli("gqueue", "-t", "all", "--json", check=True).stdout)

    def job(self, job_id: str) -> dict[str, Any]:
        found = [j for j in self.jobs() if j["id"] == job_id]
        assert found, f"job {job_id} not listed"
        return found[0]

    def wait_state(self, job_id: str, *states: str, timeout: float = 60) -> dict[str, Any]:
        return wait_for(
            lambda: (j := self.job(job_id))["state"] in states and j,
            timeout,
            interval=0.2,
            what=f"job {job_id} in {states}",
        )

    def pending_reason(self, job_id: str, timeout: float = 60) -> str:
        """Why PENDING job ``job_id`` waits, once a scheduling pass gave it a reason (a job
        just submitted has none until the next pass)."""
        return str(
            wait_for(
                lambda: (j := self.job(job_id))["state"] == "PENDING" and j["reason"],
                timeout,
                interval=0.2,
                what=f"job {job_id} pending with a reason",
            )
        )

    def node(self, name: str) -> dict[str, Any] | None:
        result = self.cli("ginfo", "--json")
        if result.returncode != 0:
            return None
        return next((n for n in json.loads(result.stdout) if n["name"] == name), None)

    def containers(self, all_states: bool = True) -> list[str]:
        """Names of this cluster's containers (every node name carries the cluster tag)."""
        out = subprocess.run(
            [
                "docker",
                "ps",
                "--format",
                "{{.Names}}",
                *(["-a"] if all_states else []),
                "--filter",
                "label=rota.node",
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        return [n for n in out.split() if f"-{self.tag}-" in n]

    def stop(self) -> None:
        for key in list(self.procs):
            self.kill(key, signal.SIGKILL)
        names = self.containers()
        if names:
            subprocess.run(["docker", "rm", "-f", *names], capture_output=True)


@pytest.fixture(scope="session")
def test_image() -> str:
    require_docker()
    return build_test_image()


@pytest.fixture
def searchable_dir() -> Iterator[Path]:
    """A fresh directory (mode 0755) every uid can search. Jobs open their output files as the
    job's user, and pytest's own temporary directories sit under a 0700 one."""
    path = Path(tempfile.mkdtemp(prefix="rota-test-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path)


@pytest.fixture
def cluster(searchable_dir: Path, test_image: str) -> Iterator[Cluster]:
    """A scheduler (open registration) with no agents yet; agents via ``start_agent``. Its
    root is ``searchable_dir``: jobs reach their mounts and output files as their own user."""
    c = Cluster(searchable_dir)
    try:
        yield c
    finally:
        c.stop()
