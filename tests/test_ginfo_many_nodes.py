"""``ginfo`` on a cluster larger than one page: the summary unless nodes are asked for."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from rota.messages import GpuInfo, Hello, Inventory
from tests.support.inprocess import InProcessScheduler

NODES = 503


async def ginfo(sched: InProcessScheduler, *args: str) -> tuple[int, str, str]:
    env = dict(os.environ, ROTA_SCHEDULER=sched.address, ROTA_TOKEN=sched.admin_token)
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "rota.cli.ginfo",
        *args,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    return proc.returncode or 0, out.decode(), err.decode()


def test_ginfo_summarises_a_large_cluster_and_lists_on_request(tmp_path: Path) -> None:
    sched = InProcessScheduler(tmp_path, open_registration=True)
    services = sched.services
    gpus = tuple(GpuInfo(i, f"GPU-{i}", "A100", 80 * 2**30) for i in range(2))
    for i in range(NODES):
        name = f"gpu{i:04d}"
        services.agents.hello(
            Hello(name, "", Inventory(gpus, cpus=16, memory=64 * 2**30)), i + 1, None
        )
        services.gpus.node_joined(services.model.nodes[name])
    for name in ("gpu0007", "gpu0499", "gpu0502"):
        services.model.nodes[name].connected = False

    async def main() -> None:
        async with sched:
            code, out, _ = await ginfo(sched)
            assert code == 0
            lines = out.splitlines()
            assert any(line.split() == ["DOWN", "3"] for line in lines), out
            assert any(line.split() == ["IDLE", str(NODES - 3)] for line in lines), out
            assert f"nodes {NODES}, GPUs {2 * (NODES - 3)} free of {2 * NODES}" in out
            assert f"{NODES} nodes: `ginfo --all` lists every one" in out
            assert "gpu0001" not in out, "no node lines by default on a large cluster"

            code, out, _ = await ginfo(sched, "-t", "down")
            listed = [line.split()[0] for line in out.splitlines()[1:]]
            assert code == 0 and listed == ["gpu0007", "gpu0499", "gpu0502"]

            code, out, _ = await ginfo(sched, "--all")
            assert code == 0 and len(out.splitlines()) == 1 + NODES  # header, then every node

            code, _, err = await ginfo(sched, "-t", "BROKEN")
            assert code == 2 and "states: 'BROKEN' unknown; one of IDLE" in err

    asyncio.run(main())
