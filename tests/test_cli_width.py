"""The terminal side of issue 26: ``gqueue`` and ``greserve calendar`` fit the terminal's width,
the calendar names who holds each bar and draws only what is on the rows shown, ``greserve
--json`` gives ISO 8601 times and ``greserve export --csv`` writes what ``import`` reads."""

from __future__ import annotations

import io
from datetime import UTC, datetime

import pytest

from rota.bookingsheet import read_sheet
from rota.cli.bookings import reservation_json, to_csv
from rota.cli.calendar_view import Booking, Running, render
from rota.cli.gqueue_format import default_rows
from rota.cli.render import table
from rota.cli.style import terminal_width
from rota.jobspec import JobSpec
from rota.scheduler.cluster.model import JobRecord, NodeAlloc
from rota.scheduler.web.views import job_json
from rota.states import JobState
from rota.v1 import rota_pb2 as pb

HOUR = 3600.0
T0 = datetime(2026, 3, 2, tzinfo=UTC).timestamp()


def _job(id: int, reservation: str, reason: str = "") -> dict:
    record = JobRecord(
        id=id,
        name="a-rather-long-experiment-name",
        user="someone-long",
        account="vision",
        spec=JobSpec(image="img", command=("true",), gpus=2, reservation=reservation),
        state=JobState.PENDING if reason else JobState.RUNNING,
        reason=reason,
        submit_time=T0,
        time_limit=HOUR,
        attempt=1,
        start_time=None if reason else T0,
        allocation=[] if reason else [NodeAlloc("gpu-node-0001", (0, 1))],
    )
    return job_json(record)


def test_gqueue_fits_the_terminal_and_leaves_no_null_reservations() -> None:
    jobs = [
        _job(1, "lab-for-the-vision-group"),
        _job(2, "", reason="Resources: waiting for 2 GPUs on nodes with label zone=eu"),
    ]
    headers, rows = default_rows(jobs, T0 + 60, width=80)
    lines = table(headers, rows).split("\n")
    assert "RESERVATION" in lines[0]
    assert all(len(line) <= 80 for line in lines), lines
    assert "(null)" not in "\n".join(lines)
    assert " - " in lines[2] and "lab-for-" in lines[1]
    assert "+" in lines[2]  # the cut reason says it was cut
    wide = table(*default_rows(jobs, T0 + 60)).split("\n")  # a pipe: nothing cut
    assert max(len(line) for line in wide) > 80 and "zone=eu" in wide[2]


def test_terminal_width_is_columns_else_unlimited_in_a_pipe(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "57")
    assert terminal_width(io.StringIO()) == 57
    monkeypatch.delenv("COLUMNS")
    assert terminal_width(io.StringIO()) == 0


def _calendar(width: int, gpus: list[tuple[str, int]], down: dict[str, str] | None = None) -> str:
    bookings = [
        Booking("lab", T0 + 2 * HOUR, T0 + 20 * HOUR, frozenset({("n1", 0)})),
        Booking("other", T0, T0 + 30 * HOUR, frozenset({("n2", 0)})),
    ]
    running = [Running("7", T0, T0 + 30 * HOUR, frozenset({("n1", 1)}), "alice")]
    return render(gpus, bookings, running, T0, 7, T0 + HOUR, False, width, down)


@pytest.mark.parametrize("width", [60, 80, 132])
def test_the_calendar_fits_the_width_and_names_each_bar(width: int) -> None:
    text = _calendar(width, [("n1", 0), ("n1", 1)])
    assert all(len(line) <= width for line in text.splitlines()), text
    rows = {line.split(" ", 1)[0]: line.split(" ", 1)[1] for line in text.splitlines()[1:3]}
    assert "lab" in rows["n1:0"]  # the reservation's name on its bar
    assert "alice##" in rows["n1:1"]  # the job's user on its bar (now, "|", marks its first)
    narrow, wide = _calendar(60, [("n1", 0)]), _calendar(132, [("n1", 0)])
    assert len(narrow.splitlines()[1]) < len(wide.splitlines()[1])


def test_the_calendar_legend_has_only_the_rows_shown_and_out_of_service_nodes() -> None:
    text = _calendar(80, [("n2", 0), ("n3", 0)], {"n3": "DRAINED (bad fan)", "n9": "DOWN"})
    assert "other" in text and "lab" not in text  # --node n2: n1's booking is not listed
    row = next(line for line in text.splitlines() if line.startswith("n3:0"))
    assert set(row.split(" ", 1)[1]) <= {"x", "|"}  # no free slots on a drained node
    assert "x n3: DRAINED (bad fan)" in text and "n9" not in text


def _reservation(name: str, gpus: dict[str, list[int]], **kw: object) -> pb.Reservation:
    return pb.Reservation(
        name=name,
        start=T0,
        end=T0 + 8 * HOUR,
        gpus=[pb.ReservedGpus(node=n, indices=i) for n, i in gpus.items()],
        created_at=T0 - HOUR,
        **kw,  # type: ignore[arg-type]
    )


def test_greserve_json_times_are_iso_8601_as_in_gacct() -> None:
    shown = reservation_json(_reservation("lab", {"n1": [0]}, users=["ann"], lend=True))
    assert shown["start"] == "2026-03-02T00:00:00Z" and shown["end"] == "2026-03-02T08:00:00Z"
    assert datetime.fromisoformat(shown["created_at"]).timestamp() == T0 - HOUR


def test_export_csv_is_read_back_by_import_as_the_same_bookings() -> None:
    found = [
        _reservation("lab", {"n1": [0, 1]}, users=["ann", "bob"], lend=True),
        _reservation(
            "team",
            {"n2": [0], "n3": [1, 2]},
            accounts=["vision"],
            flags=["DAILY"],
            lend=False,
            unused="release",
        ),
    ]
    rows = read_sheet(to_csv(found), datetime.now(UTC))
    assert [r.error for r in rows] == ["", "", ""]
    got = [r.fields for r in rows]
    assert got[0] == {
        "name": "lab",
        "start": T0,
        "end": T0 + 8 * HOUR,
        "nodes": ["n1"],
        "gpus": 0,
        "gpu_indices": [0, 1],
        "users": ["ann", "bob"],
        "accounts": [],
        "flags": [],
        "no_lend": False,
        "unused": "lend",
    }
    assert [(f["name"], f["nodes"], f["gpu_indices"]) for f in got[1:]] == [
        ("team.n2", ["n2"], [0]),
        ("team.n3", ["n3"], [1, 2]),
    ]
    assert all(f["accounts"] == ["vision"] and f["flags"] == ["DAILY"] for f in got[1:])
    assert all(f["no_lend"] and f["unused"] == "release" for f in got[1:])
