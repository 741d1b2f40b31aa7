"""sbatch and scancel inside a running job, with the options SLURM scripts use: ``--export``
with values from the calling shell (on the command line and in ``#SBATCH`` lines),
``sbatch --wait`` (its exit code, an array's highest; an agent restart or a cancel of the
waiting job meanwhile), and scancel's filters (``-n``, ``-u``, ``-t``, ``-p``, ``--me``),
never beyond the job owner's own jobs. Real scheduler and agents, real Docker with the
busybox image."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cluster import TEST_IMAGE, Cluster, free_port, wait_for
from tests.faults_support import config_file, restart_scheduler
from tests.test_injob_commands import _logs, _shared

pytestmark = pytest.mark.docker


def _start(cluster: Cluster) -> tuple[str, ...]:
    """A scheduler whose jobs may mount the cluster's directory, and n1; the scheduler's
    arguments."""
    args = ("--open-registration", "--config", config_file(cluster))
    cluster.start_scheduler(*args, "--http-listen", f"127.0.0.1:{free_port()}")
    cluster.start_agent("n1", gpus=1)
    return args


def _job(command: str, extra: str = "") -> str:
    return (
        f"image: {TEST_IMAGE}\ncommand: {json.dumps(['sh', '-c', command])}\n"
        f"slurm_env: true\ntime_limit: 5m\n{extra}"
    )


def _in(work: Path) -> str:
    """A job's working directory ``work``, mounted at its own path."""
    return f"workdir: {work}\nmounts: [{{source: {work}, target: {work}}}]\n"


def _line(log: str, prefix: str) -> str:
    """The rest of the first line of ``log`` starting with ``prefix``."""
    found = [line[len(prefix) :] for line in log.splitlines() if line.startswith(prefix)]
    assert found, log
    return found[0]


EXPORTED = f"""#!/bin/sh
#SBATCH -J exported
#SBATCH --export=FROM_SCRIPT,FIXED=set-here
#ROTA image={TEST_IMAGE}
echo "script=$FROM_SCRIPT fixed=$FIXED cli=$FROM_CLI"
"""


def test_export_of_a_bare_name_takes_the_calling_shells_value(cluster: Cluster) -> None:
    _start(cluster)
    work = _shared(cluster, "work")
    (work / "exported.sh").write_text(EXPORTED)
    command = (
        "export FROM_SCRIPT='two words' FROM_CLI=c1 script=mine; NOT_EXPORTED=x; "
        "echo new=$(sbatch --parsable --export=FROM_CLI exported.sh); "
        # a name the tool itself uses is still the shell's value
        "echo wrap=$(sbatch --parsable --export=script,ALL --wrap 'echo \"got $script\"'); "
        "sbatch --export=NOT_EXPORTED --wrap true; echo unset=$?; "
        "export CTL=\"$(printf 'a\\001b')\"; sbatch --export=CTL --wrap true; echo ctl=$?"
    )
    job = cluster.submit(_job(command, _in(work)))
    cluster.wait_state(job, "COMPLETED")
    log = _logs(cluster, job)
    new, wrap = _line(log, "new="), _line(log, "wrap=")
    cluster.wait_state(new, "COMPLETED")
    cluster.wait_state(wrap, "COMPLETED")
    assert _logs(cluster, new) == "script=two words fixed=set-here cli=c1\n"
    assert _logs(cluster, wrap) == "got mine\n"
    # sbatch's warnings go to its standard error, so --parsable's output stays the id alone
    assert "sbatch: warning: command line: --export=script,ALL: ALL ignored" in log
    # a variable that was not exported is not in sbatch's environment, as under SLURM
    assert "--export: NOT_EXPORTED is not set in the submitting environment" in log
    assert "unset=1" in log
    assert "sbatch: error: environment.CTL: must not contain control characters" in log
    assert "ctl=1" in log
    assert len(cluster.jobs()) == 3  # the two refused were not submitted


def test_sbatch_wait_exits_with_the_jobs_exit_code_and_an_arrays_highest(
    cluster: Cluster,
) -> None:
    _start(cluster)
    command = (
        "sbatch --wait --wrap 'sleep 1; exit 3'; echo one=$?; "
        "sbatch -W --parsable --array=0-2 --wrap 'exit $SLURM_ARRAY_TASK_ID'; echo array=$?"
    )
    job = cluster.submit(_job(command, "resources: {gpus: 0}\n"))
    cluster.wait_state(job, "COMPLETED", timeout=120)
    log = _logs(cluster, job)
    assert "one=3" in log and "array=2" in log, log
    first = _line(log, "Submitted batch job ")
    assert cluster.job(first)["state"] == "FAILED"
    assert "--wait" not in log  # carried out, not warned about


def test_sbatch_wait_outlives_an_agent_restart(cluster: Cluster) -> None:
    """The agent dies while sbatch waits: the container runs on, a question lost on the way
    is asked again, and sbatch still exits with the job's code once the new agent answers."""
    _start(cluster)
    work = _shared(cluster, "restart")
    command = "sbatch --wait --wrap 'sleep 12; exit 4'; echo rc=$? >rc; cat rc"
    job = cluster.submit(_job(command, _in(work)))
    wait_for(lambda: len(cluster.jobs()) == 2, 60, 0.2, what="the waited job submitted")
    cluster.kill("agent-n1")
    cluster.start_agent("n1", gpus=1)
    wait_for(lambda: (work / "rc").exists(), 150, 0.5, what="sbatch --wait to end")
    assert (work / "rc").read_text() == "rc=4\n"
    assert cluster.wait_state(job, "COMPLETED", "FAILED")["state"] == "COMPLETED"


def test_sbatch_wait_outlives_a_scheduler_restart(cluster: Cluster) -> None:
    """The scheduler is away while sbatch waits: the questions that fail meanwhile are asked
    again, and the answer comes from the restarted scheduler."""
    args = _start(cluster)
    work = _shared(cluster, "away")
    command = "sbatch --wait --wrap 'sleep 12; exit 5'; echo rc=$? >rc; cat rc"
    job = cluster.submit(_job(command, _in(work)))
    wait_for(lambda: len(cluster.jobs()) == 2, 60, 0.2, what="the waited job submitted")
    cluster.kill("scheduler")
    restart_scheduler(cluster, *args, "--http-listen", f"127.0.0.1:{free_port()}")
    wait_for(lambda: (work / "rc").exists(), 150, 0.5, what="sbatch --wait to end")
    assert (work / "rc").read_text() == "rc=5\n"
    assert cluster.wait_state(job, "COMPLETED", "FAILED")["state"] == "COMPLETED"


def test_cancelling_a_job_that_waits_leaves_the_waited_job_running(cluster: Cluster) -> None:
    _start(cluster)
    job = cluster.submit(_job("sbatch --wait --wrap 'sleep 300'; echo after"))
    wait_for(lambda: len(cluster.jobs()) == 2, 60, 0.2, what="the waited job submitted")
    waited = next(j["id"] for j in cluster.jobs() if j["id"] != job)
    cluster.cli("gcancel", job, check=True)
    assert cluster.wait_state(job, "CANCELLED", "COMPLETED")["state"] == "CANCELLED"
    assert "after" not in _logs(cluster, job)
    assert cluster.job(waited)["state"] in ("PENDING", "CONFIGURING", "RUNNING")
    cluster.cli("gcancel", waited, check=True)


def test_scancel_filters_pick_the_owners_jobs_only(cluster: Cluster) -> None:
    _start(cluster)
    bob = cluster.add_user("bob")
    held = {
        name: cluster.submit(_job("sleep 60", f"name: {name}\n"), "--hold")
        for name in ("a1", "a2", "b")
    }
    path = cluster.write_job("bob.yaml", _job("sleep 60", "name: a1\n"))
    his = cluster.cli("gsub", "--parsable", "--hold", str(path), token=bob)
    assert his.returncode == 0, his.stderr
    his_id = his.stdout.strip()
    command = (
        "scancel -u bob -n a1; echo other=$?; "
        "scancel -s USR1 --me; echo signal=$?; "
        "scancel -p nosuch --me; echo none=$?; "
        "scancel --name=a1 -u $USER -t PD -p default; echo name=$?; "
        f"scancel --me --state=PENDING {held['b']}; echo ids=$?; "
        "scancel --me -t R -n a2; echo running=$?"
    )
    job = cluster.submit(_job(command))
    cluster.wait_state(job, "COMPLETED")
    log = _logs(cluster, job)
    user = cluster.job(job)["user"]
    assert f"scancel: error: --user: 'bob': inside a job, scancel acts on {user}'s own" in log
    assert "other=1" in log
    assert "scancel: error: --signal: rota cannot send a signal to a job" in log
    assert "signal=1" in log
    for rc in ("none=0", "name=0", "ids=0", "running=0"):
        assert rc in log, log
    states = {name: cluster.job(job_id)["state"] for name, job_id in held.items()}
    assert states == {"a1": "CANCELLED", "a2": "PENDING", "b": "CANCELLED"}
    assert cluster.job(his_id)["state"] == "PENDING"  # bob's job named a1 is his
    shown = cluster.cli("gcontrol", "show", "job", held["a1"], check=True).stdout
    assert f"cancelled by {user} with scancel from job {job}" in shown
