"""Durations and sizes in the forms users write them."""

from __future__ import annotations

import pytest

from rota.units import format_duration, parse_duration, parse_size


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90s", 90),
        ("30m", 1800),
        ("2h", 7200),
        ("3d", 259200),
        ("1.5h", 5400),
        ("45", 2700),
        ("10:30", 630),
        ("1:00:00", 3600),
        ("2-12", 2 * 86400 + 12 * 3600),
        ("1-02:03", 86400 + 7200 + 180),
        ("1-02:03:04", 86400 + 7200 + 184),
        (5, 300),
    ],
)
def test_durations(text: str | int, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["soon", "", "1x", "-5m", "1:2:3:4", True])
def test_bad_durations_name_the_accepted_forms(text: object) -> None:
    with pytest.raises(ValueError, match="duration such as"):
        parse_duration(text)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("512Mi", 512 * 2**20),
        ("40Gi", 40 * 2**30),
        ("40G", 40 * 10**9),
        ("16GiB", 16 * 2**30),
        ("500MB", 500 * 10**6),
        ("1k", 1000),
        (1024, 1024),
        ("2048", 2048),
        ("1.5Gi", 3 * 2**29),
    ],
)
def test_sizes(text: str | int, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["lots", "12Q", "-1", "Gi", False])
def test_bad_sizes(text: object) -> None:
    with pytest.raises(ValueError, match="size such as"):
        parse_size(text)  # type: ignore[arg-type]


def test_format_duration_is_slurm_style() -> None:
    assert format_duration(5) == "0:05"
    assert format_duration(3725) == "1:02:05"
    assert format_duration(90061) == "1-01:01:01"
