"""sbatch and scancel inside a job, in the scheduler (in-process, fake clock): only a node of
the job's current attempt, while it runs, may relay them, as the job's owner without admin
rights; the command line splits as gsub's does; container paths map to the node's through the
job's mounts; and the per-job rate limit."""

from __future__ import annotations

import shutil
import subprocess
from datetime import datetime
from pathlib import Path

import pytest

from rota.agent.steps.spool import TOOLS, tool_text
from rota.jobspec import JobSpec, Mount
from rota.messages import JobCommand
from rota.sbatch import translate
from rota.scheduler.cluster.model import JobRecord
from rota.scheduler.cluster.users import Principal
from rota.scheduler.core import authz
from rota.scheduler.core.errors import AccessDenied, UserError
from rota.scheduler.core.injob import (
    CommandBudget,
    HostPaths,
    check_command,
    own_script,
    read_sbatch,
    split_line,
)
from rota.states import JobState
from tests.support.core import Harness

NOW = datetime(2026, 3, 2, 15, 30).astimezone()


def test_only_a_node_of_the_running_attempt_may_relay_a_command(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    h.s.users.add("ann", admin=True)
    h.connect("n1")
    h.connect("n2")
    job = h.submit(gpus=1, nodelist="n1")
    h.schedule()
    owner = h.engine.steps.command_owner
    # CONFIGURING: the container may run its first command before the node's report that it
    # started has come in; its node's own attempt may ask, no other node
    assert owner("n1", "peer", "sbatch", int(job), 1)[0] == job
    with pytest.raises(AccessDenied, match="does not run"):
        owner("n2", "peer", "sbatch", int(job), 1)
    h.event("n1", job, "STARTED")
    with pytest.raises(AccessDenied, match="does not run"):
        owner("n2", "peer", "sbatch", int(job), 1)  # not its node
    with pytest.raises(AccessDenied, match="does not run"):
        owner("n1", "peer", "sbatch", int(job), 2)  # not its attempt
    with pytest.raises(AccessDenied, match="does not exist"):
        owner("n1", "peer", "scancel", 4242, 1)
    display_id, spec, who = owner("n1", "peer", "sbatch", int(job), 1)
    assert (display_id, spec.image) == (job, "img")
    assert who.user == "ann" and not who.admin  # an admin's job acts as a plain user
    h.engine.steps.requeue_itself("n1", int(job), 1)
    h.event("n1", job, "KILLED", exit_code=143)
    assert h.state(job) is JobState.PENDING
    with pytest.raises(AccessDenied):  # the requeued attempt's container can no longer ask
        owner("n1", "peer", "sbatch", int(job), 1)
    refusals = [e for e in h.s.users.audit() if not e.allowed]
    assert len(refusals) == 5 and all(e.action.endswith(("sbatch", "scancel")) for e in refusals)


def test_an_admins_job_cancels_only_its_owners_jobs() -> None:
    admin = Principal("ann", admin=True)
    inside = authz.job_principal(admin)
    bobs = JobRecord(
        7, "x", "bob", "bob", JobSpec(image="i", command=("true",)), JobState.PENDING, 0.0, 0.0
    )
    assert authz.authorize("job.cancel", admin, bobs) == ""
    assert "belongs to bob" in authz.authorize("job.cancel", inside, bobs)


def test_the_command_line_splits_as_gsubs() -> None:
    line = split_line(["--parsable", "-J", "x", "--time=5", "run.sh", "-J", "arg"], 4)
    assert line.options == ("-J", "x", "--time=5")
    assert (line.script, line.args, line.parsable) == ("run.sh", ("-J", "arg"), True)
    wrap = split_line(["--wrap", "echo hi", "-d", "afterany:3"], -1)
    assert (wrap.wrap, wrap.options, wrap.script) == ("echo hi", ("-d", "afterany:3"), "")
    assert split_line(["-H", "--", "run.sh"], 2).script == "run.sh"
    with pytest.raises(UserError, match="which argument is the script"):
        split_line(["-J", "x", "run.sh"], 1)  # the container read "x"
    with pytest.raises(UserError, match="takes no script"):
        split_line(["--wrap=true", "run.sh"], 1)


def test_container_paths_map_through_the_jobs_mounts() -> None:
    spec = JobSpec(
        image="i",
        command=("true",),
        mounts=(Mount("/srv/lab/data", "/data"), Mount("/srv/lab/data/ckpt", "/data/ckpt")),
        submit_dir="/home/ann/exp",
    )
    paths = HostPaths(spec)
    assert paths.host("/data/x/../out.txt") == "/srv/lab/data/out.txt"
    assert paths.host("/data/ckpt/a") == "/srv/lab/data/ckpt/a"
    assert paths.host("/home/ann/exp/logs") == "/home/ann/exp/logs"
    assert paths.host("/database") is None
    with pytest.raises(UserError, match="--output: /tmp/x is not in a directory mounted"):
        paths.required("/tmp/x", "--output")


def _command(argv: list[str], index: int, script: bytes = b"", cwd: str = "/data") -> JobCommand:
    return JobCommand(1, 9, 1, "sbatch", tuple(argv), script, index, cwd)


def test_a_script_is_read_as_gsub_reads_it_with_the_jobs_image() -> None:
    text = "#!/bin/sh\n#SBATCH -J next\n#SBATCH -o logs/%j.out\n#SBATCH -D sub\necho $1\n"
    running = JobSpec(image="lab/torch:1", command=("true",), mounts=(Mount("/srv/d", "/data"),))
    read = read_sbatch(_command(["run.sh", "7"], 0, text.encode()), running, "gpu03", NOW)
    gsub = translate(text, "lab/torch:1", {}, NOW, args=["7"], name="run.sh").job
    assert read.spec.command == tuple(gsub["command"]) and read.spec.image == "lab/torch:1"
    assert read.spec.workdir == "/srv/d/sub" and read.spec.output == "/srv/d/sub/logs/%j.out"
    assert (read.spec.submit_dir, read.spec.submit_host) == ("/srv/d", "gpu03")
    named = text.replace("#!/bin/sh\n", "#!/bin/sh\n#ROTA image=lab/other:2\n")
    other = read_sbatch(_command(["run.sh"], 0, named.encode()), running, "gpu03", NOW)
    assert other.spec.image == "lab/other:2"
    with pytest.raises(UserError, match="--chdir: /elsewhere is not in a directory mounted"):
        read_sbatch(_command(["-D", "/elsewhere", "run.sh"], 2, text.encode()), running, "", NOW)
    with pytest.raises(UserError, match=r"Unable to open file gone\.sh"):
        read_sbatch(_command(["gone.sh"], 0), running, "", NOW)


def test_dollar_zero_of_a_batch_job_is_its_own_script() -> None:
    text = "#!/bin/sh\n#SBATCH -J chain\nsbatch $0\n"
    job = translate(text, "img", {}, NOW).job
    running = JobSpec(image="img", command=tuple(job["command"]), slurm_env=True)
    assert own_script(running) == ("/bin/sh", text)
    read = read_sbatch(_command(["/bin/sh"], 0, cwd="/"), running, "n1", NOW)
    assert read.spec.command == running.command and read.spec.name == "chain"
    assert own_script(JobSpec(image="img", command=("sh", "-c", "x"))) is None  # not SLURM's


def test_sizes_are_bounded() -> None:
    with pytest.raises(UserError, match="at most 262144 are allowed"):
        check_command(_command([], -1, b"#" * 262145))
    with pytest.raises(UserError, match="at most 4096 arguments"):
        check_command(_command(["x"] * 4097, -1))
    with pytest.raises(UserError, match="not one of sbatch, scancel"):
        check_command(JobCommand(1, 9, 1, "rm", (), b"", -1, "/"))


def test_the_rate_limit_allows_a_burst_then_a_steady_rate() -> None:
    budget = CommandBudget(burst=3, per_second=2.0)
    assert [budget.take(1, "n1", 100.0) for _ in range(4)] == [True, True, True, False]
    assert budget.take(2, "n1", 100.0) and budget.take(1, "n2", 100.0)  # per job and node
    assert budget.take(1, "n1", 100.5) and not budget.take(1, "n1", 100.5)
    assert [budget.take(1, "n1", 200.0) for _ in range(4)] == [True, True, True, False]
    assert not CommandBudget(burst=0, per_second=5.0).take(1, "n1", 0.0)


CASES = [
    ["run.sh"],
    ["-J", "x", "run.sh", "-J", "y"],
    ["--job-name", "x", "--time=5", "run.sh"],
    ["--job", "x", "run.sh"],  # a long option's prefix
    ["--wait", "run.sh"],  # a flag, though --wait-all-nodes takes a value
    ["--parsable", "-N2", "-H", "run.sh", "a"],
    ["-Jx", "--", "run.sh"],
    ["--wrap", "echo hi", "-p", "gpu"],
    ["-d", "afterany:12", "--export=ALL", "run.sh"],
    ["--exclusive", "run.sh"],  # an optional value: only --exclusive=user takes one
]


@pytest.mark.parametrize("argv", CASES)
def test_the_containers_sbatch_finds_the_script_where_the_scheduler_does(
    argv: list[str], tmp_path: Path
) -> None:
    busybox = shutil.which("busybox")
    assert busybox, "busybox-static is needed (apt-get install busybox-static)"
    (tmp_path / "sbatch").write_bytes(tool_text(TOOLS / "sbatch"))
    (tmp_path / "rota-request").write_text(  # what rota-request does, without an agent
        f'dir={tmp_path}/req; mkdir -p "$dir"; die() {{ echo "$*" >&2; exit 1; }}\n'
        'ask() { cat "$dir/index"; rc=0 note=; }\n'
    )
    (tmp_path / "run.sh").write_text("#!/bin/sh\n")
    found = subprocess.run(
        [busybox, "sh", str(tmp_path / "sbatch"), *argv],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        check=True,
    ).stdout
    index = int(found)
    assert split_line(argv, index).script == (argv[index] if index >= 0 else "")


def test_a_users_jobs_have_at_most_four_scripts_read_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reading a script (256 KiB of #SBATCH lines: a third of a second of CPU) happens on the
    in-job facade's own thread, at most four of one user's at once; the rest are refused at
    once, asking to try again (before, every one queued on the event loop's shared threads,
    ahead of the leader's lease renewals, web logins and listings). The reads are held until
    the refusals are in, so that no read ends before the last command asks."""
    import asyncio
    import threading

    from rota.scheduler.agent_hub import AgentHub
    from rota.scheduler.facade import injob as facade

    held = threading.Event()
    reading = facade.read_sbatch

    def slow_read(*args: object) -> object:
        held.wait(30)
        return reading(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(facade, "read_sbatch", slow_read)
    h = Harness(tmp_path, job_commands_burst=100)
    h.s.users.add("ann")
    h.connect("n1")
    job = h.submit(gpus=1, nodelist="n1")
    h.schedule()
    h.event("n1", job, "STARTED")
    injob = h.engine.agents.injob
    script = b"#!/bin/sh\n#SBATCH --hold\ntrue\n"

    async def main() -> list[object]:
        session = AgentHub(lambda entry: asyncio.sleep(0)).new_session("n1")
        commands = [
            JobCommand(i, int(job), 1, "sbatch", ("s.sh",), script, 0, "/data") for i in range(12)
        ]
        running = asyncio.gather(*(injob.run(session, cmd) for cmd in commands))
        for _ in range(3000):  # the eight beyond four are answered while four are read
            if session.outbox.qsize() >= 8:
                break
            await asyncio.sleep(0.01)
        held.set()
        await running
        return [session.outbox.get_nowait() for _ in commands]

    replies = asyncio.run(main())
    refused = [r for r in replies if "scripts of ann's jobs are being read" in r.error]  # type: ignore[attr-defined]
    submitted = [r for r in replies if r.exit_code == 0]  # type: ignore[attr-defined]
    assert len(submitted) == 4
    assert len(refused) == 8
