"""``rota``: the daemons (``rota scheduler``, ``rota agent``), a one-command local cluster
(``rota up``, in ``rota_up``), the database's schema, first admin and TLS certificates
(``rota db``, ``rota admin-token``, ``rota certs``, in ``rota_admin``), the trace simulator
(``rota simulate``) and a job's TCP ports (``rota forward``, ``rota proxy``). This module holds
the parser and the daemons' start-up; the rest is imported only when its command runs."""

from __future__ import annotations

import argparse
import gc
import logging
import os
import socket
import sys
from pathlib import Path

from rota.cli.subcommands import name_subcommands
from rota.paths import DEFAULT_ADDRESS, DEFAULT_HTTP, DEFAULT_PORT
from rota.settings import SettingsFileError

GIL_SWITCH_INTERVAL = 0.001  # seconds (Python's default: 0.005)
GC_THRESHOLDS = (50_000, 20, 10)  # allocations per young collection, ... (Python's: 700, 10, 10)


def _setup_logging(args: argparse.Namespace) -> None:
    from rota.logformat import configure_logging

    node = (args.node or socket.gethostname()) if args.command == "agent" else ""
    configure_logging(args.verbose, getattr(args, "log_format", "text"), node)


def _settings_error(prog: str, config: str | None, exc: ValueError) -> int:
    """Print a settings error as one line (the file named when it is the file's fault); 2."""
    where = f"--config {config}: " if isinstance(exc, SettingsFileError) else ""
    print(f"{prog}: error: {where}{exc}", file=sys.stderr)
    return 2


def cmd_scheduler(args: argparse.Namespace) -> int:
    import asyncio

    from rota.scheduler.config import load_config
    from rota.scheduler.daemon import ListenError, serve
    from rota.scheduler.store.schema import SchemaError

    try:
        config = load_config(
            Path(args.config) if args.config else None,
            listen=args.listen,
            database_url=args.db,
            policy=args.policy,
            open_registration=True if args.open_registration else None,
            tls_cert=args.tls_cert,
            tls_key=args.tls_key,
            tls_client_ca=args.tls_client_ca,
            insecure=True if args.insecure else None,
            ha=True if args.ha else None,
            ha_advertise=args.ha_advertise,
            db_password_file=args.db_password_file,
            http_listen=args.http_listen,
            web_ports_listen=args.web_ports_listen,
            web_ports_domain=args.web_ports_domain,
            allowed_mounts=tuple(args.allowed_mount) if args.allowed_mount else None,
        )
        config.resolved_database_url()  # a bad password file is a usage error
    except ValueError as exc:
        return _settings_error("rota scheduler", args.config, exc)
    if args.db and "@" in args.db and ":" in args.db.split("://", 1)[-1].split("@", 1)[0]:
        logging.getLogger("rota.scheduler").warning(
            "the database password is on the command line, where `ps` shows it to every user: "
            "use --db-password-file or ROTA_DB_PASSWORD instead"
        )
    os.umask(0o077)  # the database, its journal and logs: readable by their owner only
    # the event loop answers RPCs while the core thread computes: hand the GIL over every
    # millisecond, not every 5, so a request waits less for it (docs/benchmarks.md)
    sys.setswitchinterval(GIL_SWITCH_INTERVAL)
    # Telemetry replaces each node's readings every few seconds: at Python's thresholds they
    # outlive young collections, reach the oldest generation, and every few seconds a full
    # collection scans the whole heap (~250 ms at 1,000 nodes, everything stopped). Collected
    # less often, short-lived objects are freed by their reference count before any collection
    # sees them; what was imported is set aside and never scanned.
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    try:
        return asyncio.run(serve(config))
    except (ListenError, SchemaError) as exc:
        print(f"rota scheduler: error: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # the database cannot be opened at start-up: one line, exit 1
        from rota.cli.db_errors import database_error

        line = database_error(exc)
        if line is None:
            raise
        print(f"rota scheduler: error: {line}", file=sys.stderr)
        return 1


def cmd_agent(args: argparse.Namespace) -> int:
    from rota.agent.build import build_agent
    from rota.agent.config import load_agent_config

    default_uid = default_gid = None
    if args.default_user:
        try:
            default_uid, default_gid = (int(x) for x in args.default_user.split(":"))
        except ValueError:
            print(
                f"rota agent: error: --default-user: expected UID:GID, got {args.default_user!r}",
                file=sys.stderr,
            )
            return 2
    try:
        config = load_agent_config(
            Path(args.config) if args.config else None,
            os.environ,
            node=args.node,
            scheduler=args.scheduler,
            data_dir=args.data_dir,
            token_file=args.token_file,
            address=args.address,
            simulate_gpus=args.simulate_gpus,
            gpu_mode=args.gpu_mode,
            docker_host=args.docker_host,
            network=args.network,
            labels=args.labels,
            heartbeat_interval=args.heartbeat,
            ca=args.ca or os.environ.get("ROTA_CA") or None,
            insecure=True if args.insecure else None,
            cert=args.cert,
            key=args.key,
            allowed_mounts=tuple(args.allowed_mount) if args.allowed_mount else None,
            allowed_images=tuple(args.allowed_image) if args.allowed_image else None,
            allowed_registries=tuple(args.allowed_registry) if args.allowed_registry else None,
            default_uid=default_uid,
            default_gid=default_gid,
            allow_root=True if args.allow_root else None,
            pids_limit=args.pids_limit,
            max_output=args.max_output,
            metrics_listen=args.metrics_listen,
        )
    except ValueError as exc:
        return _settings_error("rota agent", args.config, exc)
    os.umask(0o077)  # job output and the agent's data: readable by their owner only
    try:
        agent = build_agent(config)
    except Exception as exc:  # engine unreachable at start-up, bad mode: one line, exit 1
        print(f"rota agent: error: {exc}", file=sys.stderr)
        return 1
    return agent.run()


def cmd_simulate(argv: list[str]) -> int:
    from rota.scheduler.sim import main as sim_main

    return sim_main(argv)


def _log_format_option(parser: argparse.ArgumentParser) -> None:
    from rota.logformat import LOG_FORMATS

    parser.add_argument(
        "--log-format",
        choices=LOG_FORMATS,
        default="text",
        help="text lines, or one JSON object per line (time, level, logger, message, job, node)",
    )


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
    s.add_argument("--tls-cert", help="serve TLS with this PEM certificate (rota certs init)")
    s.add_argument("--tls-key", help="the private key of --tls-cert")
    s.add_argument(
        "--tls-client-ca",
        help="require client certificates signed by this CA (mutual TLS; agents present theirs)",
    )
    s.add_argument(
        "--insecure",
        action="store_true",
        help="allow a non-loopback --listen without TLS (logs a warning at every start)",
    )
    s.add_argument(
        "--db-password-file", help="file holding the database password (or ROTA_DB_PASSWORD)"
    )
    s.add_argument(
        "--ha",
        action="store_true",
        help="high availability: one leader among the schedulers on this PostgreSQL database, "
        "the others stand by and take over (docs/admin.md)",
    )
    s.add_argument(
        "--ha-advertise",
        metavar="HOST:PORT",
        help="the address clients reach this scheduler at, told by standbys (default --listen)",
    )
    s.add_argument(
        "--http-listen",
        help="HOST:PORT of the HTTP port serving /metrics (default 127.0.0.1:9718; '' = off)",
    )
    s.add_argument(
        "--web-ports-listen",
        metavar="HOST:PORT",
        help="serve jobs' web ports (Jupyter, TensorBoard) here, on their own origin, apart "
        "from the dashboard's (default: not served)",
    )
    s.add_argument(
        "--web-ports-domain",
        metavar="DOMAIN",
        help="serve each job's web ports on its own host, jID.DOMAIN (a wildcard DNS record "
        "*.DOMAIN pointing at --web-ports-listen; default: one shared origin)",
    )

    s.add_argument(
        "--allowed-mount",
        action="append",
        metavar="PREFIX",
        help="host path prefix jobs may bind-mount or write output under (repeatable; "
        "instead of allowed_mounts of --config)",
    )
    _log_format_option(s)

    a = sub.add_parser(
        "agent",
        help="run the node agent",
        description="Flags win over ROTA_* and --config.",
        allow_abbrev=False,  # `--token X` must not pass for --token-file
    )
    a.add_argument("--config", help="YAML settings file (its `agent:` section or the whole file)")
    a.add_argument(
        "--scheduler",
        help=f"scheduler HOST:PORT, or several comma-separated to fail over between (default "
        f"{DEFAULT_ADDRESS})",
    )
    a.add_argument("--node", help="node name (default: the host name)")
    a.add_argument(
        "--token-file",
        help="file (mode 0600) holding the join token from `gadmin node add` "
        "(or ROTA_NODE_TOKEN; never on the command line, where ps shows it)",
    )
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
    _log_format_option(a)
    a.add_argument("--ca", help="CA certificate to verify the scheduler with (or ROTA_CA)")
    a.add_argument("--cert", help="this node's client certificate (mutual TLS)")
    a.add_argument("--key", help="the private key of --cert")
    a.add_argument(
        "--allowed-mount",
        action="append",
        metavar="PREFIX",
        help="host path prefix jobs may bind-mount (repeatable; none: no bind mounts)",
    )
    a.add_argument(
        "--allowed-image", action="append", metavar="PATTERN", help="image pattern (repeatable)"
    )
    a.add_argument(
        "--allowed-registry",
        action="append",
        metavar="HOST",
        help="registry images may come from (repeatable; * = any; default docker.io, nvcr.io, "
        "ghcr.io)",
    )
    a.add_argument(
        "--default-user",
        metavar="UID:GID",
        help="who jobs run as when the job's user has no passwd entry here (default 65534:65534)",
    )
    a.add_argument(
        "--allow-root", action="store_true", help="let jobs of root run as root (never by default)"
    )
    a.add_argument("--pids-limit", type=int, help="processes per job container (default 4096)")
    a.add_argument(
        "--insecure",
        action="store_true",
        help="dial a scheduler off this machine without TLS (its join token then crosses the "
        "network in plaintext)",
    )
    a.add_argument(
        "--max-output",
        metavar="SIZE",
        help="output kept per job attempt in its log and in each -o/-e file; the rest is "
        "dropped after a marker line (default 1GiB)",
    )
    a.add_argument(
        "--metrics-listen",
        metavar="HOST:PORT",
        help="serve Prometheus /metrics here (default: off; loopback unless metrics_insecure)",
    )

    c = sub.add_parser("certs", help="TLS certificates for the scheduler and agents")
    c_sub = c.add_subparsers(dest="certs_command", required=True)
    ci = c_sub.add_parser(
        "init", help="create a CA, the scheduler's certificate and client certificates"
    )
    ci.add_argument("--dir", help="output directory (default: the config directory's tls/)")
    ci.add_argument(
        "--scheduler-name",
        action="append",
        default=[],
        metavar="HOST",
        help="a name or address clients use for the scheduler (repeatable)",
    )
    ci.add_argument("--node", action="append", default=[], metavar="NAME", help="node certificate")
    ci.add_argument("--user", action="append", default=[], metavar="NAME", help="user certificate")

    u = sub.add_parser("up", help="scheduler + local agent in the foreground")
    u.add_argument("--port", type=int, default=DEFAULT_PORT, help="gRPC port (default: 9717)")
    u.add_argument(
        "--http-port",
        type=int,
        default=int(DEFAULT_HTTP.rsplit(":", 1)[1]),
        help="HTTP port: dashboard, JSON API, forwards (default: 9718)",
    )
    u.add_argument("--simulate-gpus", type=int, metavar="N")
    u.add_argument("--gpu-mode", choices=["auto", "nvidia", "env"])
    u.add_argument("--node", help="local node name (default: the host name)")
    u.add_argument("--data-dir", help="data directory (default: ~/.local/share/rota)")
    _log_format_option(u)

    t = sub.add_parser(
        "admin-token",
        help="on the scheduler host: make a user an admin and print a new token for them",
    )
    t.add_argument("name", nargs="?", help="user name (default: you)")
    t.add_argument("--db", help="the scheduler's SQLAlchemy URL (default: as rota scheduler)")
    t.add_argument("--config", help="the scheduler's YAML settings file")
    t.add_argument("--db-password-file", help="file holding the database password")
    t.add_argument(
        "--install",
        action="store_true",
        help="write the token to your ~/.config/rota/credentials instead of printing it",
    )

    d = sub.add_parser("db", help="the database's schema revision: upgrade, current, downgrade")
    d_sub = d.add_subparsers(dest="db_command", required=True)
    d_up = d_sub.add_parser("upgrade", help="migrate the database (default: to this rota's head)")
    d_up.add_argument("revision", nargs="?", default="head", help="target revision")
    d_cur = d_sub.add_parser("current", help="print the database's revision and this rota's head")
    d_down = d_sub.add_parser("downgrade", help="migrate the database down to REV")
    d_down.add_argument("revision", help="target revision, -N (N steps down), or base")
    d_down.add_argument(
        "--drop-all",
        action="store_true",
        help="allow going below the baseline revision, which drops every table and its data",
    )
    for cmd in (d_up, d_cur, d_down):
        cmd.add_argument("--db", help="the scheduler's SQLAlchemy URL (default: as rota scheduler)")
        cmd.add_argument("--config", help="the scheduler's YAML settings file")
        cmd.add_argument("--db-password-file", help="file holding the database password")

    c = sub.add_parser("completion", help="print a shell completion script (bash or zsh)")
    c.add_argument("shell", choices=["bash", "zsh"])

    sub.add_parser(
        "simulate", help="replay a trace through the policy (see rota simulate -h)", add_help=False
    )
    sub.add_parser("forward", help="forward a TCP port of a job's container", add_help=False)
    sub.add_parser("proxy", help="relay stdio to a TCP port of a job's container", add_help=False)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["simulate"]:
        return cmd_simulate(argv[1:])
    if argv[:1] in (["forward"], ["proxy"]):
        from rota.cli.forward import main as forward_main

        return forward_main(argv)
    args = name_subcommands(build_parser()).parse_args(argv)
    if args.command == "completion":
        from rota.cli.completion import script

        print(script(args.shell))
        return 0
    _setup_logging(args)
    if args.command == "scheduler":
        return cmd_scheduler(args)
    if args.command == "agent":
        return cmd_agent(args)
    if args.command == "up":
        from rota.cli.rota_up import cmd_up

        return cmd_up(args)
    from rota.cli import rota_admin

    handlers = {
        "certs": rota_admin.cmd_certs,
        "admin-token": rota_admin.cmd_admin_token,
        "db": rota_admin.cmd_db,
    }
    return handlers[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
