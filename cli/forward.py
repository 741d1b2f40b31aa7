"""``rota forward JOB [LOCAL:]REMOTE`` and ``rota proxy JOB PORT``: a TCP port of a job's
container reached through the scheduler, with the user's token (owner or admin only).

``forward`` listens on 127.0.0.1:LOCAL (default: REMOTE; 0 picks a free port) and opens one
forward per connection; ``proxy`` relays stdin and stdout, for ``ssh -o ProxyCommand="rota
proxy %h 22"``. Each forward is first asked of the scheduler's HTTP port (``Target.http``) as a
raw byte stream (``Upgrade: rota-tcp``, docs/interactive.md); when that port is unknown or does
not answer, it is an interactive session over gRPC. The agent reaches the port from inside the
container's network namespace (containers may have no network); an agent that may not enter
it runs the image's ``nc`` instead (busybox has it).
"""

from __future__ import annotations

import argparse
import contextlib
import socket
import sys
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rota.cli.client import Client
    from rota.cli.http_client import HttpClient


def build_parser(command: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=f"rota {command}")
    p.add_argument("id", metavar="JOBID", help="a running job (yours, or any as an admin)")
    if command == "forward":
        p.description = "Forward a TCP port of a job's container to this machine."
        p.add_argument(
            "ports",
            metavar="[LOCAL:]REMOTE",
            help="the container's port REMOTE on 127.0.0.1:LOCAL (default: the same number; "
            "0: any free port)",
        )
    else:
        p.description = (
            "Relay stdin and stdout to a TCP port of a job's container (an ssh ProxyCommand: "
            "rota proxy %h 22)."
        )
        p.add_argument("port", type=int, metavar="PORT", help="the container's TCP port")
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


def _raw(http: HttpClient | None, opening: dict[str, object]) -> tuple[Any, bytes] | None:
    """The forward ``opening`` as a raw connection through the HTTP port and the bytes
    already received from it, or None (use gRPC); CliError for a refusal."""
    if http is None:
        return None
    from urllib.parse import quote

    path = f"/api/v1/jobs/{quote(str(opening['job_id']), safe='')}/forward/{opening['port']}"
    if opening.get("node"):
        path += f"?node={quote(str(opening['node']), safe='')}"
    return http.upgrade(path, "rota-tcp")


def _proxy(args: argparse.Namespace) -> int:
    from rota.cli.client import connect
    from rota.cli.http_client import http_client
    from rota.cli.session import run_session

    raw = _raw(http_client(args.scheduler, args.ca), _opening(args, args.port))
    if raw is not None:
        from rota.bytepipe import nodelay, pump

        sock, early = raw
        nodelay(sock)
        # stdin's end is passed on as a half-close (not over TLS); either way the proxy ends
        # when the port's side does
        threading.Thread(target=pump, args=(sys.stdin.fileno(), sock), daemon=True).start()
        pump(sock, sys.stdout.fileno(), early)
        return 0
    with connect(args.scheduler, args.ca) as client:
        run_session(client, _opening(args, args.port), False)
    return 0


def _forward(args: argparse.Namespace, local: int, remote: int) -> int:
    from rota.cli.client import connect, state_of
    from rota.cli.errors import CliError
    from rota.cli.http_client import http_client

    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind(("127.0.0.1", local))
    except OSError as exc:
        raise CliError(f"cannot listen on 127.0.0.1:{local}: {exc.strerror}", 1) from None
    listener.listen(16)
    bound = listener.getsockname()[1]
    with connect(args.scheduler, args.ca) as client:
        # an unknown or ended job fails here, not at the first connection
        state = state_of(client.get_job(args.id))
        if state.terminal:
            raise CliError(f"job {args.id} is {state.value}, not running", 1)
        print(
            f"Forwarding 127.0.0.1:{bound} -> job {args.id} port {remote} (Ctrl-C to stop)",
            flush=True,
        )
        http = http_client(args.scheduler, args.ca)
        serve_connections(client, listener, _opening(args, remote), http)
    return 0


def serve_connections(
    client: Client,
    listener: socket.socket,
    opening: dict[str, object],
    http: HttpClient | None = None,
) -> None:
    """Accept connections for ever, each a forward of its own (through ``http`` when it
    answers, else a gRPC session)."""
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=_serve, args=(client, conn, opening, http), daemon=True).start()


def _serve(
    client: Client, conn: socket.socket, opening: dict[str, object], http: HttpClient | None
) -> None:
    """One forwarded connection: a raw connection or a session of its own until either side
    ends."""
    from rota.cli.errors import CliError
    from rota.cli.session import run_session

    with conn:
        try:
            raw = _raw(http, opening)
            if raw is not None:
                from rota.bytepipe import relay

                relay(conn, raw[0], b"", raw[1])
                return
            run_session(client, opening, False, stdin_fd=conn.fileno(), stdout_fd=conn.fileno())
        except CliError as exc:
            print(f"rota forward: {exc}", file=sys.stderr, flush=True)
        finally:  # a close alone would wait for the input thread's read: end both ways now
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
