"""The rota policy end to end (issue 4): real scheduler and agent processes, real Docker, the
real CLI. Gang jobs across two agents, arrays with a ``%`` limit, dependencies, hold/release,
begin time, preemption, limits, ``gqueue --explain`` and ``rota simulate``."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime
from pathlib import Path

from tests.cluster import TEST_IMAGE, Cluster, wait_for

GANG = f"""
name: gang
image: {TEST_IMAGE}
nodes: 2
resources: {{gpus: 1}}
command: ["sh", "-c", "echo rank=$NODE_RANK world=$WORLD_SIZE nnodes=$ROTA_NNODES gpn=$ROTA_GPUS_PER_NODE master=$MASTER_ADDR:$MASTER_PORT nodes=$ROTA_NODELIST"]
"""
GANG_FAIL = f"""
name: gang-fail
image: {TEST_IMAGE}
nodes: 2
resources: {{gpus: 1}}
command: ["sh", "-c", "if [ $NODE_RANK = 1 ]; then sleep 1; exit 3; fi; sleep 300"]
"""


def _wait_reason(cluster: Cluster, job_id: str, reason: str) -> None:
    wait_for(
        lambda: (j := cluster.job(job_id))["state"] == "PENDING" and j["reason"] == reason,
        30,
        what=f"job {job_id} pending with reason {reason}",
    )


def _job(command: str, gpus: int = 1, extra: str = "") -> str:
    return f"image: {TEST_IMAGE}\ncommand: {json.dumps(['sh', '-c', command])}\nresources: {{gpus: {gpus}}}\n{extra}"


def test_gang_job_spans_two_agents_and_a_failing_rank_fails_the_gang(cluster: Cluster) -> None:
    cluster.start_scheduler()
    cluster.start_agent("n1", gpus=1)
    cluster.start_agent("n2", gpus=1)
    n1, n2 = cluster.node_name("n1"), cluster.node_name("n2")
    gang = cluster.submit(GANG)
    job = cluster.wait_state(gang, "COMPLETED")
    assert sorted(job["nodes"]) == sorted([n1, n2]) and job["exit_code"] == 0
    outputs = {
        node: cluster.cli("glogs", "--node", node, gang, check=True).stdout for node in job["nodes"]
    }
    ranks = {node: out.split()[0] for node, out in outputs.items()}
    assert sorted(ranks.values()) == ["rank=0", "rank=1"]
    for out in outputs.values():
        assert "world=2 nnodes=2 gpn=1" in out
        assert f"nodes={','.join(job['nodes'])}" in out
    masters = {out.split("master=")[1].split()[0] for out in outputs.values()}
    (master,) = masters  # every rank meets at the same address
    host, port = master.rsplit(":", 1)
    assert host and 29500 <= int(port) <= 29999
    assert cluster.cli("glogs", gang, check=True).stdout == outputs[job["nodes"][0]]
    wrong = cluster.cli("glogs", "--node", "elsewhere", gang)
    assert wrong.returncode == 1 and "did not run on node elsewhere" in wrong.stderr

    failing = cluster.submit(GANG_FAIL)
    job = cluster.wait_state(failing, "FAILED", timeout=60)
    assert job["exit_code"] == 3
    wait_for(lambda: not cluster.containers(), 30, what="rank 0 stopped after rank 1 failed")


def test_array_runs_at_most_its_percent_limit_at_once_and_cancels_as_one(
    cluster: Cluster,
) -> None:
    cluster.start_scheduler()
    cluster.start_agent("n1", gpus=4)
    array = cluster.submit(_job("echo task=$ROTA_ARRAY_TASK_ID; sleep 2", extra="array: 0-5%2\n"))
    seen_limit = False

    def finished() -> bool:
        nonlocal seen_limit
        tasks = json.loads(cluster.cli("gqueue", "-j", array, "--json", check=True).stdout)
        assert len(tasks) == 6 and {t["id"] for t in tasks} == {f"{array}_{i}" for i in range(6)}
        active = [t for t in tasks if t["state"] in ("CONFIGURING", "RUNNING", "COMPLETING")]
        assert len(active) <= 2, active
        waiting = [t for t in tasks if t["state"] == "PENDING"]
        seen_limit = seen_limit or any(t["reason"] == "JobArrayTaskLimit" for t in waiting)
        return all(t["state"] == "COMPLETED" for t in tasks)

    wait_for(finished, 90, interval=0.3, what="all array tasks completed")
    assert seen_limit, "waiting tasks showed JobArrayTaskLimit"
    tasks = json.loads(cluster.cli("gqueue", "-j", array, "--json", check=True).stdout)
    spans = sorted((t["start_time"], t["end_time"]) for t in tasks)
    for start, _end in spans:
        assert sum(1 for s, e in spans if s <= start < e) <= 2, "never more than 2 at once"
    for i in range(6):
        assert cluster.cli("glogs", f"{array}_{i}", check=True).stdout == f"task={i}\n"

    big = cluster.submit(_job("sleep 300", extra="array: 0-3\n"))
    wait_for(
        lambda: (
            sum(t["state"] == "RUNNING" for t in cluster.jobs() if t["id"].startswith(big + "_"))
            == 4
        ),
        60,
        what="four tasks running",
    )
    cluster.cli("gcancel", big, check=True)
    wait_for(
        lambda: (
            {t["state"] for t in cluster.jobs() if t["id"].startswith(big + "_")} == {"CANCELLED"}
        ),
        60,
        what="every task cancelled",
    )


def test_dependencies_hold_release_and_begin_time(cluster: Cluster) -> None:
    cluster.start_scheduler("--allowed-mount", str(cluster.root), "--open-registration")
    cluster.start_agent("n1", gpus=4)
    gate = cluster.root / "gate"  # first fails once its dependants were seen waiting
    gate.mkdir(mode=0o755)
    mounts = f"mounts: ['{gate}:/gate:ro']\n"
    first = cluster.submit(_job("until [ -e /gate/go ]; do sleep 0.1; done; exit 1", extra=mounts))
    ok = cluster.submit(_job("echo ok"), "--dependency", f"afterok:{first}")
    notok = cluster.submit(_job("echo notok"), "--dependency", f"afternotok:{first}")
    anydep = cluster.submit(_job("echo any", extra=f"dependency: afterany:{first}\n"))
    after = cluster.submit(_job("echo after"), "--dependency", f"after:{first}")
    _wait_reason(cluster, ok, "Dependency")
    cluster.cli("gcontrol", "hold", notok, check=True)
    _wait_reason(cluster, notok, "JobHeldUser")
    assert cluster.wait_state(after, "COMPLETED")["start_time"] >= cluster.job(first)["start_time"]
    (gate / "go").write_text("")
    cluster.wait_state(first, "FAILED")
    _wait_reason(cluster, ok, "DependencyNeverSatisfied")
    cluster.wait_state(anydep, "COMPLETED")
    assert cluster.job(notok)["state"] == "PENDING", "held, though its dependency is met"
    cluster.cli("gcontrol", "release", notok, check=True)
    cluster.wait_state(notok, "COMPLETED")
    explained = cluster.cli("gqueue", "--explain", ok, check=True).stdout
    assert "DependencyNeverSatisfied" in explained

    later = cluster.submit(_job("echo later", extra="begin: now+15s\n"))  # seen waiting first
    _wait_reason(cluster, later, "BeginTime")
    done = cluster.wait_state(later, "COMPLETED", timeout=60)
    assert done["start_time"] > done["submit_time"]


def test_preemption_requeues_the_low_priority_job_with_sigterm(cluster: Cluster) -> None:
    cluster.start_scheduler()
    cluster.start_agent("n1", gpus=2)
    low = cluster.submit(
        _job(
            'trap "echo got SIGTERM; exit 0" TERM; echo attempt $ROTA_ATTEMPT; sleep 300 & wait',
            gpus=2,
            extra="qos: low\npreemptible: true\n",
        )
    )
    cluster.wait_state(low, "RUNNING")
    wait_for(lambda: "attempt 1" in cluster.cli("glogs", low).stdout, 60, what="low job output")
    high = cluster.submit(_job("echo high; sleep 2", gpus=2, extra="qos: high\n"))
    done = cluster.wait_state(high, "COMPLETED", timeout=90)
    first_try = cluster.cli("glogs", "--attempt", "1", low, check=True).stdout
    assert "got SIGTERM" in first_try, "the victim got SIGTERM and a grace period"
    again = wait_for(
        lambda: (j := cluster.job(low))["attempt"] == 2 and j["state"] == "RUNNING" and j,
        60,
        what="the preempted job running again as attempt 2",
    )
    assert again["start_time"] >= done["end_time"]
    show = cluster.cli("gcontrol", "show", "job", low, check=True).stdout
    assert "COMPLETING -> PREEMPTED" in show and "PREEMPTED -> PENDING" in show
    cluster.cli("gcancel", low, check=True)
    cluster.wait_state(low, "CANCELLED")


def test_limits_and_explain(cluster: Cluster) -> None:
    config = cluster.write_job(
        "scheduler.yaml",
        "open_registration: true\n"
        "limits: {max_gpus_per_user: 1, max_pending_per_user: 2}\n"
        "weights: {age: 10}\n",
    )
    cluster.start_scheduler("--config", str(config))
    cluster.start_agent("n1", gpus=2)
    running = cluster.submit(_job("sleep 300"))
    cluster.wait_state(running, "RUNNING")
    second = cluster.submit(_job("sleep 300"))
    _wait_reason(cluster, second, "QOSMaxGRESPerUser")
    text = cluster.cli("gqueue", "--explain", second, check=True).stdout
    assert f"job {second} is PENDING (policy rota)" in text
    assert "1 of 1 pending job(s), by attained-service queue, then multifactor priority" in text
    assert "QOSMaxGRESPerUser" in text and "max_gpus_per_user" in text
    for factor in ("age", "fairshare_account", "fairshare_user", "qos", "service"):
        assert factor in text
    data = json.loads(cluster.cli("gqueue", "--explain", second, "--json", check=True).stdout)
    assert data["rank"] == 1 and data["pending_jobs"] == 1 and not data["starts_now"]
    assert {f["name"]: f["weight"] for f in data["factors"]}["age"] == 10
    assert data["priority"] == sum(f["contribution"] for f in data["factors"])
    assert "is RUNNING" in cluster.cli("gqueue", "--explain", running, check=True).stdout
    missing = cluster.cli("gqueue", "--explain", "99999")
    assert missing.returncode == 1 and "does not exist" in missing.stderr

    cluster.submit(_job("true"))
    refused = cluster.cli("gsub", str(cluster.write_job("more.yaml", _job("true"))))
    assert refused.returncode == 2
    assert "would have 3 pending jobs; the limit is 2" in refused.stderr
    assert "limits.max_pending_per_user" in refused.stderr


def test_gqueue_start_shows_when_a_waiting_job_is_expected_to_start(cluster: Cluster) -> None:
    cluster.start_scheduler()
    cluster.start_agent("n1", gpus=1)
    running = cluster.submit(_job("sleep 300", extra="time_limit: 1h\n"))
    cluster.wait_state(running, "RUNNING")
    waiting = cluster.submit(_job("true"))
    _wait_reason(cluster, waiting, "Resources")
    started = _seconds(cluster.job(running)["start_time"])
    lines = cluster.cli("gqueue", "--start", check=True).stdout.splitlines()
    assert lines[0].split() == ["JOBID", "USER", "NAME", "ST", "START_TIME", "(REASON)"]
    (row,) = [line.split() for line in lines[1:]]  # only pending jobs are listed
    assert row[0] == waiting and row[-1] == "(Resources)"
    assert abs(_seconds(row[4]) - (started + 3600)) <= 2, "when the running job's 1 h limit ends"
    assert cluster.job(waiting)["estimated_start"] == row[4]


def _seconds(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def test_rota_simulate_writes_its_figures(tmp_path: Path) -> None:
    trace = tmp_path / "trace.csv"
    rows = ["submit_time,duration,gpus,user,account,time_limit"]
    rows += [f"{i * 60},{600 + 97 * i},{1 + i % 4},u{i % 3},a{i % 2}," for i in range(30)]
    trace.write_text("\n".join(rows) + "\n")
    out = tmp_path / "out.json"
    args = [str(trace), "--nodes", "2", "--gpus-per-node", "4", "--json", str(out)]
    result = subprocess.run(
        [sys.executable, "-m", "rota.cli.rota_main", "simulate", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    figures = json.loads(out.read_text())
    assert figures["policy"] == "rota" and figures["nodes"] == 2
    for key in ("avg_jct", "avg_queue", "p50_queue", "p95_queue", "p99_queue", "makespan"):
        assert figures[key] >= 0, key
    assert 0 < figures["utilisation"] <= 1 and 0 < figures["jain_accounts"] <= 1
    assert figures["jobs"] == 30
    assert "avg_jct" in result.stdout
