"""Decayed GPU usage and run-time history per account and user.

``UsageLedger`` is the one accumulator that the daemon and the simulator both feed (job started,
stopped, finished) with explicit times; ``ledger.view(now)`` gives the frozen ``Usage`` that a
snapshot carries. Usage decays continuously with a half-life: a GPU-second consumed one
half-life ago counts one half. Run-time history is an exponentially weighted mean of
log(run time) per user and account (typical run time), and of log(run time / time limit) per
user for jobs whose user set a limit (how much that user overestimates).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

_LN2 = math.log(2.0)
HISTORY_WEIGHT = 0.25  # weight of the newest finished job in the run-time means


def decay(value: float, elapsed: float, half_life: float) -> float:
    """``value`` after ``elapsed`` seconds of decay with ``half_life``."""
    return value * 2.0 ** (-elapsed / half_life)


def accrued(rate: float, elapsed: float, half_life: float) -> float:
    """Decayed GPU-seconds that ``rate`` GPUs add over ``elapsed`` seconds, valued at the end."""
    return -rate * half_life / _LN2 * math.expm1(-elapsed * _LN2 / half_life)


@dataclass(frozen=True, slots=True)
class Usage:
    """Decayed usage at ``as_of`` (GPU-seconds) and run-time history; ``version`` changes
    whenever the content does (policies cache priorities per version)."""

    as_of: float = 0.0
    version: int = 0
    account: Mapping[str, float] = field(default_factory=dict)
    user: Mapping[str, float] = field(default_factory=dict)
    runtime_account: Mapping[str, float] = field(default_factory=dict)
    runtime_user: Mapping[str, float] = field(default_factory=dict)
    limit_ratio_user: Mapping[str, float] = field(default_factory=dict)


class _Meter:
    """Decayed GPU-seconds of one key, with the GPUs it holds now."""

    __slots__ = ("rate", "t", "value")

    def __init__(self, t: float) -> None:
        self.value = 0.0
        self.rate = 0.0
        self.t = t

    def at(self, now: float, half_life: float) -> float:
        dt = now - self.t
        return decay(self.value, dt, half_life) + accrued(self.rate, dt, half_life)

    def move(self, now: float, half_life: float, rate_delta: float) -> None:
        self.value = self.at(now, half_life)
        self.t = now
        self.rate += rate_delta


class UsageLedger:
    """Mutable accumulator of usage and history; feed it in time order."""

    def __init__(self, half_life: float) -> None:
        self.half_life = half_life
        self._accounts: dict[str, _Meter] = {}
        self._users: dict[str, _Meter] = {}
        self._rt_account: dict[str, float] = {}
        self._rt_user: dict[str, float] = {}
        self._ratio_user: dict[str, float] = {}
        self._version = 0

    def _move(self, user: str, account: str, gpus: float, now: float) -> None:
        for meters, key in ((self._accounts, account), (self._users, user)):
            meter = meters.get(key)
            if meter is None:
                meter = meters[key] = _Meter(now)
            meter.move(now, self.half_life, gpus)
        self._version += 1

    def start(self, user: str, account: str, gpus: int, now: float) -> None:
        """A job of ``user``/``account`` began holding ``gpus`` GPUs at ``now``."""
        self._move(user, account, gpus, now)

    def stop(self, user: str, account: str, gpus: int, now: float) -> None:
        """A job released its ``gpus`` GPUs at ``now``."""
        self._move(user, account, -gpus, now)

    def finish(
        self, user: str, account: str, run_time: float, time_limit: float, user_limit: bool
    ) -> None:
        """Record a finished job's run time (and, when the user set the limit, the ratio)."""
        log_rt = math.log(max(run_time, 1.0))
        for means, key in ((self._rt_account, account), (self._rt_user, user)):
            means[key] = _ewma(means.get(key), log_rt)
        if user_limit and time_limit > 0:
            self._ratio_user[user] = _ewma(
                self._ratio_user.get(user), math.log(max(run_time, 1.0) / time_limit)
            )
        self._version += 1

    def view(self, now: float) -> Usage:
        """The frozen usage at ``now`` (``now`` must not precede the last event fed)."""
        hl = self.half_life
        return Usage(
            as_of=now,
            version=self._version,
            account={k: m.at(now, hl) for k, m in self._accounts.items()},
            user={k: m.at(now, hl) for k, m in self._users.items()},
            runtime_account={k: math.exp(v) for k, v in self._rt_account.items()},
            runtime_user={k: math.exp(v) for k, v in self._rt_user.items()},
            limit_ratio_user={k: math.exp(v) for k, v in self._ratio_user.items()},
        )


def _ewma(previous: float | None, value: float) -> float:
    if previous is None:
        return value
    return previous + HISTORY_WEIGHT * (value - previous)
