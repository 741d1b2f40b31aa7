"""Reservations end to end: real scheduler and agent processes, real Docker, the real CLI."""

from __future__ import annotations

import json
import signal
from datetime import datetime

from tests.cluster import TEST_IMAGE, Cluster, free_port, fresh_passes, wait_for


def _submit(cluster: Cluster, token: str, user: str, *flags: str) -> str:
    """A 2-GPU job of ``user`` that sleeps 120 s; its id."""
    text = "command: [sh, -c, 'sleep 120']\nresources: {gpus: 2}\n"
    return _submit_text(cluster, token, user, text, *flags)


def _alices_lab(cluster: Cluster) -> tuple[str, str, str]:
    """A scheduler, users alice and bob, a 4-GPU node, and alice's reservation ``lab`` of the
    whole node for 2 h from now, lending nothing; alice's and bob's tokens and the node."""
    cluster.start_scheduler()
    alice, bob = cluster.add_user("alice"), cluster.add_user("bob")
    cluster.start_agent("n1", gpus=4)
    node = cluster.node_name("n1")
    made = cluster.cli(
        "greserve", "create", "--name", "lab", "--start", "now", "--duration", "2h",
        "--nodes", node, "--users", "alice", "--no-lend", token=alice,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    return alice, bob, node


def test_a_reservation_runs_its_jobs_and_keeps_others_off(cluster: Cluster) -> None:
    alice, bob, node = _alices_lab(cluster)
    shown = json.loads(cluster.cli("greserve", "show", "lab", "--json", token=alice).stdout)
    assert shown["gpus"] == [{"node": node, "indices": [0, 1, 2, 3]}]

    other = _submit(cluster, bob, "bob")
    mine = _submit(cluster, alice, "alice", "--reservation", "lab")
    job = cluster.wait_state(mine, "RUNNING")
    assert job["reservation"] == "lab" and job["nodes"] == [node]
    wait_for(
        lambda: (
            (j := cluster.job(other))["state"] == "PENDING" and j["reason"] == "ReqNodeNotAvail"
        ),
        30,
        what="the other user's job waits with ReqNodeNotAvail",
    )
    assert cluster.job(other)["reservation"] is None
    listed = cluster.cli("gqueue", check=True).stdout.splitlines()
    assert "RESERVATION" in listed[0].split()
    assert next(x for x in listed if x.split()[0] == mine).split()[-2] == "lab"
    custom = cluster.cli("gqueue", "-o", "%i %v", "--noheader", check=True).stdout.split()
    assert custom[custom.index(mine) + 1] == "lab"
    why = cluster.cli("gqueue", "--explain", other, check=True).stdout
    assert "reservation:     lab (until " in why

    refused = cluster.cli("gsub", "--reservation", "lab", str(cluster.root / "bob.yaml"), token=bob)
    assert refused.returncode != 0 and "reservation 'lab' allows users alice" in refused.stderr

    overlap = cluster.cli(
        "greserve", "create", "--name", "late", "--start", "now+1h", "--duration", "2h",
        "--nodes", node, "--users", "bob", token=bob,
    )  # fmt: skip
    assert overlap.returncode != 0 and "reserved by lab" in overlap.stderr
    listed = json.loads(cluster.cli("greserve", "list", "--json", check=True).stdout)
    assert [r["name"] for r in listed] == ["lab"] and listed[0]["running_jobs"] == [mine]

    busy = cluster.cli("greserve", "delete", "lab")
    assert busy.returncode != 0 and f"running jobs ({mine})" in busy.stderr


def test_a_booking_sheet_is_imported_drawn_and_exported(cluster: Cluster) -> None:
    import icalendar

    cluster.start_scheduler()
    cluster.start_agent("n1", gpus=2)
    node = cluster.node_name("n1")
    sheet = cluster.root / "bookings.csv"
    sheet.write_text(
        "who,node,gpus,start,end,name\n"
        f"alice,{node},all,now+1h,now+3h,lab-a\n"
        f"bob,{node},1,now+2h,now+4h,clash\n"
        f"account:vision,{node},2,now+5h,now+6h,\n"
    )
    dry = cluster.cli("greserve", "import", str(sheet))
    assert dry.returncode == 1 and f"{sheet}:3: clash: refused: " in dry.stdout
    assert "reserved by lab-a" in dry.stdout and "nothing created" in dry.stdout
    assert json.loads(cluster.cli("greserve", "list", "--json", check=True).stdout) == []
    done = cluster.cli("greserve", "import", str(sheet), "--skip-bad")
    assert done.returncode == 0 and "2 reservation(s) created, 1 row(s) refused" in done.stdout
    drawn = cluster.cli("greserve", "calendar", "--from", "now", "--days", "1", check=True).stdout
    assert f"{node}:0 " in drawn and "A lab-a" in drawn and "\x1b[" not in drawn
    out = cluster.root / "lab.ics"
    cluster.cli("greserve", "export", "--ics", "-o", str(out), check=True)
    events = icalendar.Calendar.from_ical(out.read_bytes()).walk("VEVENT")
    names = sorted(str(e["uid"]).split("@")[0] for e in events)
    assert len(names) == 2 and names[0] == "lab-a"
    assert names[1].startswith(f"{node}-vision-")


def test_a_scheduler_killed_mid_window_keeps_the_reservation(cluster: Cluster) -> None:
    alice, bob, node = _alices_lab(cluster)
    before = json.loads(cluster.cli("greserve", "show", "lab", "--json", check=True).stdout)
    mine = _submit(cluster, alice, "alice", "--reservation", "lab")
    cluster.wait_state(mine, "RUNNING")

    cluster.kill("scheduler", signal.SIGKILL)
    cluster.start_scheduler()
    wait_for(lambda: (n := cluster.node(node)) and n["state"] != "DOWN", 30, what="reconnected")
    after = json.loads(cluster.cli("greserve", "show", "lab", "--json", check=True).stdout)
    assert (after["start"], after["end"], after["gpus"]) == (
        before["start"],
        before["end"],
        before["gpus"],
    )
    assert after["running_jobs"] == [mine] and cluster.job(mine)["state"] == "RUNNING"
    other = _submit(cluster, bob, "bob")
    wait_for(
        lambda: cluster.job(other)["reason"] == "ReqNodeNotAvail",
        30,
        what="another user's job still kept off the reserved GPUs",
    )


def test_a_daily_reservation_opens_its_next_window_when_one_ends(cluster: Cluster) -> None:
    cluster.start_scheduler()
    cluster.start_agent("n1", gpus=2)
    node = cluster.node_name("n1")
    cluster.cli(
        "greserve", "create", "--name", "standup", "--start", "now", "--duration", "8s",
        "--nodes", node, "--users", "alice", "--flags", "DAILY", check=True,
    )  # fmt: skip
    first = json.loads(cluster.cli("greserve", "show", "standup", "--json", check=True).stdout)
    shown = cluster.cli("ginfo", check=True).stdout
    assert "2 now (standup)" in shown
    wait_for(
        lambda: (
            _t(json.loads(cluster.cli("greserve", "show", "standup", "--json").stdout or "{}"))
            == _t(first) + 86_400
        ),
        40,
        what="the clock moved the window on by a day at its end",
    )
    again = json.loads(cluster.cli("greserve", "show", "standup", "--json", check=True).stdout)
    assert _t(again, "end") == _t(first, "end") + 86_400
    assert "2 now" not in cluster.cli("ginfo", check=True).stdout
    job = cluster.submit(
        f"image: {TEST_IMAGE}\ncommand: [sh, -c, 'sleep 60']\nresources: {{gpus: 2}}\n"
        "time_limit: 1h\n"
    )
    cluster.wait_state(job, "RUNNING")  # it ends long before tomorrow's window


def test_maint_blocks_everyone_and_its_nodes_show_maintenance(cluster: Cluster) -> None:
    http = free_port()
    cluster.start_scheduler("--open-registration", "--http-listen", f"127.0.0.1:{http}")
    alice, bob = cluster.add_user("alice"), cluster.add_user("bob")
    cluster.start_agent("n1", gpus=2)
    node = cluster.node_name("n1")
    made = cluster.cli(
        "greserve", "create", "--name", "lab", "--start", "now", "--duration", "2h",
        "--nodes", node, "--users", "alice", token=alice,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    cluster.cli(
        "greserve", "create", "--name", "fix", "--start", "now", "--duration", "1h",
        "--nodes", node, "--users", "root", "--flags", "MAINT",
    check=True)  # fmt: skip
    mine = _submit(cluster, alice, "alice", "--reservation", "lab")
    other = _submit(cluster, bob, "bob")
    wait_for(
        lambda: cluster.job(other)["reason"] == "ReqNodeNotAvail" and cluster.job(mine)["reason"],
        30,
        what="both jobs wait",
    )
    fresh_passes(http)  # a pass that saw both jobs waiting left them waiting
    assert cluster.job(mine)["state"] == "PENDING", "MAINT blocks even the reservation's jobs"
    assert cluster.job(other)["state"] == "PENDING"
    line = next(x for x in cluster.cli("ginfo", check=True).stdout.splitlines() if node in x)
    assert line.split()[1] == "MAINT" and "now (" in line
    cluster.cli("greserve", "delete", "fix", check=True)
    cluster.wait_state(mine, "RUNNING")


def _submit_text(cluster: Cluster, token: str, name: str, text: str, *flags: str) -> str:
    path = cluster.write_job(f"{name}.yaml", f"image: {TEST_IMAGE}\n{text}")
    out = cluster.cli("gsub", "--parsable", *flags, str(path), token=token)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_a_borrower_is_preempted_when_the_owner_submits(cluster: Cluster) -> None:
    cluster.start_scheduler()
    alice, bob = cluster.add_user("alice"), cluster.add_user("bob")
    cluster.start_agent("n1", gpus=2)
    node = cluster.node_name("n1")
    cluster.cli(
        "greserve", "create", "--name", "lab", "--start", "now", "--duration", "2h",
        "--nodes", node, "--users", "alice", check=True,
    )  # fmt: skip
    borrower = _submit_text(
        cluster, bob, "sweep",
        "command: [sh, -c, 'trap \"echo got SIGTERM; exit 0\" TERM; sleep 300 & wait']\n"
        "resources: {gpus: 2}\npreemptible: true\n",
    )  # fmt: skip
    lent = cluster.wait_state(borrower, "RUNNING")
    assert lent["nodes"] == [node], "idle reserved GPUs are lent to a preemptible job"
    wait_for(lambda: cluster.job(borrower)["attempt"] == 1, 30, what="first attempt")
    owner = _submit_text(
        cluster, alice, "train", "command: [sh, -c, 'sleep 60']\nresources: {gpus: 2}\n",
        "--reservation", "lab",
    )  # fmt: skip
    started = cluster.wait_state(owner, "RUNNING", timeout=60)
    grace = 10.0  # kill_grace: SIGTERM, then SIGKILL
    waited = datetime.fromisoformat(started["start_time"]) - datetime.fromisoformat(
        started["submit_time"]
    )
    assert waited.total_seconds() <= grace + 5, "the owner's job starts within the grace"
    wait_for(
        lambda: (j := cluster.job(borrower))["state"] == "PENDING" and j["attempt"] >= 1,
        30,
        what="the borrower requeued",
    )
    assert "got SIGTERM" in cluster.cli("glogs", "--attempt", "1", borrower, check=True).stdout
    shown = cluster.cli("gcontrol", "show", "job", borrower, check=True).stdout
    assert "PREEMPTED -> PENDING" in shown


def test_a_long_job_is_not_backfilled_into_an_upcoming_window_but_a_short_one_is(
    cluster: Cluster,
) -> None:
    cluster.start_scheduler()
    bob, carol = cluster.add_user("bob"), cluster.add_user("carol")
    cluster.start_agent("n1", gpus=2)
    node = cluster.node_name("n1")
    cluster.cli(
        "greserve", "create", "--name", "later", "--start", "now+30m", "--duration", "1h",
        "--nodes", node, "--users", "alice", check=True,
    )  # fmt: skip
    body = "command: [sh, -c, 'sleep 30']\nresources: {gpus: 2}\n"
    long = _submit_text(cluster, bob, "long", body + "time_limit: 2h\n")
    wait_for(
        lambda: cluster.job(long)["reason"] == "ReqNodeNotAvail", 30, what="the long job waits"
    )
    short = _submit_text(cluster, carol, "short", body + "time_limit: 10m\n")
    cluster.wait_state(short, "RUNNING")
    assert cluster.job(long)["state"] == "PENDING"
    start = cluster.cli("gqueue", "--start", check=True).stdout
    assert long in start and "N/A" not in next(x for x in start.splitlines() if long in x)


def _t(shown: dict, key: str = "start") -> float:
    """A time of ``greserve show --json`` (ISO 8601) in Unix seconds (0 when absent)."""
    return datetime.fromisoformat(shown[key]).timestamp() if shown.get(key) else 0.0
