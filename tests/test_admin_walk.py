"""What an admin following docs/admin.md met on the way, as the commands they typed show it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

from tests.cluster import Cluster, free_port


def _run(module: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ROTA_SCHEDULER": f"127.0.0.1:{free_port()}", "ROTA_TOKEN": "t"}
    return subprocess.run(
        [sys.executable, "-m", f"rota.cli.{module}", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=60,
    )


def test_gsub_refuses_an_unquoted_yaml_boolean_in_a_command(tmp_path: Path) -> None:
    """`command: [true]` ran the program "True" (exit 127); now gsub names the element."""
    (tmp_path / "job.yaml").write_text("image: busybox\ncommand: [true]\n")
    result = _run("gsub", "job.yaml", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "command[0]: got the boolean True; quote the word" in result.stderr


def test_admin_token_refuses_a_database_no_scheduler_made(tmp_path: Path) -> None:
    """As root without the unit's XDG_DATA_HOME=/var/lib, `rota admin-token --config FILE` (a
    file with no database_url) made a new SQLite database in root's home and printed a token
    the scheduler (on /var/lib/rota/scheduler.db) refused; now it says so and leaves nothing."""
    settings = tmp_path / "scheduler.yaml"
    settings.write_text("scheduler:\n  listen: 127.0.0.1:9\n")
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data")}
    rota = [sys.executable, "-m", "rota.cli.rota_main"]
    refused = subprocess.run(
        [*rota, "admin-token", "--config", str(settings), "root"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert refused.returncode == 1 and refused.stdout == ""
    assert "holds no rota database: name the scheduler's with --db" in refused.stderr
    assert not list((tmp_path / "data").rglob("scheduler.db*"))
    db = ["--config", str(settings)]
    subprocess.run([*rota, "db", "upgrade", *db], env=env, check=True, capture_output=True)
    made = subprocess.run(
        [*rota, "admin-token", *db, "root"], capture_output=True, text=True, env=env, timeout=60
    )
    assert made.returncode == 0 and len(made.stdout.strip()) > 20, made.stderr
    named = f"sqlite:///{tmp_path / 'named.db'}"  # a database named may be new: it is made
    first = subprocess.run(
        [*rota, "admin-token", "--db", named], capture_output=True, text=True, env=env, timeout=60
    )
    assert first.returncode == 0 and (tmp_path / "named.db").stat().st_size > 0, first.stderr


def test_scheduler_names_the_missing_default_partition(tmp_path: Path) -> None:
    """Two partitions and no default read "partitions one of the partitions (...) must have
    default: true"; the line now reads as a sentence about the setting."""
    settings = tmp_path / "scheduler.yaml"
    settings.write_text(
        "scheduler:\n  partitions:\n    gpu: {nodes: [gpu01]}\n    debug: {nodes: [gpu02]}\n"
    )
    result = subprocess.run(
        [sys.executable, "-m", "rota.cli.rota_main", "scheduler", "--config", str(settings)],
        capture_output=True,
        text=True,
        env={**os.environ, "XDG_DATA_HOME": str(tmp_path / "data")},
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "rota scheduler: error: partitions must mark one of gpu, debug as the default "
        "(default: true)"
    )


def _guide_block(heading: str) -> str:
    """The first ```bash block after ``heading`` in docs/admin.md."""
    text = (Path(__file__).parent.parent / "docs" / "admin.md").read_text()
    after = text[text.index(heading) :]
    start = after.index("```bash\n") + len("```bash\n")
    return after[start : after.index("```", start)]


def test_the_guides_tls_step_leaves_the_scheduler_user_able_to_read_its_files(
    searchable_dir: Path,
) -> None:
    """Step 3 run as written (user rota played by nobody, group nogroup): `rota certs init`
    makes its directory 0700, so chown/chmod of the key alone left the scheduler, which runs
    as user rota, unable to open scheduler.pem and its key; the CA's key stays root's."""
    if os.geteuid() != 0:
        raise AssertionError("this test plays root and user rota: run it as root (CI does)")
    etc = searchable_dir / "etc"
    script = _guide_block("### 3. TLS certificates").replace("/etc/rota", str(etc))
    script = script.replace("rota certs init", f"{sys.executable} -m rota.cli.rota_main certs init")
    script = script.replace("chgrp rota", "chgrp nogroup")
    subprocess.run(["bash", "-euc", script], check=True, capture_output=True, timeout=60)
    tls = etc / "tls"
    as_rota = ["runuser", "-u", "nobody", "-g", "nogroup", "--", "cat"]
    for name in ("scheduler.pem", "scheduler-key.pem", "ca.pem"):
        read = subprocess.run([*as_rota, str(tls / name)], capture_output=True, timeout=30)
        assert read.returncode == 0, (name, read.stderr)
    for name in ("ca-key.pem", "node-gpu01-key.pem", "user-alice-key.pem"):
        read = subprocess.run([*as_rota, str(tls / name)], capture_output=True, timeout=30)
        assert read.returncode != 0, f"{name} readable by the scheduler's user"


def test_an_unreachable_database_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    """`rota scheduler` printed SQLAlchemy's traceback, `rota db` and `rota admin-token` its
    two-line text with a link to its docs, when PostgreSQL could not be reached."""
    db = f"postgresql+psycopg://rota@127.0.0.1:{free_port()}/rota"
    rota = [sys.executable, "-m", "rota.cli.rota_main"]
    listen = ["--listen", f"127.0.0.1:{free_port()}", "--http-listen", f"127.0.0.1:{free_port()}"]
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path), "ROTA_DB_PASSWORD": "x"}
    for args in (["scheduler", *listen], ["db", "current"], ["admin-token", "root"]):
        result = subprocess.run(
            [*rota, *args, "--db", db], capture_output=True, text=True, env=env, timeout=60
        )
        assert result.returncode == 1, (args, result.stderr)
        assert "Traceback" not in result.stderr and "sqlalche.me" not in result.stderr
        errors = [line for line in result.stderr.splitlines() if ": error: " in line]
        assert len(errors) == 1, (args, result.stderr)  # (log lines may come before it)
        assert errors[0].startswith(f"rota {args[0]}")
        assert ": error: cannot open the database: connection failed: " in errors[0]


def test_the_guides_install_step_links_every_command() -> None:
    """Step 1 linked ten commands into /usr/local/bin and left out grun and gattach."""
    import re
    import tomllib

    project = Path(__file__).parent.parent / "pyproject.toml"
    scripts = set(tomllib.loads(project.read_text())["project"]["scripts"])
    loop = re.search(r"for c in ([^;]+); do", _guide_block("### 1. Install rota"))
    assert loop is not None
    assert set(loop.group(1).split()) == scripts


def test_the_dashboard_shows_the_labels_the_agent_reports(cluster: Cluster) -> None:
    """`ginfo --json` showed an agent's `labels: {rack: r7}` merged with the admin's, the JSON
    API (and so the dashboard) the admin's alone: `{}`."""
    http = free_port()
    cluster.start_scheduler("--open-registration", "--http-listen", f"127.0.0.1:{http}")
    cluster.start_agent("n1", 1, "--labels", "rack=r7")
    name = cluster.node_name("n1")
    request = urllib.request.Request(f"http://127.0.0.1:{http}/api/v1/nodes")
    request.add_header("Authorization", f"Bearer {cluster.token}")
    with urllib.request.urlopen(request, timeout=20) as reply:
        nodes = json.loads(reply.read())["nodes"]
    assert [n["labels"] for n in nodes if n["name"] == name] == [{"rack": "r7"}]
    listed = json.loads(cluster.cli("ginfo", "--json", check=True).stdout)
    assert [n["labels"] for n in listed if n["name"] == name] == [{"rack": "r7"}]


def test_a_missing_subcommand_names_the_choices(tmp_path: Path) -> None:
    """`gadmin node` said "the following arguments are required: op"."""
    for module, args, choices in (
        ("gadmin", ["node"], "{add,drain,resume,remove,list}"),
        ("rota_main", ["db"], "{upgrade,current,downgrade}"),
    ):
        result = _run(module, *args, cwd=tmp_path)
        assert result.returncode == 2
        assert result.stderr.strip().endswith(f"the following arguments are required: {choices}")
