"""`gadmin user update`: an admin changes a user's accounts, default account, uid:gid and admin
flag after `gadmin user add` (which refuses an existing name); the user's token keeps working
and the change applies to their next request."""

from __future__ import annotations

import json

from tests.cluster import TEST_IMAGE, Cluster

JOB = f"image: {TEST_IMAGE}\ncommand: [sh, -c, 'true']\naccount: nlp\n"


def test_an_admin_changes_a_users_accounts_and_the_token_keeps_working(cluster: Cluster) -> None:
    cluster.start_scheduler()
    cluster.start_agent("n1", 1)
    add = cluster.cli("gadmin", "user", "add", "alice", "--account", "vision", "--parsable")
    alice = add.stdout.strip()
    job = cluster.write_job("nlp.yaml", JOB)
    refused = cluster.cli("gsub", str(job), token=alice)
    assert refused.returncode == 1 and "not a member of account 'nlp'" in refused.stderr

    changed = cluster.cli(
        "gadmin", "user", "update", "alice", "--account", "vision", "--account", "nlp",
        "--default-account", "nlp", "--uid", "1001", "--gid", "1001",
    )  # fmt: skip
    assert changed.returncode == 0, changed.stderr
    assert changed.stdout.strip() == (
        "User alice updated: accounts vision,nlp, default account nlp, uid:gid 1001:1001, "
        "not an admin"
    )
    accepted = cluster.cli("gsub", str(job), token=alice)  # the same token
    assert accepted.returncode == 0, accepted.stderr
    listed = json.loads(cluster.cli("gadmin", "user", "list", "--json", check=True).stdout)
    [entry] = [u for u in listed if u["name"] == "alice"]
    assert entry["accounts"] == ["vision", "nlp"] and entry["default_account"] == "nlp"

    bad = cluster.cli("gadmin", "user", "update", "alice", "--default-account", "physics")
    assert bad.returncode == 2
    assert "default_account: 'physics' is not one of the user's accounts" in bad.stderr
    unknown = cluster.cli("gadmin", "user", "update", "carol", "--admin")
    assert unknown.returncode == 1 and "user carol does not exist" in unknown.stderr
    nothing = cluster.cli("gadmin", "user", "update", "alice")
    assert nothing.returncode == 2 and "nothing to change" in nothing.stderr
    me = json.loads(cluster.cli("gadmin", "user", "list", "--json", check=True).stdout)
    [admin] = [u["name"] for u in me if u["admin"]]
    last = cluster.cli("gadmin", "user", "update", admin, "--no-admin")
    assert last.returncode == 2 and f"admin: {admin} is the last admin" in last.stderr
    unrevoked = cluster.cli("gadmin", "user", "revoke", admin)
    assert unrevoked.returncode == 2 and f"{admin} is the last admin" in unrevoked.stderr
    assert cluster.cli("gadmin", "user", "list").returncode == 0  # the admin's token works
    denied = cluster.cli("gadmin", "user", "update", "alice", "--admin", token=alice)
    assert denied.returncode == 1 and "permission denied" in denied.stderr

    promoted = cluster.cli("gadmin", "user", "update", "alice", "--admin", "--no-ids")
    assert promoted.returncode == 0, promoted.stderr
    assert promoted.stdout.strip().endswith("uid:gid -, an admin")
    assert cluster.cli("gadmin", "node", "list", token=alice).returncode == 0
    audit = json.loads(cluster.cli("gadmin", "audit", "--json", check=True).stdout)
    assert ("UserService/UpdateUser", "name=alice") in {(e["action"], e["target"]) for e in audit}
