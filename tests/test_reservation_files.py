"""greserve's files and drawings: the calendar, the iCalendar export, the CSV booking sheet."""

from __future__ import annotations

from datetime import UTC, datetime

import icalendar
import pytest

from rota.bookingsheet import read_sheet
from rota.cli.bookings import to_ics
from rota.cli.calendar_view import Booking, Running, render
from rota.v1 import rota_pb2 as pb

T0 = datetime(2026, 11, 23, 0, 0, tzinfo=UTC).timestamp()
HOUR = 3600.0


def _calendar(colour: bool) -> str:
    gpus = [("gpu03", 0), ("gpu03", 1)]
    bookings = [Booking("lab", T0 + 9 * HOUR, T0 + 17 * HOUR, frozenset({("gpu03", 0)}))]
    running = [Running("7", T0, T0 + 2 * HOUR, frozenset({("gpu03", 1)}))]
    return render(gpus, bookings, running, T0, 1, T0 + 12 * HOUR, colour)


def test_the_calendar_draws_bookings_jobs_and_now_in_plain_text_off_a_tty() -> None:
    text = _calendar(colour=False)
    rows = {line.split()[0]: line.split(" ", 1)[1] for line in text.splitlines()[1:3]}
    assert rows["gpu03:0"] == "." * 18 + "AlabAA|" + "A" * 9 + "." * 14  # the name on its bar
    assert rows["gpu03:1"] == "#7##" + "." * 20 + "|" + "." * 23  # a job without a user: its id
    assert "A lab" in text and "\x1b[" not in text


def test_the_calendar_is_coloured_on_a_tty() -> None:
    assert "\x1b[" in _calendar(colour=True)


def test_the_ics_export_parses_and_recurs_for_daily() -> None:
    r = pb.Reservation(
        name="standup", start=T0 + 9 * HOUR, end=T0 + 10 * HOUR, users=["ann"],
        gpus=[pb.ReservedGpus(node="gpu03", indices=[0, 1])], flags=["DAILY"],
    )  # fmt: skip
    cal = icalendar.Calendar.from_ical(to_ics([r], "lab"))
    (event,) = cal.walk("VEVENT")
    assert str(event["uid"]) == "standup@lab"
    assert event.decoded("dtstart") == datetime.fromtimestamp(T0 + 9 * HOUR, UTC)
    assert event["rrule"]["FREQ"] == ["DAILY"]
    assert "2 GPU(s) for ann" in str(event["summary"])


def test_the_sheet_reads_rows_and_names_the_bad_column() -> None:
    now = datetime(2026, 11, 23, 8, 0).astimezone()
    text = (
        "who,node,gpus,start,end,name\n"
        "alice bob,gpu03,all,2026-11-23T09:00,2026-11-27T18:00,lab-a\n"
        "account:vision,gpu01,2,2026-11-24T09:00,2026-11-24T12:00,\n"
        "carol,gpu02,two,2026-11-24T09:00,2026-11-24T12:00,\n"
        "dave,gpu02,1,someday,2026-11-24T12:00,\n"
    )
    a, b, c, d = read_sheet(text, now)
    assert a.fields["users"] == ["alice", "bob"] and a.fields["gpus"] == 0
    assert a.fields["nodes"] == ["gpu03"] and a.fields["name"] == "lab-a"
    assert b.fields["accounts"] == ["vision"] and b.fields["name"] == "gpu01-vision-20261124"
    assert (c.line, c.error) == (4, "gpus: 'two' is not a positive count or 'all'")
    assert d.line == 5 and d.error.startswith("start:")


def test_a_sheet_without_the_columns_is_refused() -> None:
    with pytest.raises(ValueError, match="header: missing column"):
        read_sheet("user,node\nann,gpu01\n", datetime.now().astimezone())


def test_the_sheet_keeps_exact_gpus_and_the_unused_rule() -> None:
    now = datetime(2026, 11, 23, 8, 0).astimezone()
    text = (
        "who,node,gpus,start,end,name,indices,unused\n"
        "ann,gpu01,2,2026-11-24T09:00,2026-11-24T12:00,a,3 1,release\n"
        "ann,gpu01,,2026-11-24T09:00,2026-11-24T12:00,b,0 x,\n"
        "ann,gpu01,2,2026-11-24T09:00,2026-11-24T12:00,c,3,\n"
        "ann,gpu01,1,2026-11-24T09:00,2026-11-24T12:00,d,,never\n"
    )
    a, b, c, d = read_sheet(text, now)
    assert a.fields["gpu_indices"] == [1, 3] and a.fields["unused"] == "release"
    assert b.error == "indices: '0 x' is not GPU indices such as '0 3'"
    assert c.error == "gpus: 2, but indices names 1 GPU(s)"
    assert d.error == "unused: 'never' is not lend or release"


def test_a_request_with_gpu_indices_books_exactly_those_of_its_one_node() -> None:
    from rota.scheduler.api.reservations import request_from_pb
    from rota.scheduler.core.errors import UserError

    one = pb.CreateReservationRequest(name="a", nodes=["gpu01"], gpu_indices=[3, 1], gpus=2)
    request = request_from_pb(one)
    assert request.gpu_ids == {"gpu01": (1, 3)} and request.nodes == ()
    two = pb.CreateReservationRequest(name="b", nodes=["gpu01", "gpu02"], gpu_indices=[0])
    with pytest.raises(UserError, match="gpu_indices: name exactly one node"):
        request_from_pb(two)
    with pytest.raises(UserError, match="gpus: 3, but gpu_indices names 1 GPU"):
        request_from_pb(pb.CreateReservationRequest(name="c", nodes=["n"], gpu_indices=[0], gpus=3))
