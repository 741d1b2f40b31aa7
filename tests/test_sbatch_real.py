"""Batch scripts in the shapes public repositories use (tests/data/sbatch_real: launchers for
torchrun, accelerate, Lightning and DeepSpeed, arrays, signal traps, heredocs, accounts of other
sites), each submitted with ``gsub`` as it is plus an image: accepted, with exactly the
warnings expected (one per directive rota accepts without carrying it out), the directives
mapped as SLURM reads them, and every one accepted by a real scheduler (``--test-only``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cluster import Cluster

DATA = Path(__file__).parent / "data" / "sbatch_real"
IMAGE = "lab/pytorch:24.10"
NODES = {"{n1}": "gpu01", "{n2}": "gpu02", "{dep}": "12"}

# script -> (the options it warns about, job-file fields it must have)
EXPECTED: dict[str, tuple[list[str], dict[str, Any]]] = {
    "torchrun_launcher.slurm": ([], {"nodes": 2, "ntasks_per_node": 1, "exclusive": True}),
    "accelerate_chdir.sh": ([], {"nodes": 2, "output": "O-%x.%j", "error": "E-%x.%j"}),
    "eval_singleton.slurm": ([], {"dependency": "singleton", "error": "./logs/%x-%j.err"}),
    "vllm_last_node.slurm": ([], {"requeue": True, "time_limit": "3-00:00:00"}),
    "idris_account.slurm": (["--hint"], {"account": "six@gpu", "qos": "qos_gpu-t3"}),
    "perlmutter_per_gpu.sh": (
        ["--licenses"],
        {
            "ntasks_per_node": 4,
            "gpus_per_task": 1,
            "signal": "USR1@60",
            "qos": "preempt",
            "open_mode": "append",
        },
    ),
    "variable_time.sh": (
        ["--time-min", "--comment"],
        {"signal": "B:USR1@60", "constraint": "haswell", "open_mode": "append"},
    ),
    "array_by_line.sh": ([], {"array": "1-64", "time_limit": "0-3"}),
    "array_index.sh": ([], {"array": "0-550", "resources": {"cpus": 8, "memory": "32Gi"}}),
    "args_passthrough.sh": ([], {"output": "logs/%j.out"}),
    "mem_per_gpu.sh": ([], {"resources": {"gpus": 4, "memory": "32Gi"}, "partition": "80g"}),
    "pinned_node.sh": ([], {"nodelist": "gpu02", "resources": {"gpus": 4, "cpus": 16}}),
    "tasks_mem_per_cpu.sh": ([], {"resources": {"gpus": 1, "cpus": 4, "memory": "16Gi"}}),
    "gpus_per_job.sh": ([], {"resources": {"gpus": 2, "cpus": 8}, "ntasks": 1}),
    "lightning_whole_nodes.sh": (["--mem"], {"ntasks_per_node": 4, "time_limit": "15"}),
    "no_time_limit.sh": (["--time"], {"ntasks_per_node": 1, "exclude": "gpu01"}),
    "short_time_fields.sh": ([], {"time_limit": "11:0:0", "ntasks_per_node": 12}),
    "lumi_style.sh": (["--get-user-env", "--hint"], {"exclusive": True, "ntasks_per_node": 4}),
    "deepspeed_heredoc.slurm": (["--hint"], {"account": "six@gpu"}),
    "timeout_cleanup.sh": ([], {"signal": "B:USR1@120", "ntasks": 1}),
    "after_bare_id.sh": ([], {"dependency": "12", "gpus_per_task": 1}),
    "pyxis_container.sbatch": (
        ["--no-container-mount-home"],
        {
            "workdir": "/workspace",
            "mounts": ["/project/audio:/workspace", "/project:/project"],
            "image": IMAGE,  # the image line wins over --container-image
        },
    ),
}


def _text(name: str, names: dict[str, str]) -> str:
    """The script with the image line added after its ``#!`` line, and node names filled in."""
    text = (DATA / name).read_text()
    for key, value in names.items():
        text = text.replace(key, value)
    first, rest = text.split("\n", 1)
    return f"{first}\n#ROTA image={IMAGE}\n{rest}"


def test_every_script_shape_has_its_expectations() -> None:
    assert sorted(p.name for p in DATA.iterdir()) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_real_script_is_accepted_with_exactly_the_expected_warnings(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from rota.cli import gsub

    warned, fields = EXPECTED[name]
    monkeypatch.chdir(tmp_path)
    (tmp_path / name).write_text(_text(name, NODES))
    (loaded,) = gsub.load_jobs([name], script=gsub.Script(args=["a", "b"]))
    warnings = capsys.readouterr().err.splitlines()
    assert all(w.startswith(f"gsub: warning: {name}: line ") for w in warnings), warnings
    assert [w.split(": ")[4].split("=")[0] for w in warnings] == warned, warnings
    for key, value in fields.items():
        got = loaded.job.get(key)
        if isinstance(value, dict) and isinstance(got, dict):
            got = {k: got.get(k) for k in value}
        assert got == value, (key, loaded.job.get(key))


def test_chdir_dot_is_the_submit_directory_and_relative_chdir_is_from_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rota.cli import gsub

    monkeypatch.chdir(tmp_path)
    script = tmp_path / "a.sh"
    script.write_text(_text("accelerate_chdir.sh", NODES))
    (loaded,) = gsub.load_jobs([str(script)])
    assert loaded.spec.workdir == ""  # the submit directory, mounted where the node allows
    assert loaded.spec.output == f"{tmp_path}/O-%x.%j"
    script.write_text(_text("accelerate_chdir.sh", NODES).replace("-D .", "-D run/1"))
    (loaded,) = gsub.load_jobs([str(script)])
    assert loaded.spec.workdir == f"{tmp_path}/run/1"
    assert loaded.spec.output == f"{tmp_path}/run/1/O-%x.%j"  # as SLURM: in the job's directory


def test_a_pyxis_script_needs_no_image_line() -> None:
    from rota.sbatch import translate

    batch = translate((DATA / "pyxis_container.sbatch").read_text())
    assert batch.job["image"] == "nvcr.io/nvidia/pytorch:24.10-py3"  # enroot's REGISTRY#IMAGE


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("results/%J_%a.out", "results/42_3.out"),  # %J: the batch script's is the job id
        ("testlightning-%4j.out", "testlightning-0042.out"),  # zero-padded, as SLURM does
        ("%x-%N-%n.%s.%t", "sweep-gpu01-0.batch.0"),
        ("%3N.%%", "gpu01.%"),  # a width pads numbers only
    ],
)
def test_slurm_file_name_patterns(pattern: str, expected: str) -> None:
    from rota.jobends import expand, pattern_problem

    assert pattern_problem(pattern) == ""
    fields = {"j": "42", "J": "42", "a": "3", "x": "sweep", "N": "gpu01"}
    fields |= {"n": "0", "s": "batch", "t": "0"}
    assert expand(pattern, fields) == expected


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A scheduler with the partitions the scripts name, two agents of 4 simulated GPUs
    labelled with the features they ask for; nothing is ever started."""
    root = tmp_path_factory.mktemp("lab")
    cluster = Cluster(root)
    n1, n2 = cluster.node_name("gpu01"), cluster.node_name("gpu02")
    partitions = ["xyz-cluster", "hopper-prod", "80g", "gpu_batch", "gpucloud", "gputest"]
    partitions += ["gpu", "standard-g", "multi", "nlp"]
    config = root / "scheduler.yaml"
    config.write_text(
        "scheduler:\n  open_registration: true\n"
        f"  allowed_mounts: [{root}, /project]\n  partitions:\n"
        f"    default: {{nodes: ['*'], default: true}}\n"
        + "".join(f"    {p}: {{nodes: ['*']}}\n" for p in partitions)
    )
    try:
        cluster.start_scheduler("--config", str(config))
        features = "gpu=true,v100-32g=true,haswell=true"
        for short in ("gpu01", "gpu02"):
            cluster.start_agent(short, 4, "--labels", features)
        for name in (n1, n2):
            cluster.cli("gadmin", "node", "drain", name, "--reason", "scripts only", check=True)
        yield cluster
    finally:
        cluster.stop()


@pytest.mark.docker
def test_every_real_script_is_accepted_by_a_real_scheduler(lab: Cluster) -> None:
    held = lab.root / "held.sh"
    held.write_text(f"#!/bin/sh\n#ROTA image={IMAGE}\ntrue\n")
    dep = lab.cli("gsub", "--parsable", "--hold", str(held), check=True).stdout.strip()
    names = {"{n1}": lab.node_name("gpu01"), "{n2}": lab.node_name("gpu02"), "{dep}": dep}
    outcomes = {}
    for name in sorted(EXPECTED):
        script = lab.root / name
        script.write_text(_text(name, names))
        done = lab.cli("gsub", "--test-only", str(script), "a", "b", cwd=lab.root)
        outcomes[name] = (done.returncode, done.stderr.strip())
    # this machine's CPUs and memory are the test nodes': a script asking more is refused for
    # that alone, naming the resource (a lab's nodes are larger), never for a directive
    sized = ("resources.cpus:", "resources.memory:")
    refused = {
        k: err
        for k, (rc, err) in outcomes.items()
        if rc != 0 and not (err.count("error:") == 1 and any(f"{s} " in err for s in sized))
    }
    assert not refused, json.dumps(refused, indent=1)
    accepted = sorted(k for k, (rc, _) in outcomes.items() if rc == 0)
    assert "after_bare_id.sh" in accepted  # its dependency, checked after sizes, was met


@pytest.mark.parametrize(
    ("directive", "field", "value", "warning"),
    [
        # NIH-style local scratch beside the GPU: the GPU is kept, the rest named
        ("--gres=gpu:1,lscratch:10", "resources", {"gpus": 1}, "ignored for lscratch"),
        ("--nodes=1-2", "nodes", 1, "the job gets 1 node(s), the minimum"),
        ('--job-name="8 weak scaling"', "name", "8_weak_scaling", "named '8_weak_scaling'"),
    ],
)
def test_what_rota_cannot_honour_is_accepted_with_one_warning(
    directive: str, field: str, value: object, warning: str
) -> None:
    from rota.sbatch import translate

    batch = translate(f"#!/bin/sh\n#ROTA image={IMAGE}\n#SBATCH {directive}\ntrue\n")
    assert batch.job.get(field) == value
    (said,) = batch.warnings
    assert said.startswith("line 3: ") and warning in said
