"""Bad job files are refused with exit 2, a message naming file and field, and nothing stored."""

from __future__ import annotations

import pytest

from tests.cluster import TEST_IMAGE, Cluster

GOOD = f'image: {TEST_IMAGE}\ncommand: ["true"]\n'

BAD_FILES = [
    ("unknown key", GOOD + "gpu: 1\n", "gpu: unknown field"),
    ("wrong type", GOOD + "resources: {gpus: two}\n", "resources.gpus: expected an integer"),
    ("negative gpus", GOOD + "resources: {gpus: -1}\n", "resources.gpus: must be >= 0"),
    ("bad duration", GOOD + "time_limit: soon\n", "time_limit: expected a duration"),
    ("bad size", GOOD + "resources: {memory: lots}\n", "resources.memory: expected a size"),
    ("missing image", 'command: ["true"]\n', "image: is required"),
    ("invalid yaml", "image: [unclosed\n", "invalid YAML"),
    ("unknown resource", GOOD + "resources: {tpus: 1}\n", "resources.tpus: unknown field"),
    ("bad dependency", GOOD + "dependency: whenever:1\n", "dependency: expected TYPE:ID"),
    ("too many gpus", GOOD + "resources: {gpus: 3}\n", "resources.gpus: 3 GPU(s) per node"),
    ("gpu type absent", GOOD + "resources: {gpus: 1, gpu_type: H100}\n", "no node has H100 GPUs"),
    ("too many nodes", GOOD + "nodes: 2\nresources: {gpus: 1}\n", "nodes: 2 nodes"),
]


@pytest.fixture
def up(cluster: Cluster) -> Cluster:
    cluster.start_scheduler()
    cluster.start_agent("n1", gpus=2)
    return cluster


@pytest.mark.parametrize(("case", "text", "message"), BAD_FILES, ids=[c[0] for c in BAD_FILES])
def test_bad_job_file_is_refused(up: Cluster, case: str, text: str, message: str) -> None:
    before = up.jobs()
    path = up.write_job("bad.yaml", text)
    result = up.cli("gsub", str(path))
    assert result.returncode == 2, (case, result.stdout, result.stderr)
    assert "bad.yaml" in result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert up.jobs() == before


def test_one_bad_file_submits_nothing(up: Cluster) -> None:
    good = up.write_job("good.yaml", GOOD)
    bad = up.write_job("bad.yaml", GOOD + "resources: {gpus: 99}\n")
    result = up.cli("gsub", str(good), str(bad))
    assert result.returncode == 2
    assert "bad.yaml" in result.stderr
    assert up.jobs() == []


def test_gpus_zero_is_a_cpu_only_job_and_several_files_submit(up: Cluster) -> None:
    a = up.write_job("a.yaml", GOOD + "resources: {gpus: 0}\n")
    b = up.write_job("b.yaml", GOOD)
    result = up.cli("gsub", str(a), str(b), check=True)
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 2 and all(line.startswith("Submitted job ") for line in lines)
    assert len(up.jobs()) == 2
