"""SLURM's compressed host lists (``SLURM_JOB_NODELIST``): rota writes them and reads them back
as ``scontrol show hostnames`` does."""

from __future__ import annotations

import pytest

from rota.hostlist import MAX_EXPANDED, compress, expand


@pytest.mark.parametrize(
    ("names", "text"),
    [
        ([], ""),
        (["gpu01"], "gpu01"),
        (["gpu01", "gpu02"], "gpu[01-02]"),
        (["gpu01", "gpu02", "gpu03", "gpu07"], "gpu[01-03,07]"),
        (["gpu07", "gpu01", "gpu02"], "gpu[01-02,07]"),  # numbers ascend within a prefix
        (["node9", "node10", "node11"], "node9,node[10-11]"),  # widths differ: kept apart
        (["gpu1", "cpu1", "gpu2"], "gpu[1-2],cpu1"),
        (["login", "gpu01", "login"], "login,gpu01"),  # no number; duplicates dropped
        (["a1b", "dgx-a100-1", "dgx-a100-3"], "a1b,dgx-a100-[1,3]"),
    ],
)
def test_compress_writes_slurms_form_and_expand_reads_it_back(names: list[str], text: str) -> None:
    assert compress(names) == text
    assert sorted(expand(text)) == sorted(dict.fromkeys(names))


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("gpu[01-03]", ["gpu01", "gpu02", "gpu03"]),
        ("gpu[8-11]", ["gpu8", "gpu9", "gpu10", "gpu11"]),
        ("rack[1-2]-node", ["rack1-node", "rack2-node"]),  # a suffix after the brackets
        ("a[1,3],b,c[09-10]", ["a1", "a3", "b", "c09", "c10"]),
        (" x1 , x2 ", ["x1", "x2"]),
    ],
)
def test_expand_reads_lists_slurm_writes(text: str, names: list[str]) -> None:
    assert expand(text) == names


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("gpu[01-03", "unclosed"),
        ("gpu01]", "unbalanced"),
        ("gpu[[1]]", "unbalanced"),
        ("gpu[a-b]", "not a number"),
        ("gpu[5-1]", "runs backwards"),
        ("gpu[1-2][3-4]", "malformed"),
        (f"n[0-{MAX_EXPANDED}]", "more than"),
    ],
)
def test_expand_refuses_malformed_lists(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        expand(text)
