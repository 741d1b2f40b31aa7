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
from rota.jobspec import parse_job_file
from rota.sbatch import is_batch_script, translate
from rota.sbatch_options import (
    ScriptError,
    slurm_begin,
    slurm_export,
    slurm_memory,
    split_options,
)
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
    assert split_options(words) == (expected, [])


def test_every_sbatch_option_is_known() -> None:
    # the long options of `sbatch --help` (SLURM 22.05) and man sbatch's newer ones
    words = ["-p", "gpu", "--mail-type", "END", "--signal=B:USR1@60", "-L", "matlab:1"]
    words += ["--nice", "--exclusive=user", "-w", "n1", "-x", "n2", "--x11"]
    options, problems = split_options(words)
    assert [name for name, _ in options] == [
        "partition",
        "mail-type",
        "signal",
        "licenses",
        "nice",
        "exclusive",
        "nodelist",
        "exclude",
    ]
    assert problems == ["unknown directive --x11"]


@pytest.mark.parametrize(
    ("words", "problems"),
    [
        (["--qoss=high", "-J", "a"], ["unknown directive --qoss"]),
        (["-X", "-Y"], ["unknown directive -X", "unknown directive -Y"]),
        (["--time"], ["--time needs a value"]),
        (["--hold=yes"], ["--hold takes no value, got 'yes'"]),
        (["gpu"], ["unexpected word 'gpu'; directives look like --name=value"]),
    ],
)
def test_bad_options_are_all_named(words: list[str], problems: list[str]) -> None:
    assert split_options(words)[1] == problems


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
    [("lots", "expected a number"), ("1.5G", "expected a number")],
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
        (
            ["--ntasks=2", "-N 2", "--ntasks-per-node=1"],
            {"nodes": 2, "ntasks": 2, "ntasks_per_node": 1},
        ),
        (["--requeue"], {"requeue": True, "checkpointable": True}),
        (["--signal=B:USR1@120"], {"signal": "B:USR1@120"}),
        (["--dependency=afterok:5_1"], {"dependency": "afterok:5_1"}),
        (["--mem-per-cpu=4G", "-c 8"], {"resources": {"cpus": 8, "memory": "32Gi"}}),
        (["--mem-per-cpu=2000"], {"resources": {"memory": "2000Mi"}}),
        (["--mem-per-gpu=40G", "--gpus-per-node=2"], {"resources": {"gpus": 2, "memory": "80Gi"}}),
        (
            ["--gpus-per-task=1", "--ntasks-per-node=4"],
            {"resources": {"gpus": 4, "cpus": 4}, "ntasks_per_node": 4, "gpus_per_task": 1},
        ),
        (["-n 8", "-N 2", "-c 4"], {"resources": {"cpus": 16}, "nodes": 2, "ntasks": 8}),
        (["--gres=gpu:2", "--cpus-per-gpu=6"], {"resources": {"gpus": 2, "cpus": 12}}),
        (["--mem=0"], {}),
        (["-C a100&ib"], {"constraint": "a100&ib"}),
        (["--constraint=[rack1|rack2]"], {"constraint": "[rack1|rack2]"}),
        (["-C a100*2&ib", "-N 2"], {"constraint": "a100*2&ib", "nodes": 2}),
        (["-C '[a100*2&v100*1]'", "-N 3"], {"constraint": "[a100*2&v100*1]", "nodes": 3}),
        (["-C 'a100|h100'"], {"constraint": "a100|h100"}),
        (["-p gpu", "--exclusive=user"], {"partition": "gpu", "exclusive": True}),
        (["--partition=a,b"], {"partition": "a,b"}),
        (
            ["--priority=5", "--no-requeue"],
            {"priority": 5, "requeue": False, "checkpointable": False},
        ),
        (["-w gpu[01-03]", "-x gpu09"], {"nodes": 3, "nodelist": "gpu[01-03]", "exclude": "gpu09"}),
        (["-N 4", "--nodelist=gpu01"], {"nodes": 4, "nodelist": "gpu01"}),
        (
            ["--mail-type=end,FAIL", "--mail-user=a@b.org"],
            {"mail_type": ["END", "FAIL"], "mail_user": "a@b.org"},
        ),
    ],
)
def test_directive_table(directives: list[str], expected: dict[str, object]) -> None:
    job = translate(_script(*directives)).job
    skip = ("name", "image", "command", "slurm_env")
    assert {k: v for k, v in job.items() if k not in skip} == expected


@pytest.mark.parametrize(
    ("directives", "message"),
    [
        (["--gpus=3", "-N 2"], "line 2: --gpus=3: 3 GPUs do not divide evenly over 2 nodes"),
        (["--ntasks=1", "-N 2"], "line 2: --ntasks=1: fewer tasks than the 2 nodes"),
        (["--mem-per-gpu=8G"], "line 2: --mem-per-gpu=8G: needs GPUs"),
        (["--nodes=4-2"], "line 2: --nodes: the range '4-2' ends below its start"),
        (["--job-name='unclosed"], "line 2: No closing quotation"),
        (["-N 1", "-w gpu[01-02]"], "--nodelist names 2 nodes but --nodes asks for 1"),
        (["--mail-type=SOMETIMES"], "line 2: --mail-type: SOMETIMES unknown"),
    ],
)
def test_untranslatable_directives_are_named(directives: list[str], message: str) -> None:
    with pytest.raises(ScriptError, match=message):
        translate(_script(*directives))


def test_directives_stop_at_the_first_command_and_the_line_is_named() -> None:
    text = "#!/bin/sh\n#SBATCH -J a\necho go\n#SBATCH --partition=late\n#ROTA image=img\n"
    with pytest.raises(ScriptError, match="no container image"):
        translate(text)  # neither the late #SBATCH nor the late #ROTA is read
    with pytest.raises(
        ScriptError, match=r"^line 3: unknown directive --qoss \(did you mean --qos\?\)$"
    ):
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


JOB_FILE = "name: resnet50-finetune\nimage: img\ncommand: ['true']\noutput: slurm-%j.out\n"


@pytest.mark.usefixtures("lab_env")
def test_dry_run_of_several_files_applies_the_flags(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # job files first, then one script (words after a script would be its arguments)
    (tmp_path / "job.yaml").write_text(JOB_FILE)
    files = [str(tmp_path / "job.yaml"), str(DATA / "mem_megabytes.sh")]
    assert gsub.main(["--dry-run", "--hold", "-d", "afterok:9", *files]) == 0
    captured = capsys.readouterr()
    docs = list(yaml.safe_load_all(captured.out))
    assert [d["name"] for d in docs] == ["resnet50-finetune", "preprocess"]
    assert all(d["hold"] is True and d["dependency"] == "afterok:9" for d in docs)
    assert docs[0]["output"] == "slurm-%j.out"  # as written; gsub resolves it from here


@pytest.mark.usefixtures("lab_env")
def test_unsupported_directives_warn_once_each_with_their_lines(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(DATA)
    assert gsub.main(["--dry-run", "legacy_cluster.sh"]) == 0
    warnings = capsys.readouterr().err.splitlines()
    assert all(w.startswith("gsub: warning: legacy_cluster.sh: line ") for w in warnings)
    said = [w.split(": ", 5)[3:5] for w in warnings]
    assert said == [
        ["line 8", "--mem=0"],
        ["line 14", "--comment=ticket 4411"],
        ["line 15", "--time-min=1:00:00"],
        ["line 17", "--nice=100"],
        ["line 18", "--deadline=2026-12-01T00:00:00"],
        ["line 19", "--licenses=matlab:1"],
        ["line 20", "--hint=nomultithread"],
    ]
    assert "no memory limit" in warnings[0]


def test_strict_refuses_every_unsupported_directive_at_once() -> None:
    env = {**os.environ, "ROTA_DEFAULT_IMAGE": "img"}
    result = _gsub(
        "--strict", "--scheduler", "127.0.0.1:1", str(DATA / "legacy_cluster.sh"), env=env
    )
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 7, result.stderr
    assert all(line.endswith("(refused: --strict)") for line in lines)
    assert "legacy_cluster.sh: line 8: --mem=0: " in lines[0]
    assert "line 20: --hint=nomultithread" in lines[-1]


@pytest.mark.usefixtures("lab_env")
def test_command_line_options_win_over_the_script_and_args_follow_it(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(DATA)
    argv = ["--dry-run", "--array=0-3", "-J", "x", "--time=10", "-p", "gpu", "hparam_sweep.sh"]
    assert gsub.main([*argv, "5", "--lr=3e-4"]) == 0
    captured = capsys.readouterr()
    job = yaml.safe_load(captured.out)
    assert (job["name"], job["array"], job["time_limit"]) == ("x", "0-3", "10")
    assert job["resources"] == {"gpus": 2, "cpus": 16, "memory": "80Gi"}  # from the script
    assert job["command"][3:] == ["hparam_sweep.sh", "5", "--lr=3e-4"]  # $0, $1, $2
    assert job["partition"] == "gpu"  # gsub -p, as sbatch -p
    assert "partition" not in captured.err
    assert gsub.main(["--dry-run", "--mem-per-cpu=1G", "hparam_sweep.sh"]) == 0
    job = yaml.safe_load(capsys.readouterr().out)
    assert job["resources"]["memory"] == "16Gi"  # the command line's memory request replaces it


@pytest.mark.usefixtures("lab_env")
def test_wrap_submits_a_one_line_script(capsys: pytest.CaptureFixture[str]) -> None:
    assert gsub.main(["--dry-run", "--gres=gpu:1", "--wrap", "python x.py --epochs 3"]) == 0
    job = yaml.safe_load(capsys.readouterr().out)
    assert job["name"] == "wrap"
    assert job["image"] == "ghcr.io/lab/base:2024.10"
    assert job["resources"] == {"gpus": 1}
    assert job["command"] == ["/bin/sh", "-c", "#!/bin/sh\npython x.py --epochs 3\n"]
    assert job["slurm_env"] is True


def test_sbatch_options_are_refused_for_job_files_and_wrap_with_a_script(tmp_path: Path) -> None:
    (tmp_path / "job.yaml").write_text(JOB_FILE)
    result = _gsub("--dry-run", "--array=0-3", str(tmp_path / "job.yaml"))
    assert result.returncode == 2
    assert "sbatch options (--array=0-3) apply to batch scripts" in result.stderr
    result = _gsub("--dry-run", "--wrap", "true", str(DATA / "single_gpu.sh"))
    assert (result.returncode, result.stderr.strip()) == (
        2,
        "gsub.py: error: --wrap CMD takes no script or job file",
    )


def _gsub(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rota.cli.gsub", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


def test_unknown_directives_are_all_refused_by_line_before_anything_is_sent() -> None:
    # The scheduler address is unreachable: an attempt to submit would exit 1, not 2.
    result = _gsub("--scheduler", "127.0.0.1:1", str(DATA / "unknown_directive.sh"))
    assert result.returncode == 2
    assert result.stdout == ""
    where = f"gsub.py: error: {DATA / 'unknown_directive.sh'}"
    assert result.stderr.splitlines() == [
        f"{where}: line 3: unknown directive --qoss (did you mean --qos?)",
        f"{where}: line 5: unknown directive --gpu (did you mean --gpus?)",
        f"{where}: line 5: unknown directive -X",
        f"{where}: line 6: --mem: expected a number with an optional K, M, G or T, got 'lots'",
    ]


def test_invalid_value_names_the_directive_it_came_from(tmp_path: Path) -> None:
    path = tmp_path / "bad.sh"
    path.write_text(_script("--account='my lab'"))
    result = _gsub("--dry-run", str(path))
    assert result.returncode == 2
    assert "bad.sh: account: " in result.stderr and "(from --account)" in result.stderr
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


@pytest.mark.docker
def test_script_arguments_and_wrap_run_end_to_end(cluster: Cluster, test_image: str) -> None:
    cluster.start_scheduler("--open-registration")
    cluster.start_agent("n1", gpus=1)
    script = str(DATA / "args_e2e.sh")
    result = cluster.cli("gsub", "--parsable", "-J", "from-cli", script, "hello", "two words")
    job_id = result.stdout.strip()
    assert job_id.isdigit(), result.stderr
    assert "partition" not in result.stderr  # #SBATCH --partition=default is carried out
    assert cluster.wait_state(job_id, "COMPLETED")["name"] == "from-cli"
    logs = wait_for(lambda: cluster.cli("glogs", job_id).stdout, 20, what="the job's output")
    assert logs.strip() == "2 args: hello and two words as from-cli"
    cluster.env_extra["ROTA_DEFAULT_IMAGE"] = test_image
    result = cluster.cli("gsub", "--wait", "--parsable", "--wrap", 'echo "wrapped $((2 + 3))"')
    assert result.returncode == 0, result.stderr
    wrapped = result.stdout.strip()
    assert cluster.job(wrapped)["name"] == "wrap"
    logs = wait_for(lambda: cluster.cli("glogs", wrapped).stdout, 20, what="the wrap output")
    assert logs.strip() == "wrapped 5"


@pytest.mark.usefixtures("lab_env")
def test_export_all_warns_that_the_shells_environment_is_not_carried(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """sbatch's default, --export=ALL, carries the whole shell; a container never does, so a
    script reading a variable exported in the shell would silently see nothing."""
    assert gsub.main(["--dry-run", "--export=ALL,LR=0.1", "--wrap", "true"]) == 0
    captured = capsys.readouterr()
    assert yaml.safe_load(captured.out)["env"] == {"LR": "0.1"}
    assert captured.err == (
        "gsub: warning: --wrap: command line: --export=ALL,LR=0.1: ALL ignored: a container "
        "never inherits your shell's environment; only the variables named (NAME or "
        "NAME=value) are set\n"
    )
    assert gsub.main(["--dry-run", "--export=NONE", "--wrap", "true"]) == 0
    assert capsys.readouterr().err == ""
