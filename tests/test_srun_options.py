"""The srun of ``/.rota/bin`` reads srun's command line as SLURM's srun does: every option that
takes a value in a separate word (``--jobid 12``, ``--hint nomultithread``, ``-q high``) is
skipped with its value, so the command after them is the one the step runs; ``-w`` reaches the
agent. Run on this machine against a stand-in for the agent's side of the job spool."""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

import pytest

from rota.agent.steps.spool import TOOLS


def _agent(spool: Path, seen: dict[str, object]) -> None:
    """Answer one srun request: record its arguments and options, end it with exit code 0."""
    with open(spool / "ctl") as ctl:
        line = ctl.readline().split()
    request = spool / "steps" / line[1]
    args = sorted(request.glob("a.*"), key=lambda p: int(p.suffix[1:]))
    seen["argv"] = [p.read_text() for p in args]
    seen["opts"] = dict(item.split("=", 1) for item in (request / "opts").read_text().splitlines())
    for name in ("out", "err"):
        with open(request / name, "w"):
            pass
    with open(request / "end", "w") as end:
        end.write("0\n")


def _srun(tmp_path: Path, *argv: str) -> dict[str, object]:
    spool = tmp_path / "spool"
    (spool / "steps").mkdir(parents=True)
    os.mkfifo(spool / "ctl")
    srun = tmp_path / "srun"
    srun.write_text((TOOLS / "srun").read_text().replace("/.rota/spool", str(spool)))
    seen: dict[str, object] = {}
    agent = threading.Thread(target=_agent, args=(spool, seen), daemon=True)
    agent.start()
    done = subprocess.run(["sh", str(srun), *argv], capture_output=True, text=True, timeout=30)
    agent.join(timeout=10)
    assert done.returncode == 0, done.stderr
    return seen


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        # stas00/ml-engineering and huggingface/open-r1 launchers
        (
            ["--wait=60", "--kill-on-bad-exit=1", "--jobid", "12", "bash", "-c", "x"],
            ["bash", "-c", "x"],
        ),
        (["--jobid", "12", "--kill-on-bad-exit", "python", "t.py"], ["python", "t.py"]),
        (["--hint", "nomultithread", "-q", "high", "-L", "scratch", "hostname"], ["hostname"]),
        (["-K1", "-u", "--cpu-bind", "cores", "--mpi", "pmix", "-r", "1", "./a.out"], ["./a.out"]),
        (["--tasks-per-node", "2", "-n8", "python"], ["python"]),
        # pyxis' options on NVIDIA clusters: the job's image is rota's own
        (
            [
                "--container-image",
                "nvcr.io#nvidia/pytorch",
                "--container-mounts",
                "/d:/d",
                "nvidia-smi",
            ],
            ["nvidia-smi"],
        ),
    ],
)
def test_options_with_separate_values_are_not_taken_for_the_command(
    tmp_path: Path, argv: list[str], command: list[str]
) -> None:
    assert _srun(tmp_path, *argv)["argv"] == command


def test_nodes_tasks_and_the_node_list_reach_the_agent(tmp_path: Path) -> None:
    seen = _srun(
        tmp_path, "--nodes=1", "--ntasks", "1", "--nodelist=gpu[02-03]", "--tasks-per-node=1", "x"
    )
    opts = seen["opts"]
    assert isinstance(opts, dict)
    assert (opts["nodes"], opts["ntasks"], opts["nodelist"]) == ("1", "1", "gpu[02-03]")
    assert opts["ntasks_per_node"] == "1"
    seen = _srun(tmp_path / "w", "-w", "gpu03", "hostname")
    assert seen["opts"]["nodelist"] == "gpu03"  # type: ignore[index]


def test_scontrol_show_job_prints_features_partition_and_reservation(tmp_path: Path) -> None:
    """scontrol show job inside a job (the agent's spool: ``spec`` holds the constraint) has
    SLURM's Partition=, Features= and, for a job in a reservation, Reservation= lines."""
    spool = tmp_path / "spool"
    spool.mkdir()
    (spool / "spec").write_text("features=a100&ib\n")
    (spool / "job").write_text("start=1700000000\nend=1700000300\nlimit=300\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("scontrol", "squeue"):
        (bin_dir / tool).write_text((TOOLS / tool).read_text().replace("/.rota/spool", str(spool)))
        (bin_dir / tool).chmod(0o755)
    env = {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "SLURM_JOB_ID": "12",
        "SLURM_JOB_NAME": "x",
        "SLURM_JOB_NODELIST": "gpu01",
        "SLURM_JOB_NUM_NODES": "1",
        "SLURM_JOB_PARTITION": "gpu",
        "SLURM_JOB_RESERVATION": "maint",
    }

    fields = {"Partition", "Features", "Reservation"}

    def show() -> list[str]:
        out = subprocess.run(
            ["sh", str(bin_dir / "scontrol"), "show", "job", "12"],
            env=env,
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout
        return [x.strip() for x in out.splitlines() if x.split("=")[0].strip() in fields]

    assert show() == ["Partition=gpu", "Features=a100&ib DelayBoot=00:00:00", "Reservation=maint"]
    del env["SLURM_JOB_RESERVATION"]
    (spool / "spec").unlink()
    assert show() == ["Partition=gpu", "Features=(null) DelayBoot=00:00:00"]
    squeue = [str(bin_dir / "squeue"), "-h", "-o", "%f %v"]
    out = subprocess.run(["sh", *squeue], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "(null) (null)"
