"""Accounting in-process: NVML figures gathered from heartbeats per running job, written when
the job ends, totals per user and account, the retention purge (gacct's time forms: tests/test_time_grammar.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rota.messages import GpuTelemetry, Heartbeat
from rota.scheduler.cluster.accounting import AccountingQuery
from rota.states import JobState
from tests.support.core import Harness

GiB = 2**30
DAY = 86400.0


def _beat(h: Harness, node: str, *gpus: GpuTelemetry) -> None:
    h.engine.steps.heartbeat(node, h.sessions[node], Heartbeat(gpus=gpus))


def _run_two_jobs(h: Harness) -> tuple[str, str]:
    h.connect("n1", gpus=2)
    busy = h.submit(gpus=1, account="vision")
    idle = h.submit(gpus=1, account="nlp")
    h.schedule()
    for job in (busy, idle):
        h.event("n1", job, "STARTED")
    gpu = {j: h.s.jobs.get(j)[0].allocation[0].gpus[0] for j in (busy, idle)}
    for util_busy in (70.0, 90.0, 80.0, 80.0):
        h.clock.now += 30
        _beat(
            h,
            "n1",
            GpuTelemetry(gpu[busy], utilization=util_busy, memory_used=78 * GiB),
            GpuTelemetry(gpu[idle], utilization=2.0, memory_used=GiB * (1 + util_busy // 80)),
        )
    h.clock.now += 30
    h.event("n1", busy, "EXITED", exit_code=0)
    h.event("n1", idle, "EXITED", exit_code=3)
    return busy, idle


def test_finished_jobs_carry_gpu_hours_and_nvml_figures_and_survive_a_restart(
    tmp_path: Path,
) -> None:
    h = Harness(tmp_path)
    busy, idle = _run_two_jobs(h)
    rows = {r.job.display_id: r for r in h.s.accounting.finished(AccountingQuery())}
    assert set(rows) == {busy, idle}
    assert rows[busy].job.state is JobState.COMPLETED and rows[idle].job.exit_code == 3
    for row in rows.values():
        assert row.elapsed == 150 and row.gpus == 1
        assert row.gpu_hours == pytest.approx(150 / 3600)
        assert row.usage.samples == 4
    assert rows[busy].usage.mean_utilization == 80
    assert (rows[busy].usage.memory_peak, rows[busy].usage.memory_total) == (78 * GiB, 80 * GiB)
    assert rows[idle].usage.mean_utilization == 2 and rows[idle].usage.memory_peak == 2 * GiB

    users, accounts = h.s.accounting.summary(AccountingQuery())
    assert [(t.name, t.jobs) for t in users] == [("ann", 2)]
    assert users[0].gpu_hours == pytest.approx(300 / 3600)
    assert users[0].mean_utilization == pytest.approx(41)
    assert {t.name: t.mean_utilization for t in accounts} == {"nlp": 2, "vision": 80}

    h.restart()  # the figures were written when the jobs ended, not kept only in memory
    again = {r.job.display_id: r.usage for r in h.s.accounting.finished(AccountingQuery())}
    assert again[busy].mean_utilization == 80 and again[idle].samples == 4


def test_filters_select_by_account_state_id_and_end_time(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    busy, idle = _run_two_jobs(h)
    end = h.clock.now

    def ids(**query: object) -> list[str]:
        rows = h.s.accounting.finished(AccountingQuery(**query))  # type: ignore[arg-type]
        return sorted(r.job.display_id for r in rows)

    assert ids(accounts=("nlp",)) == [idle]
    assert ids(states=(JobState.FAILED,)) == [idle]
    assert ids(ids=(int(busy),)) == [busy]
    assert ids(start=end + 1) == []
    assert ids(start=end - 1, end=end + 1) == sorted([busy, idle])
    assert ids(principal="bob") == []  # the principal filter: another user's jobs are hidden
    assert ids(principal="ann") == sorted([busy, idle])


def test_jobs_past_the_retention_are_purged_by_the_tick(tmp_path: Path) -> None:
    h = Harness(tmp_path, accounting_retention=30 * DAY)
    _run_two_jobs(h)
    h.tick()
    assert len(h.s.accounting.finished(AccountingQuery())) == 2
    h.clock.now += 31 * DAY
    h.tick()
    assert h.s.accounting.finished(AccountingQuery()) == []
