"""The job file parser: every field, and a clear error naming the field for bad input."""

from __future__ import annotations

import pytest

from rota.jobspec import Mount, SpecError, parse_array, parse_dependency, parse_job_file

BASE = {"image": "img", "command": ["python", "train.py"]}


def test_full_job_file() -> None:
    spec = parse_job_file(
        {
            **BASE,
            "name": "resnet50",
            "resources": {
                "gpus": 4,
                "gpu_type": "A100",
                "gpu_memory": "40GiB",
                "cpus": 16,
                "memory": "64GiB",
            },
            "nodes": 2,
            "time_limit": "12h",
            "account": "vision",
            "priority": 5,
            "preemptible": True,
            "requeue": True,
            "dependency": "afterok:12:13,afterany:14_2",
            "array": "0-99%10",
            "node_selector": {"rack": "a", "ib": True},
            "env": {"WANDB_MODE": "offline", "SEED": 3},
            "mounts": [
                {"source": "/data/imagenet", "target": "/data", "read_only": True},
                "/scratch:/scratch",
            ],
            "shm_size": "8Gi",
            "pull": "never",
        }
    )
    assert spec.gpus == 4 and spec.gpu_memory == 40 * 2**30 and spec.memory == 64 * 2**30
    assert spec.time_limit == 12 * 3600 and spec.nodes == 2
    assert spec.node_selector == {"rack": "a", "ib": "true"}
    assert spec.env == {"WANDB_MODE": "offline", "SEED": "3"}
    assert spec.mounts == (
        Mount("/data/imagenet", "/data", True),
        Mount("/scratch", "/scratch", False),
    )
    assert spec.shm_size == 8 * 2**30


def test_defaults() -> None:
    spec = parse_job_file(BASE)
    assert spec.gpus == 0 and spec.nodes == 1 and spec.time_limit == 0
    assert spec.shm_size == 2 * 2**30 and spec.pull == "missing"


def test_string_command_runs_through_sh() -> None:
    assert parse_job_file({"image": "i", "command": "echo hi"}).command == (
        "/bin/sh",
        "-c",
        "echo hi",
    )


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({**BASE, "gpus": 1}, "gpus"),
        ({"command": ["x"]}, "image"),
        ({"image": "i"}, "command"),
        ({**BASE, "resources": {"gpus": -1}}, "resources.gpus"),
        ({**BASE, "resources": {"gpus": 1.5}}, "resources.gpus"),
        ({**BASE, "resources": {"memory": "many"}}, "resources.memory"),
        ({**BASE, "resources": []}, "resources"),
        ({**BASE, "nodes": 0}, "nodes"),
        ({**BASE, "time_limit": "0s"}, "time_limit"),
        ({**BASE, "requeue": "yes"}, "requeue"),
        ({**BASE, "pull": "sometimes"}, "pull"),
        ({**BASE, "array": "5-1"}, "array"),
        ({**BASE, "dependency": "afterok:abc"}, "dependency"),
        ({**BASE, "mounts": [{"source": "rel", "target": "/x"}]}, "mounts[0].source"),
        ({**BASE, "env": {"A": [1]}}, "env.A"),
        ({"image": "i", "command": ["echo", True]}, "command[1]"),  # YAML's unquoted yes
        ({**BASE, "begin": "someday"}, "begin"),
        ({**BASE, "name": "bad name!"}, "name"),
        (["not", "a", "mapping"], "(top level)"),
    ],
)
def test_errors_name_the_field(data: object, field: str) -> None:
    with pytest.raises(SpecError) as info:
        parse_job_file(data)
    assert info.value.field == field
    assert str(info.value).startswith(f"{field}: ")


def test_arrays_and_dependencies() -> None:
    assert parse_array("0-3%2") == ([0, 1, 2, 3], 2)
    assert parse_array("1,5,7") == ([1, 5, 7], 0)
    assert parse_array("0-10:5") == ([0, 5, 10], 0)
    assert parse_dependency("afterok:1:2,afterany:3_4") == [
        ("afterok", ["1", "2"]),
        ("afterany", ["3_4"]),
    ]
