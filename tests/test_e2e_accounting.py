"""gacct end to end: a real agent on the fake NVML library runs jobs; gacct's listing, totals
and efficiency report match what ran, GPU-hours and NVML figures included."""

from __future__ import annotations

import csv
import io
import json
from datetime import datetime
from pathlib import Path

import pytest

from tests.cluster import TEST_IMAGE, Cluster
from tests.gpu_e2e import GpuCluster
from tests.nvml_fake import GiB, fake_gpu

JOB = """
name: {name}
image: {image}
command: ["sh", "-c", "until [ -e /gate/go ]; do sleep 0.1; done; sleep 3"]
account: {account}
resources: {{gpus: 1}}
mounts: ['{gate}:/gate:ro']
"""


@pytest.fixture
def gc(cluster: Cluster, fake_nvml_lib: Path) -> GpuCluster:
    return GpuCluster(cluster, fake_nvml_lib)


def _iso(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def test_gacct_totals_equal_the_jobs_run_with_nvml_figures(gc: GpuCluster) -> None:
    # GPU 0 busy and nearly full, GPU 1 idle; memory on a free GPU must not make it dirty here
    gc.start(
        [
            fake_gpu(0, utilization=85, memory_used=79 * GiB),
            fake_gpu(1, utilization=3, memory_used=2 * GiB),
        ],
        gpu_dirty_memory="1Ti",
        allowed_mounts=[str(gc.c.root)],
    )
    gate = gc.c.root / "gate"
    gate.mkdir(mode=0o755)
    jobs = [
        gc.c.submit(JOB.format(name=f"j{i}", image=TEST_IMAGE, account=acct, gate=gate))
        for i, acct in enumerate(("vision", "nlp"))
    ]
    for job in jobs:  # both run at once, whatever a loaded machine's pace
        gc.c.wait_state(job, "RUNNING")
    (gate / "go").write_text("")
    for job in jobs:
        gc.c.wait_state(job, "COMPLETED")
    gpu_of = {job: gc.gpu_ids(job)[0] for job in jobs}
    assert sorted(gpu_of.values()) == [0, 1], "the two jobs ran side by side"

    rows = json.loads(gc.c.cli("gacct", "--json", "-a", check=True).stdout)
    assert sorted(r["id"] for r in rows) == sorted(jobs)
    for row in rows:
        elapsed = _iso(row["end_time"]) - _iso(row["start_time"])
        assert row["state"] == "COMPLETED" and row["exit_code"] == 0 and row["gpus"] == 1
        assert row["elapsed"] == pytest.approx(elapsed, abs=1)  # the times are in whole seconds
        assert row["gpu_hours"] == pytest.approx(row["elapsed"] / 3600, abs=1e-6)
        assert row["gpu_samples"] >= 2, "a 3 s job sees several 0.5 s heartbeats"
        busy = gpu_of[row["id"]] == 0
        assert row["gpu_utilization"] == (85 if busy else 3)
        assert row["gpu_memory_peak"] == (79 if busy else 2) * GiB
        assert row["gpu_memory_total"] == 80 * GiB

    summary = json.loads(gc.c.cli("gacct", "--summary", "--json", check=True).stdout)
    users = [t for t in summary if t["kind"] == "user"]
    assert len(users) == 1 and users[0]["jobs"] == 2
    assert users[0]["gpu_hours"] == pytest.approx(sum(r["gpu_hours"] for r in rows), abs=1e-5)
    samples = sum(r["gpu_samples"] for r in rows)
    mean = sum(r["gpu_utilization"] * r["gpu_samples"] for r in rows) / samples
    assert users[0]["gpu_utilization"] == pytest.approx(mean, abs=0.01)
    by_account = {t["name"]: t for t in summary if t["kind"] == "account"}
    assert set(by_account) == {"vision", "nlp"}

    flagged = json.loads(gc.c.cli("gacct", "--efficiency", "--json", check=True).stdout)
    flags = {r["id"]: r["flags"] for r in flagged}
    assert flags == {j: ["memory"] if gpu_of[j] == 0 else ["idle"] for j in jobs}

    table = gc.c.cli("gacct", "-a", "-A", "nlp", check=True).stdout.splitlines()
    assert table[0].split()[:2] == ["JOBID", "NAME"] and len(table) == 2
    parsed = list(csv.DictReader(io.StringIO(gc.c.cli("gacct", "-a", "--csv", check=True).stdout)))
    assert sorted(r["id"] for r in parsed) == sorted(jobs)
    bad = gc.c.cli("gacct", "-S", "someday")
    assert bad.returncode == 2 and "someday" in bad.stderr
