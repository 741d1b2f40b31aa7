"""``gadmin partition`` on a real scheduler and agents: admins add, change and remove partitions
beside the settings file's (read-only here); jobs run in them; they survive a restart; every
field is checked by the scheduler; users may list but not change them; the audit log has it."""

from __future__ import annotations

import getpass
import json
import signal
from pathlib import Path

import pytest

from tests.cluster import Cluster, wait_for


@pytest.mark.docker
def test_admins_manage_partitions_at_run_time(
    cluster: Cluster, test_image: str, tmp_path: Path
) -> None:
    n1, n2 = cluster.node_name("n1"), cluster.node_name("n2")
    config = tmp_path / "scheduler.yaml"
    config.write_text(
        f"scheduler:\n  open_registration: true\n  partitions:\n    a: {{nodes: [{n1}]}}\n"
    )
    cluster.start_scheduler("--config", str(config))
    cluster.start_agent("n1", gpus=1)
    cluster.start_agent("n2", gpus=1)
    cluster.env_extra["ROTA_DEFAULT_IMAGE"] = test_image

    added = cluster.cli("gadmin", "partition", "add", "b", "--nodes", n2, "--max-time", "10")
    assert added.returncode == 0, added.stderr
    assert added.stdout.strip() == "Partition b added"
    bad = cluster.cli("gadmin", "partition", "add", "c", "--default-time", "2h", "--max-time", "1h")
    assert bad.returncode == 2
    assert "default_time (7200s) must be <= max_time (3600s)" in bad.stderr
    file_one = cluster.cli("gadmin", "partition", "update", "a", "--max-time", "5")
    assert file_one.returncode == 1
    assert "partition 'a' comes from the scheduler's settings file" in file_one.stderr
    twice = cluster.cli("gadmin", "partition", "add", "b")
    assert "partition 'b' exists already" in twice.stderr

    ran = cluster.cli("gsub", "--parsable", "-p", "b", "--time", "5", "--wrap", "true", check=True)
    job = ran.stdout.strip()
    cluster.wait_state(job, "COMPLETED")
    shown = cluster.cli("gqueue", "-t", "all", "-h", "-j", job, "-o", "%P %N", check=True)
    assert shown.stdout.split() == ["b", n2]
    too_long = cluster.cli("gsub", "-p", "b", "--time", "20", "--wrap", "true")
    assert "exceeds the max_time of partition 'b' (600s)" in too_long.stderr

    cluster.kill("scheduler", signal.SIGTERM)
    cluster.start_scheduler("--config", str(config))
    wait_for(lambda: (n := cluster.node(n2)) and n["state"] != "DOWN", 30, what="reconnected")
    listed = json.loads(cluster.cli("gadmin", "partition", "list", "--json", check=True).stdout)
    assert [(p["name"], p["source"], p["default"]) for p in listed] == [
        ("a", "settings", True),
        ("b", "admin", False),
    ]
    assert listed[1]["nodes"] == [n2] and listed[1]["max_time"] == 600
    assert listed[1]["changed_by"] == getpass.getuser()

    made_default = cluster.cli("gadmin", "partition", "update", "b", "--default", check=True)
    assert made_default.stdout.strip() == "Partition b updated (the default)"
    held = cluster.cli("gsub", "--parsable", "--hold", "--wrap", "true", check=True).stdout.strip()
    refused = cluster.cli("gadmin", "partition", "remove", "b")
    assert refused.returncode == 1
    assert f"partition 'b' is named by 1 pending or running job(s) ({held})" in refused.stderr
    cluster.cli("gcancel", held, check=True)
    removed = cluster.cli("gadmin", "partition", "remove", "b", check=True)
    assert removed.stdout.strip() == "Partition b removed; the default is a"
    info = cluster.cli("ginfo", "-P", check=True).stdout.split()
    assert "b" not in info and "a*" in info

    cluster.env_extra["ROTA_TOKEN"] = cluster.add_user("uma")
    denied = cluster.cli("gadmin", "partition", "add", "mine")
    assert denied.returncode == 1
    assert "managing partitions is for admins only; uma is not an admin" in denied.stderr
    seen = cluster.cli("gadmin", "partition", "list", check=True).stdout
    assert seen.splitlines()[1].split()[:2] == ["a*", "settings"]
    del cluster.env_extra["ROTA_TOKEN"]
    audit = json.loads(cluster.cli("gadmin", "audit", "--json", check=True).stdout)
    done = {(e["user"], e["action"], e["target"], e["allowed"]) for e in audit}
    assert (getpass.getuser(), "PartitionService/AddPartition", "name=b", True) in done
    assert (getpass.getuser(), "PartitionService/RemovePartition", "name=b", True) in done
    assert ("uma", "PartitionService/AddPartition", "name=mine", False) in done
