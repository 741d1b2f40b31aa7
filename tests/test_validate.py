"""The shared input validator: hostile job files are refused naming the field, arrays are
counted before they are expanded, mounts of system paths are refused however they are spelled,
and no job file makes the parser fail in any other way."""

from __future__ import annotations

import math
import os
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rota.allowlists import resolve_mount_source
from rota.jobspec import JobSpec, SpecError, parse_array, parse_job_file
from rota.validate import Rules, check_spec

BASE: dict[str, Any] = {"image": "busybox", "command": ["true"]}


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"name": "x" * 150_000}, "name"),
        ({"name": "bad\x07name"}, "name"),
        ({"account": "a\nb"}, "account"),
        ({"resources": {"cpus": math.nan}}, "resources.cpus"),
        ({"resources": {"cpus": math.inf}}, "resources.cpus"),
        ({"resources": {"cpus": -1}}, "resources.cpus"),
        ({"resources": {"gpus": 10**9}}, "resources.gpus"),
        ({"resources": {"memory": "9999999Ti"}}, "resources.memory"),
        ({"time_limit": -5}, "time_limit"),
        ({"nodes": 10**7}, "nodes"),
        ({"ntasks": 10**9}, "ntasks"),
        ({"nodes": 3, "ntasks": 2}, "ntasks"),
        ({"ntasks_per_node": 257}, "ntasks_per_node"),
        ({"ntasks_per_node": 4, "gpus_per_task": 1, "resources": {"gpus": 2}}, "gpus_per_task"),
        ({"priority": 2**40}, "priority"),
        ({"env": {f"K{i}": "v" for i in range(50_000)}}, "env"),
        ({"env": {"K": "v" * 100_000}}, "env.K"),
        ({"env": {"A=B": "v"}}, "env"),
        ({"env": {"NVIDIA_VISIBLE_DEVICES": "all"}}, "env.NVIDIA_VISIBLE_DEVICES"),
        ({"env": {"CUDA_VISIBLE_DEVICES": "0,1,2,3"}}, "env.CUDA_VISIBLE_DEVICES"),
        ({"command": ["x" * 300_000]}, "command"),
        ({"array": "0-9999999"}, "array"),
        ({"image": "bad image"}, "image"),
        ({"mounts": [{"source": "/", "target": "/host"}]}, "mounts[0].source"),
        ({"mounts": [{"source": "/etc", "target": "/e"}]}, "mounts[0].source"),
        ({"mounts": ["/var/run/docker.sock:/var/run/docker.sock"]}, "mounts[0].source"),
        ({"mounts": ["/run/docker.sock:/s"]}, "mounts[0].source"),
        ({"mounts": ["/data/../etc:/e"]}, "mounts[0].source"),
        ({"mounts": ["/var:/v"]}, "mounts[0].source"),
        ({"mounts": ["/proc/self:/p"]}, "mounts[0].source"),
    ],
)
def test_hostile_job_files_are_refused_naming_the_field(extra: dict[str, Any], field: str) -> None:
    with pytest.raises(SpecError) as info:
        parse_job_file({**BASE, **extra}, Rules(max_array_size=10_000))
    assert info.value.field == field, str(info.value)


def test_a_huge_array_is_refused_without_expanding_it() -> None:
    started = time.perf_counter()
    with pytest.raises(ValueError, match="names 1000000000001 tasks"):
        parse_array("0-1000000000000")
    with pytest.raises(SpecError, match="at most 10000"):
        check_spec(JobSpec(image="i", command=("true",), array="0-99999999999"), Rules())
    assert time.perf_counter() - started < 1.0
    assert parse_array("0-9999")[0][-1] == 9999


def test_mounts_follow_the_admins_prefixes() -> None:
    rules = Rules(allowed_mounts=("/data", "/scratch/"))
    ok = parse_job_file({**BASE, "mounts": ["/data/imagenet:/d:ro", "/scratch/x:/s"]}, rules)
    assert [m.source for m in ok.mounts] == ["/data/imagenet", "/scratch/x"]
    for source in ("/home/ann", "/database", "/datax"):
        with pytest.raises(SpecError, match="not under an allowed mount prefix"):
            parse_job_file({**BASE, "mounts": [f"{source}:/m"]}, rules)
    with pytest.raises(SpecError, match="bind mounts are disabled"):
        parse_job_file({**BASE, "mounts": ["/data:/m"]}, Rules(allowed_mounts=()))


def test_the_node_resolves_symbolic_links_before_it_mounts(tmp_path: Path) -> None:
    allowed = (str(tmp_path),)
    (tmp_path / "data").mkdir()
    (tmp_path / "etc").symlink_to("/etc")
    (tmp_path / "sock").symlink_to("/var/run/docker.sock")
    (tmp_path / "out").symlink_to("/tmp")
    assert resolve_mount_source("m", str(tmp_path / "data"), allowed) == str(tmp_path / "data")
    with pytest.raises(SpecError, match="resolves to /etc"):
        resolve_mount_source("m", str(tmp_path / "etc"), allowed)
    with pytest.raises(SpecError, match="never allowed"):
        resolve_mount_source("m", str(tmp_path / "sock"), allowed)
    with pytest.raises(SpecError, match="not under an allowed mount prefix"):
        resolve_mount_source("m", str(tmp_path / "out"), allowed)


def test_images_follow_the_allow_list() -> None:
    rules = Rules(allowed_images=("registry.lab/*", "busybox"))
    assert parse_job_file({**BASE, "image": "registry.lab/team/train:1"}, rules).image
    with pytest.raises(SpecError, match="not allowed here"):
        parse_job_file({**BASE, "image": "docker.io/evil/miner"}, rules)


_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40),
    st.sampled_from(["0-3", "1,2", "2h", "40Gi", "/data:/d", "afterok:1", "now+1h", ".."]),
)
_values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=8,
)
_keys = st.sampled_from(
    [
        "name",
        "image",
        "command",
        "resources",
        "nodes",
        "time_limit",
        "account",
        "priority",
        "array",
        "env",
        "mounts",
        "workdir",
        "begin",
        "dependency",
        "node_selector",
        "shm_size",
        "pull",
        "bogus",
    ]
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(_keys, _values, max_size=8), st.booleans())
def test_any_job_file_is_either_valid_or_refused_with_a_field(
    data: dict[str, Any], with_base: bool
) -> None:
    if with_base:
        data = {**BASE, **data}
    try:
        spec = parse_job_file(data)
    except SpecError as exc:
        assert exc.field and str(exc).startswith(exc.field)
        return
    check_spec(spec, Rules(max_array_size=10**6))  # what was accepted passes the validator
    assert all(math.isfinite(v) for v in (spec.cpus, spec.time_limit, spec.begin_time))
    assert os.path.isabs(spec.workdir) or not spec.workdir
