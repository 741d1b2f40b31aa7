"""``rota up``: a scheduler (SQLite) and one local agent in the foreground. Imported only when
it runs."""

from __future__ import annotations

import argparse
import hmac
import os
import secrets
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from rota.cli.rota_admin import bootstrap_admin, current_user_name
from rota.paths import DEFAULT_ADDRESS, DEFAULT_HTTP, data_dir

if TYPE_CHECKING:
    from rota.scheduler.store.protocols import UserRepository


def _home_prefix() -> list[str]:
    """``--allowed-mount HOME`` for ``rota up``: the invoking user's home, unless the node
    never mounts it (``/``, ``/root``: ``allowlists.mount_refusal``)."""
    from rota.allowlists import mount_refusal

    home = os.path.realpath(Path.home())
    return [] if mount_refusal(home, None) else ["--allowed-mount", home]


def _free_port() -> int:
    """A TCP port of 127.0.0.1 that is free now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_listening(scheduler: subprocess.Popen[bytes], port: int) -> bool:
    """Wait until the scheduler accepts connections on ``port`` (so that the agent started
    next reaches it at once instead of logging that it is unreachable); False when it exited.
    Ctrl-C meanwhile stops it."""
    try:
        while scheduler.poll() is None:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return True
            except OSError:
                time.sleep(0.1)
    except KeyboardInterrupt:
        scheduler.terminate()
        scheduler.wait()
    return False


def _kept_token(users: UserRepository, admin: str, path: Path) -> str:
    """The token in the credentials file ``path`` when it still signs ``admin`` in as an admin
    of this database and only its owner can read it, else "": ``rota up`` run again keeps it,
    so that clients still running (a grun attaching again to its session) stay signed in."""
    from rota.scheduler.core.tokens import hash_token

    try:
        if path.stat().st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            return ""
        token = path.read_text().strip()
    except OSError:
        return ""
    user = users.user(admin)
    if not token or user is None or not user.admin or user.revoked:
        return ""
    return token if hmac.compare_digest(user.token_hash, hash_token(token)) else ""


def cmd_up(args: argparse.Namespace) -> int:
    """Scheduler (SQLite) + one local agent in the foreground; Ctrl-C stops both."""
    from rota.private import private_dir
    from rota.scheduler.cluster.model import NodeState
    from rota.scheduler.core.tokens import hash_token
    from rota.scheduler.store import schema
    from rota.scheduler.store.store import Store, open_engine

    os.umask(0o077)  # the database and job output: readable by their owner only
    base = private_dir(Path(args.data_dir) if args.data_dir else data_dir())
    db_url = f"sqlite:///{base / 'scheduler.db'}"
    node = args.node or socket.gethostname()
    token = secrets.token_urlsafe(24)
    try:
        # rota up's own database, kept across versions: migrated to this rota's schema first
        # (an empty one is created at the newest revision)
        engine = open_engine(db_url)
        try:
            schema.upgrade(engine)
        finally:
            engine.dispose()
        store = Store(db_url)
    except schema.SchemaError as exc:
        print(f"rota up: error: {exc}", file=sys.stderr)
        return 1
    existing = {n.name: n for n in store.nodes.all()}
    record = existing.get(node, NodeState(name=node))
    record.token_hash = hash_token(token)
    store.nodes.save(record)
    from rota.credentials import credentials_file, write_credentials

    admin = current_user_name()
    creds = credentials_file()
    kept = _kept_token(store.users, admin, creds)
    store.close()
    if not kept:
        write_credentials(creds, bootstrap_admin(db_url, admin))
    listen = f"127.0.0.1:{args.port}"
    exe = [sys.executable, "-m", "rota.cli.rota_main"]
    logs = ["--log-format", args.log_format]
    home = _home_prefix()  # your own directories: -o files, mounts, jobs' submit directories
    http = f"127.0.0.1:{args.http_port}"
    # the dashboard and API, and jobs' web ports on their own origin
    ports = ["--http-listen", http, "--web-ports-listen", f"127.0.0.1:{_free_port()}"]
    scheduler = subprocess.Popen(
        [*exe, "scheduler", "--listen", listen, "--db", db_url, *ports, *home, *logs]
    )
    if not _wait_listening(scheduler, args.port):
        print(
            f"rota up: error: the scheduler exited (code {scheduler.returncode}) before it "
            "listened",
            file=sys.stderr,
        )
        return 1
    agent_cmd = [
        *exe,
        "agent",
        "--scheduler",
        listen,
        "--node",
        node,
        "--data-dir",
        str(base / f"agent-{node}"),
        *home,
        *logs,
    ]
    if args.simulate_gpus is not None:
        agent_cmd += ["--simulate-gpus", str(args.simulate_gpus)]
    if args.gpu_mode:
        agent_cmd += ["--gpu-mode", args.gpu_mode]
    env = dict(os.environ, ROTA_NODE_TOKEN=token)
    agent = subprocess.Popen(agent_cmd, env=env)
    print(
        f"rota up: scheduler on {listen} (HTTP {http}; data in {base}), agent {node}; "
        f"you ({admin}) are its admin (token in {creds}); Ctrl-C stops both",
        file=sys.stderr,
        flush=True,
    )
    if listen != DEFAULT_ADDRESS or http != DEFAULT_HTTP:  # commands look for the defaults
        print(
            f"rota up: in other shells: export ROTA_SCHEDULER={listen} ROTA_HTTP={http}",
            file=sys.stderr,
            flush=True,
        )
    procs = [agent, scheduler]

    def stop(*_: object) -> None:
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)

    asked: list[bool] = []

    def on_signal(*_: object) -> None:
        asked.append(True)
        stop()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    while all(p.poll() is None for p in procs):
        time.sleep(0.2)
    if not asked:  # one of them ended by itself: say so, and which, instead of going quiet
        which = "scheduler" if scheduler.poll() is not None else "agent"
        code = (scheduler if which == "scheduler" else agent).returncode
        print(
            f"rota up: the {which} exited (code {code}); stopping the other (jobs' containers "
            "run on: run rota up again with the same flags)",
            file=sys.stderr,
            flush=True,
        )
    stop()
    codes = [p.wait() for p in procs]
    if not asked:
        return 1
    return max(c for c in codes if c is not None) if any(codes) else 0
