"""``#SBATCH`` batch scripts: the translation table, the exact ``gsub --dry-run`` of a dozen
lab-style scripts (tests/data/sbatch/*.sh with the expected job file beside each), refusals that
name the directive, and one script that runs end to end."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest
import yaml

from rota.cli import gsub
from rota.cli.sbatch import is_batch_script, translate
from rota.cli.sbatch_options import (
    ScriptError,
    slurm_begin,
    slurm_export,
    slurm_memory,
    split_options,
)
from rota.jobspec import parse_job_file
from tests.cluster import Cluster, wait_for

DATA = Path(__file__).parent / "data" / "sbatch"
SCRIPTS = sorted(p for p in DATA.iterdir() if p.suffix != ".yaml" and p.stem != "unknown_directive")
NOW = datetime(2026, 3, 2, 15, 30, 0)


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        (["--job-name=a"], [("job-name", "a")]),
        (["--job-name", "a"], [("job-name", "a")]),
        (["-J", "a"], [("job-name", "a")]),
        (["-Ja"], [("job-name", "a")]),
        (["-N2", "-c", "4"], [("nodes", "2"), ("cpus-per-task", "4")]),
        (["--hold", "--exclusive"], [("hold", None), ("exclusive", None)]),
        (["-t", "1-00:00", "-a=0-3"], [("time", "1-00:00"), ("array", "0-3")]),
        (["-G", "a100:2"], [("gpus", "a100:2")]),
    ],
)
def test_options_in_every_spelling(
    words: list[str], expected: list[tuple[str, str | None]]
) -> None:
    assert split_options(words) == expected


@pytest.mark.parametrize(
    ("words", "message"),
    [
        (["--partition=gpu"], "unknown directive --partition"),
        (["-p", "gpu"], "unknown directive -p"),
        (["--mail-type", "END"], "unknown directive --mail-type"),
        (["--time"], "--time needs a value"),
        (["--hold=yes"], "--hold takes no value"),
        (["gpu"], "unexpected word 'gpu'"),
    ],
)
def test_bad_options_are_named(words: list[str], message: str) -> None:
    with pytest.raises(ScriptError, match=message):
        split_options(words)


@pytest.mark.parametrize(
    ("slurm", "rota"),
    [
        ("16000", "16000Mi"),
        ("500M", "500Mi"),
        ("32G", "32Gi"),
        ("256g", "256Gi"),
        ("1T", "1Ti"),
        ("4096K", "4096Ki"),
        ("8GB", "8Gi"),
    ],
)
def test_memory_is_slurm_binary_units_default_megabytes(slurm: str, rota: str) -> None:
    assert slurm_memory(slurm) == rota


@pytest.mark.parametrize(
    ("slurm", "message"),
    [("0", "--mem=0"), ("lots", "expected a number"), ("1.5G", "expected a number")],
)
def test_bad_memory_is_refused(slurm: str, message: str) -> None:
    with pytest.raises(ScriptError, match=message):
        slurm_memory(slurm)


@pytest.mark.parametrize(
    ("slurm", "rota"),
    [
        ("now+60", "now+60s"),
        ("now+2hours", "now+2h"),
        ("now+30minutes", "now+30m"),
        ("now+1day", "now+1d"),
        ("2026-11-23T16:00:00", "2026-11-23T16:00:00"),
        ("2026-11-23", "2026-11-23"),
        ("16:00", "2026-03-02T16:00:00"),
        ("09:15:30", "2026-03-03T09:15:30"),  # already past today: tomorrow, as SLURM does
    ],
)
def test_begin_forms(slurm: str, rota: str) -> None:
    assert slurm_begin(slurm, NOW) == rota


def test_begin_unknown_form_is_refused() -> None:
    with pytest.raises(ScriptError, match="--begin: expected"):
        slurm_begin("teatime", NOW)


def test_export_sets_copies_and_never_inherits_everything() -> None:
    environ = {"PROJECT": "fold", "HOME": "/home/ann"}
    assert slurm_export("ALL,A=1,PROJECT", environ) == {"A": "1", "PROJECT": "fold"}
    assert slurm_export("NONE", environ) == {}
    with pytest.raises(ScriptError, match="MISSING is not set"):
        slurm_export("MISSING", environ)


def _script(*directives: str, body: str = "echo hi\n") -> str:
    return (
        "#!/bin/sh\n" + "".join(f"#SBATCH {d}\n" for d in directives) + "#ROTA image=img\n" + body
    )


@pytest.mark.parametrize(
    ("directives", "expected"),
    [
        (["--gres=gpu:2"], {"resources": {"gpus": 2}}),
        (["--gres=gpu"], {"resources": {"gpus": 1}}),
        (["--gres=gpu:h100:4"], {"resources": {"gpus": 4, "gpu_type": "h100"}}),
        (
            ["--gpus-per-node=a100:8", "-N 2"],
            {"resources": {"gpus": 8, "gpu_type": "a100"}, "nodes": 2},
        ),
        (["--gpus=8", "--nodes=4"], {"resources": {"gpus": 2}, "nodes": 4}),
        (["--ntasks=2", "-N 2", "--ntasks-per-node=1"], {"nodes": 2}),
        (["--requeue"], {"requeue": True}),
        (["--dependency=afterok:5_1"], {"dependency": "afterok:5_1"}),
    ],
)
def test_directive_table(directives: list[str], expected: dict[str, object]) -> None:
    job = translate(_script(*directives)).job
    skip = ("name", "image", "command", "slurm_env")
    assert {k: v for k, v in job.items() if k not in skip} == expected


@pytest.mark.parametrize(
    ("directives", "message"),
    [
        (["--gres=gpu:2,shard:1"], "--gres: only gpu is supported"),
        (["--gpus=3", "-N 2"], "--gpus=3 does not divide evenly over 2 nodes"),
        (["--ntasks-per-node=8"], "--ntasks-per-node=8: rota runs one container per node"),
        (["--ntasks=4"], "--ntasks=4"),
        (["--nodes=2-4"], "--nodes: expected a whole number"),
        (["--job-name='unclosed"], "No closing quotation"),
    ],
)
def test_untranslatable_directives_are_named(directives: list[str], message: str) -> None:
    with pytest.raises(ScriptError, match=message):
        translate(_script(*directives))


def test_directives_stop_at_the_first_command_and_the_line_is_named() -> None:
    text = "#!/bin/sh\n#SBATCH -J a\necho go\n#SBATCH --partition=late\n#ROTA image=img\n"
    with pytest.raises(ScriptError, match="no container image"):
        translate(text)  # neither the late #SBATCH nor the late #ROTA is read
    with pytest.raises(ScriptError, match=r"^line 3: unknown directive --qoss"):
        translate("#!/bin/sh\n#SBATCH -J a\n#SBATCH --qoss=high\n")
    with pytest.raises(ScriptError, match=r"unknown #ROTA directive 'imgae'"):
        translate("#!/bin/sh\n#ROTA imgae=x\n")


def test_command_runs_the_script_unchanged_with_its_interpreter_and_slurm_variables() -> None:
    text = _script("-J a")
    job = translate(text).job
    assert job["command"] == ["/bin/sh", "-c", text]
    assert job["slurm_env"] is True  # the scheduler sets SLURM_* in the container
    env_bash = "#!/usr/bin/env bash\n#ROTA image=img\necho hi\n"
    assert translate(env_bash).job["command"][:3] == ["/usr/bin/env", "bash", "-c"]
    python = "#!/usr/bin/python3\n#ROTA image=img\nprint(1)\n"
    assert translate(python).job["command"] == ["/usr/bin/python3", "-c", python]
    assert translate(python).job["slurm_env"] is True  # any language reads SLURM_* as it is
    assert translate("#ROTA image=img\necho hi\n").job["command"][0] == "/bin/sh"


def test_default_image_applies_only_without_rota_image() -> None:
    assert translate("#!/bin/sh\necho\n", default_image="base").job["image"] == "base"
    assert translate(_script(), default_image="base").job["image"] == "img"


def test_what_is_a_batch_script() -> None:
    assert is_batch_script("train.sh", "")
    assert is_batch_script("job", "#!/bin/bash\n")
    assert is_batch_script("job.txt", "# lab job\n#SBATCH -J a\n")
    assert not is_batch_script("job.yaml", "# a job file\nimage: x\ncommand: [true]\n")
    assert not is_batch_script("job.yaml", "#SBATCHED: not a directive\n")


@pytest.fixture
def lab_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("ROTA_DEFAULT_IMAGE", "ghcr.io/lab/base:2024.10")
    monkeypatch.setenv("PROJECT", "protein-folding")


@pytest.mark.usefixtures("lab_env")
@pytest.mark.parametrize("script", SCRIPTS, ids=[p.name for p in SCRIPTS])
def test_dry_run_prints_the_exact_job_file(
    script: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(DATA)
    assert gsub.main(["--dry-run", script.name]) == 0
    out = capsys.readouterr().out
    assert out == script.with_suffix(".yaml").read_text()
    parse_job_file(yaml.safe_load(out))  # what it prints is a valid job file


@pytest.mark.usefixtures("lab_env")
def test_dry_run_of_several_files_applies_the_flags(capsys: pytest.CaptureFixture[str]) -> None:
    files = [str(DATA / "single_gpu.sh"), str(DATA / "mem_megabytes.sh")]
    assert gsub.main(["--dry-run", "--hold", "-d", "afterok:9", *files]) == 0
    captured = capsys.readouterr()
    docs = list(yaml.safe_load_all(captured.out))
    assert [d["name"] for d in docs] == ["resnet50-finetune", "preprocess"]
    assert all(d["hold"] is True and d["dependency"] == "afterok:9" for d in docs)
    assert docs[0]["output"] == "slurm-%j.out"  # as written; gsub resolves it from here


def _gsub(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rota.cli.gsub", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


def test_unknown_directive_is_refused_by_name_before_anything_is_sent() -> None:
    # The scheduler address is unreachable: an attempt to submit would exit 1, not 2.
    result = _gsub("--scheduler", "127.0.0.1:1", str(DATA / "unknown_directive.sh"))
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "unknown_directive.sh: line 3: unknown directive --partition" in lines[0]


def test_invalid_value_names_the_directive_it_came_from(tmp_path: Path) -> None:
    path = tmp_path / "bad.sh"
    path.write_text(_script("--job-name='my job'", "--time=soon"))
    result = _gsub("--dry-run", str(path))
    assert result.returncode == 2
    assert "bad.sh: name: " in result.stderr and "(from --job-name)" in result.stderr
    path.write_text(_script("--time=soon"))
    result = _gsub("--dry-run", str(path))
    assert "time_limit: expected a duration" in result.stderr
    assert "(from --time)" in result.stderr


@pytest.mark.docker
def test_a_batch_script_runs_end_to_end_and_wait_returns_its_exit_code(cluster: Cluster) -> None:
    here = cluster.root / "work"  # the submit directory, writable by the job's user (nobody)
    here.mkdir()
    os.chown(here, 65534, 65534)
    config = cluster.write_job("sched.yaml", f"allowed_mounts: [{cluster.root}]\n")
    cluster.start_scheduler("--open-registration", "--config", str(config))
    cluster.start_agent("n1", gpus=2)
    result = cluster.cli("gsub", "--wait", "--parsable", str(DATA / "runs_here.sh"), cwd=here)
    job_id = result.stdout.strip()
    assert job_id.isdigit(), result.stderr
    assert result.returncode == 3, result.stderr  # task 1 exits 3: the highest exit code wins
    assert f"job {job_id} (2 tasks): 1 CD, 1 F" in result.stderr
    tasks = {j["id"]: j for j in cluster.jobs()}
    assert tasks[f"{job_id}_0"]["state"] == "COMPLETED"
    assert tasks[f"{job_id}_1"]["exit_code"] == 3
    assert tasks[f"{job_id}_0"]["name"] == "e2e-array"
    assert tasks[f"{job_id}_0"]["gpus"] == 1
    logs = wait_for(
        lambda: cluster.cli("glogs", f"{job_id}_0").stdout, 20, what="the task's output"
    )
    assert logs.strip() == f"task 0 of array {job_id} as e2e-array on 1 node(s)"
    # --output=e2e-%A_%a.out, relative to where gsub ran, written by the agent
    written = (here / f"e2e-{job_id}_1.out").read_text()
    assert written.strip() == f"task 1 of array {job_id} as e2e-array on 1 node(s)"
