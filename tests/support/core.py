"""The scheduler's services driven step by step in-process: a fake clock, a SQLite store, no
network and no event loop. ``Harness.engine`` supplies the engine's core-thread steps (hello,
heartbeat, tick) so tests run the same composition the daemon does."""

from __future__ import annotations

from pathlib import Path

from rota.jobspec import JobSpec
from rota.messages import (
    AgentEvent,
    GpuInfo,
    Hello,
    Inventory,
    LaunchOrder,
    RunningAttempt,
)
from rota.scheduler.config import SchedulerConfig, policy_config
from rota.scheduler.core.jobs import SubmitItem
from rota.scheduler.core.lifecycle import Orders
from rota.scheduler.core.services import Services, build_services
from rota.scheduler.core_thread import Executor
from rota.scheduler.engine import Engine
from rota.scheduler.policy import make_policy
from rota.scheduler.store.store import Store
from rota.states import JobState


class Clock:
    """A wall clock and a monotonic clock the test moves by hand: ``clock.now += 5`` lets
    5 s pass on both; ``clock.step(3600)`` steps the wall clock alone (an NTP correction,
    ``date -s``). Called, it reads the wall clock; ``clock.monotonic()`` reads the other."""

    def __init__(self) -> None:
        self._wall = 1_000_000.0
        self._monotonic = 5_000.0

    @property
    def now(self) -> float:
        return self._wall

    @now.setter
    def now(self, value: float) -> None:
        self._monotonic += value - self._wall
        self._wall = value

    def step(self, seconds: float) -> None:
        """Step the wall clock by ``seconds`` (either way); monotonic time does not move."""
        self._wall += seconds

    def __call__(self) -> float:
        return self._wall

    def monotonic(self) -> float:
        return self._monotonic


def inventory(gpus: int) -> Inventory:
    return Inventory(
        gpus=tuple(GpuInfo(i, f"GPU-{i}", "A100", 80 * 2**30) for i in range(gpus)),
        cpus=32,
        memory=256 * 2**30,
    )


class Harness:
    """Services over a SQLite file in ``path`` with the ``first-fit`` policy; the engine
    runs its calls on ``executor`` (default: the daemon's core and policy threads)."""

    policy = "first-fit"

    def __init__(self, path: Path, executor: Executor | None = None, **config: object) -> None:
        self.path = path
        self.executor = executor
        self.clock = Clock()
        self.config = SchedulerConfig(**{"open_registration": True, **config})  # type: ignore[arg-type]
        self.s, self.engine = self._build()
        self.sessions: dict[str, int] = {}

    def _build(self) -> tuple[Services, Engine]:
        self.store = Store(f"sqlite:///{self.path / 'db'}")
        services = build_services(
            self.store,
            self.config,
            self.clock,
            make_policy(self._policy(), policy_config(self.config)),
            monotonic=self.clock.monotonic,
        )
        return services, Engine(services, executor=self.executor)

    def _policy(self) -> str:
        return self.policy

    def restart(self) -> None:
        """A scheduler restart: everything in memory is rebuilt from the database."""
        self.store.close()
        self.s, self.engine = self._build()
        self.sessions = {}

    def connect(
        self, node: str, gpus: int = 2, attempts: tuple[RunningAttempt, ...] = ()
    ) -> Orders:
        session = len(self.sessions) + 100
        self.sessions[node] = session
        return self.engine.steps.hello(Hello(node, "tok", inventory(gpus), attempts), session)

    def submit(self, **spec: object) -> str:
        fields = {"image": "img", "command": ("true",), **spec}
        (result,) = self.s.jobs.submit([SubmitItem(JobSpec(**fields))], "ann")  # type: ignore[arg-type]
        return result.job_ids[0]

    def schedule(self) -> Orders:
        snap = self.s.planner.snapshot()
        return self.s.planner.apply(self.s.policy.decide(snap))

    def tick(self) -> Orders:
        return self.engine.steps.tick()

    def event(self, node: str, job: str, kind: str, attempt: int = 1, **kw: object) -> Orders:
        ev = AgentEvent(int(job.split("_")[0]), attempt, kind, time=self.clock.now, **kw)  # type: ignore[arg-type]
        return self.s.agents.event(node, self.sessions[node], ev)

    def state(self, job: str) -> JobState:
        return self.s.jobs.get(job)[0].state


class RotaHarness(Harness):
    """The harness running the configured policy (``rota`` by default)."""

    def _policy(self) -> str:
        return self.config.policy

    def launches(self, orders: Orders) -> list[LaunchOrder]:
        return [o for _, o in orders if isinstance(o, LaunchOrder)]

    def run(self, node: str, job: str, attempt: int = 1) -> None:
        self.event(node, job, "STARTED", attempt=attempt)
