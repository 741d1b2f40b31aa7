"""``rota``: the daemons (``rota scheduler``, ``rota agent``), a one-command local cluster
(``rota up``) and the trace simulator (``rota simulate``)."""

from __future__ import annotations

import argparse
import logging
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from rota.paths import DEFAULT_ADDRESS, DEFAULT_PORT, data_dir
from rota.settings import SettingsFileError


def _setup_logging(verbose: bool) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
        stream=sys.stderr,
    )
    logging.getLogger("apscheduler").setLevel(logging.WARNING)


def _settings_error(prog: str, config: str | None, exc: ValueError) -> int:
    """Print a settings error as one line (the file named when it is the file's fault); 2."""
    where = f"--config {config}: " if isinstance(exc, SettingsFileError) else ""
    print(f"{prog}: error: {where}{exc}", file=sys.stderr)
    return 2


def cmd_scheduler(args: argparse.Namespace) -> int:
    import asyncio

    from rota.scheduler.config import load_config
    from rota.scheduler.daemon import ListenError, serve

    try:
        config = load_config(
            Path(args.config) if args.config else None,
            listen=args.listen,
            database_url=args.db,
            policy=args.policy,
            open_registration=True if args.open_registration else None,
        )
    except ValueError as exc:
        return _settings_error("rota scheduler", args.config, exc)
    try:
        return asyncio.run(serve(config))
    except ListenError as exc:
        print(f"rota scheduler: error: {exc}", file=sys.stderr)
        return 1


def cmd_agent(args: argparse.Namespace) -> int:
    from rota.agent.config import load_agent_config
    from rota.agent.daemon import Agent

    try:
        config = load_agent_config(
            Path(args.config) if args.config else None,
            os.environ,
            node=args.node,
            scheduler=args.scheduler,
            data_dir=args.data_dir,
            token=args.token,
            token_file=args.token_file,
            address=args.address,
            simulate_gpus=args.simulate_gpus,
            gpu_mode=args.gpu_mode,
            docker_host=args.docker_host,
            network=args.network,
            labels=args.labels,
            heartbeat_interval=args.heartbeat,
        )
    except ValueError as exc:
        return _settings_error("rota agent", args.config, exc)
    try:
        agent = Agent(config)
    except Exception as exc:  # engine unreachable at start-up, bad mode: one line, exit 1
        print(f"rota agent: error: {exc}", file=sys.stderr)
        return 1
    return agent.run()


def cmd_up(args: argparse.Namespace) -> int:
    """Scheduler (SQLite) + one local agent in the foreground; Ctrl-C stops both."""
    from rota.scheduler.cluster.model import NodeState
    from rota.scheduler.core import hash_token
    from rota.scheduler.store.store import Store

    base = Path(args.data_dir) if args.data_dir else data_dir()
    base.mkdir(parents=True, exist_ok=True)
    db_url = f"sqlite:///{base / 'scheduler.db'}"
    node = args.node or socket.gethostname()
    token = secrets.token_urlsafe(24)
    store = Store(db_url)
    existing = {n.name: n for n in store.nodes()}
    record = existing.get(node, NodeState(name=node))
    record.token_hash = hash_token(token)
    store.save_node(record)
    store.close()
    listen = f"127.0.0.1:{args.port}"
    exe = [sys.executable, "-m", "rota.cli.rota_main"]
    scheduler = subprocess.Popen([*exe, "scheduler", "--listen", listen, "--db", db_url])
    agent_cmd = [
        *exe,
        "agent",
        "--scheduler",
        listen,
        "--node",
        node,
        "--data-dir",
        str(base / f"agent-{node}"),
    ]
    if args.simulate_gpus is not None:
        agent_cmd += ["--simulate-gpus", str(args.simulate_gpus)]
    if args.gpu_mode:
        agent_cmd += ["--gpu-mode", args.gpu_mode]
    env = dict(os.environ, ROTA_NODE_TOKEN=token)
    agent = subprocess.Popen(agent_cmd, env=env)
    print(
        f"rota up: scheduler on {listen} (data in {base}), agent {node}; Ctrl-C stops both",
        file=sys.stderr,
        flush=True,
    )
    procs = [agent, scheduler]

    def stop(*_: object) -> None:
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    while all(p.poll() is None for p in procs):
        time.sleep(0.2)
    stop()
    codes = [p.wait() for p in procs]
    return max(c for c in codes if c is not None) if any(codes) else 0


def cmd_simulate(argv: list[str]) -> int:
    from rota.scheduler.sim import main as sim_main

    return sim_main(argv)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="rota", description="rota cluster GPU scheduler.")
    p.add_argument("-v", "--verbose", action="store_true")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("scheduler", help="run the central scheduler daemon")
    s.add_argument("--listen", help=f"HOST:PORT to serve gRPC on (default {DEFAULT_ADDRESS})")
    s.add_argument("--db", help="SQLAlchemy URL (default: SQLite in the data directory)")
    s.add_argument("--config", help="YAML settings file")
    s.add_argument("--policy", help="scheduling policy name")
    s.add_argument(
        "--open-registration",
        action="store_true",
        help="accept agents of unregistered nodes (demos and tests only)",
    )

    a = sub.add_parser(
        "agent", help="run the node agent", description="Flags win over ROTA_* and --config."
    )
    a.add_argument("--config", help="YAML settings file (its `agent:` section or the whole file)")
    a.add_argument("--scheduler", help=f"scheduler HOST:PORT (default {DEFAULT_ADDRESS})")
    a.add_argument("--node", help="node name (default: the host name)")
    a.add_argument("--token", help="join token from `gadmin node add` (or ROTA_NODE_TOKEN)")
    a.add_argument("--token-file", help="file holding the join token")
    a.add_argument("--address", help="address peers use to reach this node (MASTER_ADDR)")
    a.add_argument("--data-dir", help="where job output is kept (default: DATA_DIR/agent-NODE)")
    a.add_argument("--simulate-gpus", type=int, metavar="N", help="pretend to have N GPUs (demos)")
    a.add_argument("--gpu-mode", choices=["auto", "nvidia", "env"], help="default: auto")
    a.add_argument(
        "--docker-host", help="Docker engine URL (default: DOCKER_HOST or the local socket)"
    )
    a.add_argument(
        "--network", help="network mode of job containers (default: the engine's default)"
    )
    a.add_argument("--labels", help="node labels k=v[,k=v]")
    a.add_argument("--heartbeat", metavar="DURATION", help="between heartbeats (default 2s)")

    u = sub.add_parser("up", help="scheduler + local agent in the foreground")
    u.add_argument("--port", type=int, default=DEFAULT_PORT)
    u.add_argument("--simulate-gpus", type=int, metavar="N")
    u.add_argument("--gpu-mode", choices=["auto", "nvidia", "env"])
    u.add_argument("--node", help="local node name (default: the host name)")
    u.add_argument("--data-dir", help="data directory (default: ~/.local/share/rota)")

    sub.add_parser(
        "simulate", help="replay a trace through the policy (see rota simulate -h)", add_help=False
    )
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["simulate"]:
        return cmd_simulate(argv[1:])
    args = build_parser().parse_args(argv)
    _setup_logging(args.verbose)
    handlers = {"scheduler": cmd_scheduler, "agent": cmd_agent, "up": cmd_up}
    return handlers[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
