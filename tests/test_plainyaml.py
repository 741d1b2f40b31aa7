"""The commands read images, paths and flat config files without PyYAML: whatever they read
that way must be exactly what PyYAML reads."""

from __future__ import annotations

import yaml
from hypothesis import given
from hypothesis import strategies as st

from rota.plainyaml import flat_mapping, plain_text

WORDS = ["yes", "No", "ON", "off", "true", "False", "null", "~", "y", "n", ":", " ", "#"]
TEXT = st.lists(
    st.sampled_from([*WORDS, "a", "Z", "_", "/", ".", "-", "+", "@", "0", "9", "é", "'", "[", "&"]),
    max_size=8,
).map("".join)
KEYS = st.sampled_from(["scheduler", "ca", "insecure", "http", "on", "Yes", "a-b", " x", "#k"])
LINES = st.lists(
    st.tuples(KEYS, st.sampled_from([": ", ":  ", ":", ": \t"]), TEXT, st.sampled_from(["", " "])),
    max_size=4,
)


def _yaml(text: str) -> object:
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return "unreadable"


@given(TEXT)
def test_plain_text_is_what_yaml_reads(text: str) -> None:
    read = plain_text(text)
    if read is not None:
        assert _yaml(text) == read and isinstance(_yaml(text), str)


@given(LINES)
def test_a_flat_file_is_what_yaml_reads(lines: list[tuple[str, str, str, str]]) -> None:
    text = "\n".join("".join(parts) for parts in lines)
    read = flat_mapping(text)
    if read is not None:
        assert (_yaml(text) or {}) == read
        assert all(type(v) is type((_yaml(text) or {})[k]) for k, v in read.items())  # type: ignore[index]


def test_what_the_commands_read_every_day_needs_no_yaml() -> None:
    assert plain_text(" pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime ") == (
        "pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime"
    )
    config = "# lab\nscheduler: sched.lab:9717\nhttp: sched.lab:9718\nca: /etc/rota/ca.pem\n"
    assert flat_mapping(config + "insecure: false\n") == {
        "scheduler": "sched.lab:9717",
        "http": "sched.lab:9718",
        "ca": "/etc/rota/ca.pem",
        "insecure": False,
    }
    assert flat_mapping("scheduler: 10.0.0.5:9717\n") is None  # left to PyYAML
