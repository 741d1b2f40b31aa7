"""Issue 5 end to end: an agent killed with SIGKILL and restarted adopts its containers; an agent
frozen past the grace period loses its jobs (NODE_FAIL, requeued elsewhere), and its late
reports never touch the new attempt."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

from tests.cluster import TEST_IMAGE, Cluster, wait_for
from tests.faults_support import Api, config_file


def _job(out: Path, script: str, *extra: str, gpus: int = 1) -> str:
    """A job that appends one line per start to ``out/runs`` and then runs ``script``."""
    command = f'echo "$ROTA_JOB_ID $ROTA_ATTEMPT $ROTA_NODELIST" >> /out/runs; {script}'
    lines = [
        f"image: {TEST_IMAGE}",
        f"command: [sh, -c, {command!r}]",
        f"resources: {{gpus: {gpus}}}",
        f"mounts: [{{source: {out}, target: /out}}]",
        *extra,
    ]
    return "\n".join(lines) + "\n"


def _runs(out: Path) -> list[tuple[str, str, str]]:
    path = out / "runs"
    text = path.read_text() if path.exists() else ""
    return [tuple(line.split()) for line in text.splitlines()]  # type: ignore[misc]


def test_agent_sigkill_and_restart_adopts_jobs_with_real_exit_codes(cluster: Cluster) -> None:
    cluster.start_scheduler("--config", config_file(cluster), "--open-registration")
    out = cluster.root / "out"
    out.mkdir()
    out.chmod(0o777)  # jobs run as an unprivileged user
    cluster.start_agent("n1", 4)
    # The jobs end when the test says so (a file appears), so a slow engine cannot end them early.
    ok = cluster.submit(_job(out, "until [ -e /out/go ]; do sleep 0.1; done; exit 0"))
    three = cluster.submit(_job(out, "until [ -e /out/go ]; do sleep 0.1; done; exit 3"))
    away = cluster.submit(_job(out, "until [ -e /out/go-away ]; do sleep 0.1; done; exit 7"))
    limited = cluster.submit(_job(out, "sleep 600", "time_limit: 6s"))
    jobs = [ok, three, away, limited]
    api = Api(cluster.address, cluster.token)
    try:
        wait_for(lambda: all(api.state(j) == "RUNNING" for j in jobs), 30, what="all running")
    finally:
        api.close()
    cluster.kill("agent-n1", signal.SIGKILL)
    (out / "go-away").touch()  # ends while the agent is dead
    wait_for(lambda: "7" in _exit_codes(cluster, away), 30, what="a job ending while away")
    # start_agent's "node up" may still see the old stream, which the scheduler has not yet
    # found broken: wait for the new agent to adopt the containers it finds.
    cluster.start_agent("n1", 4)
    wait_for(lambda: "adopted running job" in cluster.log("agent-n1"), 60, what="the jobs adopted")
    (out / "go").touch()
    results = {
        job: cluster.wait_state(job, "COMPLETED", "FAILED", "TIMEOUT", "NODE_FAIL", timeout=40)
        for job in jobs
    }
    assert (results[ok]["state"], results[ok]["exit_code"]) == ("COMPLETED", 0)
    assert (results[three]["state"], results[three]["exit_code"]) == ("FAILED", 3)
    assert (results[away]["state"], results[away]["exit_code"]) == ("FAILED", 7)
    timed = results[limited]
    assert timed["state"] == "TIMEOUT"
    ran = _seconds(timed["end_time"]) - _seconds(timed["start_time"])
    assert 5 <= ran < 12, f"the original deadline was kept (ran {ran:.1f}s of a 6s limit)"
    assert all(r["attempt"] == 1 for r in results.values())
    assert sorted(r[0] for r in _runs(out)) == sorted(jobs), "each job started exactly once"
    wait_for(lambda: not cluster.containers(), 60, what="containers removed after the acks")


def test_agent_frozen_past_grace_requeues_elsewhere_and_late_reports_are_fenced(
    cluster: Cluster,
) -> None:
    cluster.start_scheduler(
        "--config", config_file(cluster, node_timeout=3, node_grace=8), "--open-registration"
    )
    out = cluster.root / "out"
    out.mkdir()
    out.chmod(0o777)  # jobs run as an unprivileged user
    n1, n2 = cluster.node_name("n1"), cluster.node_name("n2")
    frozen = cluster.start_agent("n1", 2)
    # attempt 1 exits 5 while its agent is frozen; attempt 2 succeeds
    script = 'if [ "$ROTA_ATTEMPT" = 1 ]; then sleep 12; exit 5; fi; sleep 5'
    moved = cluster.submit(_job(out, script, "requeue: true"))
    lost = cluster.submit(_job(out, "sleep 600"))
    cluster.wait_state(moved, "RUNNING")
    cluster.wait_state(lost, "RUNNING")
    cluster.start_agent("n2", 1)
    frozen.send_signal(signal.SIGSTOP)
    try:
        wait_for(lambda: (n := cluster.node(n1)) and n["state"] == "DOWN", 30, what="n1 DOWN")
        assert cluster.wait_state(lost, "NODE_FAIL", timeout=30)["attempt"] == 1
        # attempt 2 runs 5 s: a slow look may find it over already
        second = cluster.wait_state(moved, "RUNNING", "COMPLETED", timeout=60)
        assert second["attempt"] == 2 and second["nodes"] == [n2]
        wait_for(
            lambda: len(_runs(out)) == 3 and _attempt1_exited(cluster, moved),
            25,
            what="attempt 1 exits while its agent is frozen",
        )
    finally:
        frozen.send_signal(signal.SIGCONT)
    wait_for(lambda: (n := cluster.node(n1)) and n["state"] != "DOWN", 60, what="n1 back")
    done = cluster.wait_state(moved, "COMPLETED", "FAILED", timeout=30)
    assert (done["state"], done["exit_code"], done["attempt"]) == ("COMPLETED", 0, 2)
    api = Api(cluster.address, cluster.token)
    try:
        events = [(e.attempt, e.new_state) for e in api.events(moved) if e.kind == "state"]
    finally:
        api.close()
    assert (1, "NODE_FAIL") in events and (2, "COMPLETED") in events
    assert not any(state == "FAILED" for _, state in events), "the late exit 5 was fenced"
    assert sorted(_runs(out)) == sorted([(moved, "1", n1), (moved, "2", n2), (lost, "1", n1)]), (
        "no attempt started twice"
    )
    wait_for(
        lambda: not cluster.containers(),
        30,
        what="n1 stops and removes the attempts it no longer owns",
    )
    assert cluster.job(lost)["state"] == "NODE_FAIL"


def _exit_codes(cluster: Cluster, job: str) -> str:
    names = [c for c in cluster.containers() if c.endswith(f"-{job}-1")]
    if not names:
        return ""
    return subprocess.run(
        ["docker", "inspect", "-f", "{{.State.Status}} {{.State.ExitCode}}", *names],
        capture_output=True,
        text=True,
    ).stdout


def _attempt1_exited(cluster: Cluster, job: str) -> bool:
    return _exit_codes(cluster, job).startswith("exited 5")


def _seconds(iso: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()
