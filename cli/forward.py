"""``rota forward JOB [LOCAL:]REMOTE`` and ``rota proxy JOB PORT``: a TCP port of a job's
container reached through the scheduler, with the user's token (owner or admin only).

``forward`` listens on 127.0.0.1:LOCAL (default: REMOTE; 0 picks a free port) and opens one
session per connection; ``proxy`` relays stdin and stdout, for ``ssh -o ProxyCommand="rota
proxy %h 22"``. The job's image needs ``nc`` (busybox has it): containers may have no network,
so the agent reaches the port from inside the container.
"""

from __future__ import annotations

import argparse
import contextlib
import socket
import sys
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rota.cli.client import Client


def build_parser(command: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=f"rota {command}")
    p.add_argument("id", metavar="JOBID")
    if command == "forward":
        p.description = "Forward a TCP port of a job's container to this machine."
        p.add_argument("ports", metavar="[LOCAL:]REMOTE")
    else:
        p.description = "Relay stdin and stdout to a TCP port of a job's container."
        p.add_argument("port", type=int, metavar="PORT")
    p.add_argument("--node", "-w", default="", help="a gang job's node (default: rank 0's)")
    p.add_argument("--scheduler", help="scheduler address HOST:PORT")
    p.add_argument("--ca", help="CA certificate to verify the scheduler with (or ROTA_CA)")
    return p


def parse_ports(text: str) -> tuple[int, int]:
    """``[LOCAL:]REMOTE`` -> (local, remote); ValueError naming what is wrong."""
    local, _, remote = text.rpartition(":")
    try:
        ports = (int(local) if local else int(remote), int(remote))
    except ValueError:
        raise ValueError(
            f"{text!r}: expected [LOCAL:]REMOTE port numbers, e.g. 8888:8888"
        ) from None
    if not 0 <= ports[0] <= 65535 or not 1 <= ports[1] <= 65535:
        raise ValueError(f"{text!r}: ports are 1 to 65535 (LOCAL 0: any free port)")
    return ports


def main(argv: list[str]) -> int:
    """``argv``: ["forward" | "proxy", ...]."""
    command, rest = argv[0], argv[1:]
    args = build_parser(command).parse_args(rest)
    from rota.cli.errors import die, run_main

    if command == "proxy":
        return run_main(lambda: _proxy(args))
    try:
        local, remote = parse_ports(args.ports)
    except ValueError as exc:
        die(str(exc), 2)
    return run_main(lambda: _forward(args, local, remote))


def _opening(args: argparse.Namespace, port: int) -> dict[str, object]:
    return {"job_id": args.id, "kind": "forward", "port": port, "node": args.node}


def _proxy(args: argparse.Namespace) -> int:
    from rota.cli.client import connect
    from rota.cli.session import run_session

    with connect(args.scheduler, args.ca) as client:
        run_session(client, _opening(args, args.port), False)
    return 0


def _forward(args: argparse.Namespace, local: int, remote: int) -> int:
    from rota.cli.client import connect
    from rota.cli.errors import CliError

    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind(("127.0.0.1", local))
    except OSError as exc:
        raise CliError(f"cannot listen on 127.0.0.1:{local}: {exc.strerror}", 1) from None
    listener.listen(16)
    bound = listener.getsockname()[1]
    with connect(args.scheduler, args.ca) as client:
        client.get_job(args.id)  # an unknown job fails here, not at the first connection
        print(
            f"Forwarding 127.0.0.1:{bound} -> job {args.id} port {remote} (Ctrl-C to stop)",
            flush=True,
        )
        serve_connections(client, listener, _opening(args, remote))
    return 0


def serve_connections(client: Client, listener: socket.socket, opening: dict[str, object]) -> None:
    """Accept connections for ever, each a forward session of its own."""
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=_serve, args=(client, conn, opening), daemon=True).start()


def _serve(client: Client, conn: socket.socket, opening: dict[str, object]) -> None:
    """One forwarded connection: a session of its own until either side ends."""
    from rota.cli.errors import CliError
    from rota.cli.session import run_session

    with conn:
        try:
            run_session(client, opening, False, stdin_fd=conn.fileno(), stdout_fd=conn.fileno())
        except CliError as exc:
            print(f"rota forward: {exc}", file=sys.stderr, flush=True)
        finally:  # a close alone would wait for the input thread's read: end both ways now
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
