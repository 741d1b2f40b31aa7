"""Reservations end to end: real scheduler and agent processes, real Docker, the real CLI."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.cluster import TEST_IMAGE, Cluster, wait_for


def _as(cluster: Cluster, token: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run a user command as the user of ``token`` (``cluster.add_user``)."""
    module = args[0]
    return subprocess.run(
        [sys.executable, "-m", f"rota.cli.{module}", *args[1:]],
        env={**cluster.env, "ROTA_TOKEN": token},
        capture_output=True,
        text=True,
        timeout=120,
    )


def _submit(cluster: Cluster, token: str, user: str, *flags: str) -> str:
    path = cluster.write_job(
        f"{user}.yaml",
        f"image: {TEST_IMAGE}\ncommand: [sh, -c, 'sleep 120']\nresources: {{gpus: 2}}\n",
    )
    out = _as(cluster, token, "gsub", "--parsable", *flags, str(path))
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_a_reservation_runs_its_jobs_and_keeps_others_off(cluster: Cluster) -> None:
    cluster.start_scheduler()
    alice, bob = cluster.add_user("alice"), cluster.add_user("bob")
    cluster.start_agent("n1", gpus=4)
    node = cluster.node_name("n1")
    made = _as(
        cluster, alice, "greserve", "create", "--name", "lab", "--start", "now",
        "--duration", "2h", "--nodes", node, "--users", "alice", "--no-lend",
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    shown = json.loads(_as(cluster, alice, "greserve", "show", "lab", "--json").stdout)
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
    why = cluster.cli("gqueue", "--explain", other, check=True).stdout
    assert "reservation:     lab (until " in why

    refused = _as(cluster, bob, "gsub", "--reservation", "lab", str(cluster.root / "bob.yaml"))
    assert refused.returncode != 0 and "reservation 'lab' allows users alice" in refused.stderr

    overlap = _as(
        cluster, bob, "greserve", "create", "--name", "late", "--start", "now+1h",
        "--duration", "2h", "--nodes", node, "--users", "bob",
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
