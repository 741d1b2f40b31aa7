"""The options of sbatch and scancel inside a job, in the scheduler (in-process): scancel's
filters read as SLURM's and picking only the owner's live jobs, the ``--export`` values a
container sends checked field by field, and what ``sbatch --wait`` is told."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from rota.jobspec import JobSpec
from rota.messages import JobCommand
from rota.sbatch import translate
from rota.scheduler.cluster.model import JobRecord
from rota.scheduler.cluster.users import Principal
from rota.scheduler.core.errors import AccessDenied, NotFound, UserError
from rota.scheduler.core.injob import check_command, read_sbatch, waited_exit
from rota.scheduler.core.scancel_line import ScancelLine, read_scancel
from rota.states import JobState
from tests.support.core import Harness

NOW = datetime(2026, 3, 2, 15, 30).astimezone()


def _job(job_id: int, user: str, name: str, state: JobState, **kw: object) -> JobRecord:
    spec = JobSpec(image="i", command=("true",), partition=str(kw.pop("asked", "")))
    return JobRecord(job_id, name, user, user, spec, state, 0.0, 0.0, **kw)  # type: ignore[arg-type]


def test_scancel_reads_slurms_filters() -> None:
    line = read_scancel(["-n", "a", "--user=ann", "-tPD", "--partition", "gpu", "--me", "12_3"])
    assert line == ScancelLine(("12_3",), "a", "ann", (JobState.PENDING,), "gpu", True)
    assert read_scancel(["--jobname=b", "-t", "r"]).states == (
        JobState.CONFIGURING,
        JobState.RUNNING,
    )
    assert read_scancel(["-t", "SUSPENDED", "--me"]).states == ()  # rota has none
    assert not read_scancel(["12", "13"]).filtered
    for argv, error in [
        ([], "No job identification provided"),
        (["-t", "DONE"], "--state: invalid job state specified: 'DONE'"),
        (["-s", "USR1", "12"], "--signal: rota cannot send a signal"),
        (["--signal=KILL", "--me"], "--signal: rota cannot send a signal"),
        (["-b", "12"], "-b: inside a job, rota's scancel takes job ids and -n/--name"),
        (["-n"], "-n needs a value"),
        (["x12"], "Invalid job id 'x12'"),
        (["1"] * 1001, "at most 1000 at once"),
    ]:
        with pytest.raises(UserError, match=error):
            read_scancel(argv)


def test_filters_pick_the_owners_live_jobs_only() -> None:
    jobs = [
        _job(1, "ann", "a", JobState.PENDING),
        _job(2, "ann", "a", JobState.RUNNING, partition="gpu"),
        _job(3, "bob", "a", JobState.PENDING),
        _job(4, "ann", "b", JobState.PENDING, asked="cpu,gpu"),
        _job(5, "ann", "a", JobState.COMPLETING),
        _job(7, "ann", "a", JobState.PENDING, array_job_id=6, array_task_id=1),
    ]

    def chosen(*argv: str) -> list[str]:
        return read_scancel(list(argv)).chosen(jobs, "ann", "default")

    assert chosen("-n", "a") == ["1", "2", "6_1"]
    assert chosen("--me", "-t", "PD") == ["1", "4", "6_1"]
    assert chosen("--me", "-t", "R") == ["2"]
    assert chosen("-p", "gpu") == ["2", "4"]
    assert chosen("-p", "default") == ["1", "6_1"]  # pending in the default partition
    assert chosen("-n", "a", "1", "6") == ["1", "6_1"]  # ids and filters: both must hold
    assert chosen("-u", "ann", "7") == ["6_1"]  # an array task by its own id
    assert chosen("-n", "nosuch") == []


def test_a_job_picks_only_its_owners_jobs_and_waits_only_for_them(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    h.s.users.add("ann", admin=True)
    h.s.users.add("bob")
    h.connect("n1")
    job = h.submit(gpus=1, nodelist="n1")
    h.schedule()
    h.event("n1", job, "STARTED")
    steps = h.engine.steps
    who = Principal("ann")
    with pytest.raises(AccessDenied, match="'bob': inside a job, scancel acts on ann's own"):
        steps.scancel_targets(who, read_scancel(["-u", "bob"]))
    assert steps.scancel_targets(who, read_scancel(["--me"])) == [job]
    assert steps.waited(who, job) is None  # still running
    with pytest.raises(AccessDenied, match="follows your own jobs only"):
        steps.waited(Principal("bob"), job)
    with pytest.raises(NotFound):
        steps.waited(who, "4242")
    h.event("n1", job, "EXITED", exit_code=5)
    assert steps.waited(who, job) == 5


def test_waiting_ends_with_the_highest_exit_code() -> None:
    ended = [
        _job(1, "ann", "a", JobState.COMPLETED, exit_code=0),
        _job(2, "ann", "a", JobState.FAILED, exit_code=3),
        _job(3, "ann", "a", JobState.CANCELLED),  # cancelled before it ran: 1
    ]
    assert waited_exit(ended) == 3
    assert waited_exit(ended[2:]) == 1
    assert waited_exit([_job(4, "ann", "a", JobState.COMPLETED)]) == 0
    assert waited_exit([*ended, _job(5, "ann", "a", JobState.RUNNING)]) is None


def _sbatch(argv: list[str], script: str, environment: dict[str, str]) -> JobCommand:
    return JobCommand(
        1,
        9,
        1,
        "sbatch",
        tuple(argv),
        script.encode(),
        len(argv) - 1,
        "/",
        tuple(environment.items()),
    )


def test_export_takes_the_values_sent_and_each_is_checked() -> None:
    script = "#!/bin/sh\n#SBATCH --export=FROM_SCRIPT,SET=here\ntrue\n"
    running = JobSpec(image="img", command=("true",))
    sent = {"FROM_SCRIPT": "a\tb\nc", "FROM_CLI": "x"}
    read = read_sbatch(_sbatch(["--export=FROM_CLI", "s.sh"], script, sent), running, "", NOW)
    assert dict(read.spec.env) == {"FROM_SCRIPT": "a\tb\nc", "SET": "here", "FROM_CLI": "x"}
    with pytest.raises(UserError, match="--export: GONE is not set in the submitting"):
        read_sbatch(_sbatch(["--export=GONE", "s.sh"], script, sent), running, "", NOW)
    for environment, error in [
        ({"1A": "x"}, "environment: '1A' is not a variable name"),
        ({"A-B": "x"}, "environment: 'A-B' is not a variable name"),
        ({"A": "x\x1b[2J"}, "environment.A: must not contain control characters"),
        ({"A": "x" * 40000}, "environment.A: is 40000 characters long; at most 32768"),
        ({f"V{i}": "x" for i in range(1025)}, "environment: 1025 variables; at most 1024"),
        ({f"V{i}": "x" * 30000 for i in range(10)}, "environment: 300020 characters"),
    ]:
        with pytest.raises(UserError, match=error.replace("[", "\\[")):
            check_command(_sbatch(["s.sh"], script, environment))


def test_the_jobs_own_script_takes_a_bare_name_from_the_jobs_environment() -> None:
    """``sbatch $0``: the container holds no copy of the script, so its sbatch sends no
    value for the names the script's #SBATCH lines export: the running job's are taken."""
    text = "#!/bin/sh\n#SBATCH --export=SEED\nsbatch $0\n"
    job = translate(text, "img", {"SEED": "41"}, NOW).job
    running = JobSpec(image="img", command=tuple(job["command"]), slurm_env=True, env=job["env"])
    own = JobCommand(1, 9, 1, "sbatch", ("/bin/sh",), b"", 0, "/")
    assert dict(read_sbatch(own, running, "", NOW).spec.env) == {"SEED": "41"}
    resent = JobCommand(1, 9, 1, "sbatch", ("/bin/sh",), b"", 0, "/", (("SEED", "42"),))
    assert dict(read_sbatch(resent, running, "", NOW).spec.env) == {"SEED": "42"}


def test_scancel_ids_cost_each_job_one_look(monkeypatch: pytest.MonkeyPatch) -> None:
    """Eighth attack: a filtered scancel inside a job compared every one of its (up to 1,000)
    ids with each of the owner's live jobs on the core thread: ``scancel --me 1 ... 1000``
    from a job of a user with a pending array of 10,000 tasks took 15 s, 20 at once (the
    burst) five minutes of every request's thread. The ids are parsed once and each job is
    looked up among them."""
    import rota.scheduler.core.scancel_line as scancel_line

    parsed = []
    real = scancel_line.parse_display_id

    def counted(text: str) -> tuple[int, int | None]:
        parsed.append(text)
        return real(text)

    monkeypatch.setattr(scancel_line, "parse_display_id", counted)
    tasks = [
        _job(100_000 + i, "ann", "a", JobState.PENDING, array_job_id=100_000, array_task_id=i)
        for i in range(2000)
    ]
    jobs = [*tasks, _job(5, "ann", "a", JobState.RUNNING), _job(6, "bob", "a", JobState.PENDING)]
    line = read_scancel(["--me", *map(str, range(1, 999)), "100000_7", "6"])
    assert line.chosen(jobs, "ann") == ["5", "100000_7"]  # bob's job 6 is never picked
    assert len(parsed) <= 2 * 1000  # each id parsed once or twice, not once per job
    assert read_scancel(["-n", "a", "100000"]).chosen(jobs, "ann") == [
        j.display_id for j in tasks
    ]  # every task of the array
