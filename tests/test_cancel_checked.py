"""gcancel decides who may cancel each job in the same core step that cancels it: a second
attack cancelled other users' new jobs by naming ids that did not exist yet, so the first check
passed and the cancel step later found alice's (and root's) fresh jobs under those ids."""

from __future__ import annotations

import asyncio
from pathlib import Path

from rota.jobspec import JobSpec
from rota.scheduler.cluster.users import Principal
from rota.scheduler.core.jobs import SubmitItem
from rota.scheduler.large_requests import CANCEL_CHUNK
from rota.states import JobState
from tests.support.core import Harness

BOB = Principal("bob")


def test_a_cancel_step_leaves_jobs_the_caller_may_not_cancel(tmp_path: Path) -> None:
    """The cancel steps as the race reaches them (after the facade's check passed for ids that
    named nothing then): small and chunked cancels alike stop only bob's own jobs."""
    h = Harness(tmp_path)
    h.connect("n1", gpus=1)
    mine = h.s.jobs.submit([SubmitItem(JobSpec("img", ("true",)))], "bob")[0].job_ids[0]
    alice = h.submit()  # the harness submits as ann
    array = (
        h.s.jobs.submit([SubmitItem(JobSpec("img", ("true",), array=f"0-{CANCEL_CHUNK}"))], "ann")[
            0
        ]
        .job_ids[0]
        .split("_")[0]
    )

    async def race() -> None:
        small = await h.engine.cancels.cancel([alice, mine], BOB, "")
        assert [r.ok for r in small] == [False, True]
        assert "ann" in small[0].message
        chunked = await h.engine.cancels.cancel([array], BOB, "")
        assert not chunked[0].ok and "ann" in chunked[0].message

    asyncio.run(race())
    assert h.state(alice) is JobState.PENDING
    assert h.state(mine) is JobState.CANCELLED
    assert h.state(f"{array}_{CANCEL_CHUNK}") is JobState.PENDING
    h.store.close()
