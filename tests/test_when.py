"""Booking times as people type them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from rota.when import parse_when

# Wednesday 2026-11-25 10:30 UTC
NOW = datetime(2026, 11, 25, 10, 30, tzinfo=UTC)
CET = timezone(timedelta(hours=1))


def at(*args: int, tz=UTC) -> float:
    return datetime(*args, tzinfo=tz).timestamp()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("now", at(2026, 11, 25, 10, 30)),
        ("now+2h", at(2026, 11, 25, 12, 30)),
        ("NOW + 90m", at(2026, 11, 25, 12, 0)),
        ("now+1-00:00:00", at(2026, 11, 26, 10, 30)),
        ("now-30m", at(2026, 11, 25, 10, 0)),
        ("today 14:00", at(2026, 11, 25, 14, 0)),
        ("tomorrow 09:00", at(2026, 11, 26, 9, 0)),
        ("tomorrow", at(2026, 11, 26, 0, 0)),
        ("monday 09:00", at(2026, 11, 30, 9, 0)),
        ("Wednesday 11:00", at(2026, 11, 25, 11, 0)),  # later today
        ("wednesday 09:00", at(2026, 12, 2, 9, 0)),  # already past today: next week
        ("2026-12-01T08:00", at(2026, 12, 1, 8, 0)),
        ("2026-12-01 08:00", at(2026, 12, 1, 8, 0)),
        ("2026-12-01T08:00+01:00", at(2026, 12, 1, 7, 0)),
        ("2026-12-01", at(2026, 12, 1, 0, 0)),
    ],
)
def test_parses(text, expected):
    assert parse_when(text, NOW) == expected


def test_local_zone_applies_to_naive_and_relative_days():
    now = NOW.astimezone(CET)
    assert parse_when("tomorrow 09:00", now) == at(2026, 11, 26, 9, 0, tz=CET)
    assert parse_when("2026-12-01T08:00", now) == at(2026, 12, 1, 8, 0, tz=CET)


@pytest.mark.parametrize("text", ["", "soon", "now+", "now+2x", "tomorrow 25:00", "funday 09:00"])
def test_refuses_with_the_accepted_forms(text):
    with pytest.raises(ValueError, match="now\\+2h"):
        parse_when(text, NOW)
