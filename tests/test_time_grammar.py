"""One time grammar (``rota.when``) for every place a person types a point in time: ``gacct
-S/-E``, ``greserve`` and booking sheets, a job file's ``begin`` and the web API's time
parameters and bookings. A form accepted in one of them is accepted, with the same meaning, in
all; a refusal names the field and the forms."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from rota.bookingsheet import read_sheet
from rota.cli.errors import CliError
from rota.cli.gacct import build_parser
from rota.cli.gacct import main as gacct_main
from rota.cli.gadmin_user import parse_since
from rota.jobspec import SpecError, parse_begin, parse_job_file
from rota.scheduler.core.errors import UserError
from rota.scheduler.web.query import parse_time as web_time
from rota.when import parse_when
from tests.test_web_api import Browserless, registered, run, user

CET = timezone(timedelta(hours=1))
# Saturday 2026-03-14 15:30 in CET
NOW = datetime(2026, 3, 14, 15, 30, tzinfo=CET)


def at(*args: int, tz: Any = CET) -> float:
    return datetime(*args, tzinfo=tz).timestamp()


def test_sacct_forms_as_gacct_took_them() -> None:
    """The forms of ``gacct -S/-E`` (SLURM's ``sacct``), now in the one grammar."""
    assert parse_when("now", NOW) == NOW.timestamp()
    assert parse_when("now-2hours", NOW) == NOW.timestamp() - 7200
    assert parse_when("now-90", NOW) == NOW.timestamp() - 90
    assert parse_when("now-7days", NOW) == NOW.timestamp() - 7 * 86400
    assert parse_when("today", NOW) == at(2026, 3, 14)
    assert parse_when("midnight", NOW) == at(2026, 3, 14)
    assert parse_when("noon", NOW) == at(2026, 3, 14, 12)
    assert parse_when("09:15", NOW) == at(2026, 3, 14, 9, 15)
    assert parse_when("09:15:30", NOW) == at(2026, 3, 14, 9, 15, 30)
    assert parse_when("0301", NOW) == at(2026, 3, 1)
    assert parse_when("030125", NOW) == at(2025, 3, 1)
    assert parse_when("03/01/25", NOW) == at(2025, 3, 1)
    assert parse_when("03.01", NOW) == at(2026, 3, 1)
    assert parse_when("2026-01-02T03:04", NOW) == at(2026, 1, 2, 3, 4)


# Each was accepted by one of the old grammars and refused (or read differently) by another.
EVERYWHERE = [
    ("tomorrow 09:00", at(2026, 3, 15, 9, 0)),  # greserve only
    ("monday", at(2026, 3, 16)),  # greserve only
    ("now+90m", NOW.timestamp() + 5400),  # not the web
    ("now+1-00:00:00", NOW.timestamp() + 86400),  # greserve and job files only
    ("now-2hours", NOW.timestamp() - 7200),  # gacct only
    ("now+90", NOW.timestamp() + 90),  # gacct: seconds; greserve and job files: minutes
    ("noon", at(2026, 3, 14, 12)),  # gacct only
    ("09:15", at(2026, 3, 14, 9, 15)),  # gacct only
    ("03/01/25", at(2025, 3, 1)),  # gacct only
    ("2026-03-20T08:00Z", at(2026, 3, 20, 8, 0, tz=UTC)),  # everywhere
]


@pytest.mark.parametrize(("text", "expected"), EVERYWHERE)
def test_job_file_begin_takes_every_form(text: str, expected: float) -> None:
    assert parse_begin(text, NOW) == expected


@pytest.mark.parametrize(("text", "expected"), EVERYWHERE)
def test_booking_sheets_take_every_form(text: str, expected: float) -> None:
    [row] = read_sheet(f"who,node,gpus,start,end\nann,n1,1,{text},2027-01-01\n", NOW)
    assert row.error == "" and row.fields["start"] == expected


def test_a_job_file_begin_in_the_grammar() -> None:
    spec = parse_job_file({"image": "img", "command": ["true"], "begin": "tomorrow 09:00"})
    today = datetime.now().astimezone()
    tomorrow = datetime.combine(today.date() + timedelta(days=1), datetime.min.time())
    assert spec.begin_time == tomorrow.replace(hour=9, tzinfo=today.tzinfo).timestamp()


def test_the_web_reads_every_form_with_utc_for_no_zone() -> None:
    now = time.time()
    assert web_time("2026-03-20T08:00", "start") == at(2026, 3, 20, 8, 0, tz=UTC)
    assert web_time("2026-03-20", "start") == at(2026, 3, 20, tz=UTC)
    assert abs(web_time("now-2h", "start") - (now - 7200)) < 5
    assert abs(web_time("now+90", "start") - (now + 90)) < 5
    tomorrow = datetime.now(UTC).date() + timedelta(days=1)
    assert (
        web_time("tomorrow 09:00", "end")
        == datetime.combine(tomorrow, datetime.min.time().replace(hour=9), UTC).timestamp()
    )


HUGE = "now+" + "9" * 400 + ".5h"  # a float overflow, not a crash


@pytest.mark.parametrize(
    "text", ["", "someday", "now+", "now+2x", "25:00", "13/45", "funday", HUGE]
)
def test_refusals_name_the_field_and_the_forms(text: str) -> None:
    with pytest.raises(SpecError) as spec:
        parse_job_file({"image": "img", "command": ["true"], "begin": text})
    assert spec.value.field == "begin"
    assert "now+2h" in str(spec.value) and "tomorrow 09:00" in str(spec.value)
    assert "no zone = local time" in str(spec.value)
    with pytest.raises(UserError, match=r"^start: expected .*no zone = UTC.*now\+2h"):
        web_time(text, "start")
    with pytest.raises(ValueError, match=r"^end: expected .*now\+2h"):
        parse_when(text, NOW, "end")


def test_gacct_names_the_option_it_refuses(capsys: pytest.CaptureFixture[str]) -> None:
    assert "tomorrow 09:00" in build_parser().format_help()
    with pytest.raises(SystemExit) as exit_:
        gacct_main(["-S", "yesterday-ish", "--scheduler", "127.0.0.1:1"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "-S/--starttime: expected" in err and "now-2hours" in err


def test_gadmin_audit_since_takes_the_grammar() -> None:
    """``--since`` keeps its ``2h`` (ago) and Unix seconds, and reads dates as the grammar."""
    now = time.time()
    assert parse_since("2h", now) == now - 7200
    assert parse_since("1700000000", now) == 1700000000.0
    assert parse_since("2025-01-31 12:00", now) == datetime(2025, 1, 31, 12).timestamp()
    midnight = datetime.fromtimestamp(now).replace(hour=0, minute=0, second=0, microsecond=0)
    assert parse_since("today", now) == midnight.timestamp()  # refused before
    with pytest.raises(CliError, match=r"^--since: expected .*now-2hours.*or 2h \(two hours"):
        parse_since("teatime", now)


def test_the_web_api_takes_relative_times_and_names_the_field(tmp_path: Path) -> None:
    """Over HTTP: a booking from ``now+1h`` to ``now+3h``, the listing from ``now``, and a
    refused period naming ``end``."""

    async def test(sched: Any, client: Callable[[], Browserless]) -> None:
        await registered(sched, "n1", 2)
        web = client()
        csrf = {"X-CSRF-Token": (await web.login(await user(sched, "ann")))["csrf"]}
        before = time.time()
        made = await web.call(
            "POST",
            "/api/v1/reservations",
            {"name": "soon", "gpus": {"n1": [0]}, "start": "now+1h", "end": "now+3h"},
            csrf,
        )
        assert made.status == 201, made.body
        start = datetime.fromisoformat(made.json()["start"]).timestamp()
        assert before + 3600 - 2 <= start <= time.time() + 3600 + 2
        listed = await web.call("GET", "/api/v1/reservations?start=now&end=now%2B1d")
        assert [r["name"] for r in listed.json()["reservations"]] == ["soon"]
        bad = await web.call("GET", "/api/v1/accounting/summary?start=now&end=teatime")
        assert bad.status == 400
        assert bad.json()["error"].startswith("end: expected a time such as")

    run(test, tmp_path)
