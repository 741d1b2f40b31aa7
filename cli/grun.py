"""grun: an interactive session on allocated GPUs, like SLURM's ``srun --pty`` / ``salloc``.

It submits a job marked interactive (listed by gqueue and gacct like any other, subject to
limits, fair share and reservations), waits for it showing why it is pending, then connects
the terminal to its process through the scheduler: a real terminal with ``--pty`` (the
default when no command is given and stdin is a terminal), plain pipes otherwise. Its exit
code is the command's. Ctrl-C while pending cancels the job; without a terminal, Ctrl-C
cancels the running job too.

``grun --attach JOB`` goes back to a session's own terminal (grun's, after it detached with
``~.``, lost its scheduler for good or its terminal closed): its last output first, then the
session as it goes on; another client attached to it is detached.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

SHELL = ["/bin/sh"]
RECONNECT = 120.0  # seconds grun tries to reach a scheduler that went away (a restart)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="grun",
        description="Run an interactive session (a shell or CMD) on allocated GPUs.",
        epilog="With a terminal, at the start of a line: ~. detaches (the session runs on; "
        "grun --attach JOBID goes back), ~? lists the escapes, ~~ sends a ~.",
    )
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="CMD", help="default: a shell")
    p.add_argument("--gpus", "-G", type=int, default=0, help="GPUs (default 0)")
    p.add_argument("--gpu-type", default="", help="GPU model, e.g. A100")
    p.add_argument("--gres", default="", help="SLURM's gpu:N or gpu:TYPE:N (as --gpus, --gpu-type)")
    p.add_argument(
        "--nodes", "-N", type=int, default=1, help="1 (SLURM's -N: a session has one node)"
    )
    p.add_argument("--time", "-t", default="", help="time limit (2h, 90m, 1-00:00:00)")
    p.add_argument(
        "--image",
        default="",
        help="container image (default: ROTA_DEFAULT_IMAGE, else default_image: in the config)",
    )
    p.add_argument("--reservation", default="", help="run in this reservation")
    p.add_argument("--partition", "-p", default="", help="partition(s), a or a,b")
    p.add_argument("--account", "-A", default="", help="account to charge")
    p.add_argument("--qos", "-q", default="", help="QoS class")
    p.add_argument("--cpus", "-c", type=float, default=0, help="CPUs (default: no limit)")
    p.add_argument("--mem", default="", help="memory, e.g. 16Gi (default: no limit)")
    p.add_argument("--job-name", "-J", default="", help="job name (default: interactive)")
    p.add_argument("--mail-type", default="", help="mail, as sbatch's (END: also idle warnings)")
    p.add_argument("--mail-user", default="", help="mail to this address (default: you)")
    p.add_argument(
        "--notify", metavar="URL", default="", help="POST JSON webhooks here (ends, idle)"
    )
    p.add_argument(
        "--notify-on", metavar="LIST", default="", help="end,fail,timeout,cancel,idle (default all)"
    )
    p.add_argument(
        "--jupyter",
        action="store_true",
        help="start JupyterLab (the image must have it), forward its port, print its URL",
    )
    p.add_argument("--port", type=int, default=0, help="--jupyter: local port (default: free)")
    p.add_argument(
        "--attach",
        metavar="JOBID",
        default="",
        help="go back to the terminal of session JOBID (its last output first); submits nothing",
    )
    pty = p.add_mutually_exclusive_group()
    pty.add_argument(
        "--pty",
        action="store_true",
        default=None,
        help="give CMD a terminal (default: for the shell, or --attach, when stdin is one)",
    )
    pty.add_argument("--no-pty", dest="pty", action="store_false", help="plain pipes")
    p.add_argument(
        "--reconnect",
        type=float,
        default=RECONNECT,
        metavar="SECONDS",
        help=f"try this long to reach a scheduler that went away (default {RECONNECT:g}; 0: not)",
    )
    p.add_argument("--scheduler", help="scheduler address HOST:PORT")
    p.add_argument("--ca", help="CA certificate to verify the scheduler with (or ROTA_CA)")
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.nodes != 1:
        parser.error(f"--nodes: {args.nodes}: a session runs on one node (gsub runs gang jobs)")
    if args.gres:
        _read_gres(parser, args)
    from rota.cli.errors import run_main

    return run_main(lambda: _grun(args))


def _read_gres(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """SLURM's ``--gres=gpu[:TYPE]:N`` as ``--gpus N [--gpu-type TYPE]``; a usage error for
    other generic resources or with ``--gpus`` too."""
    from rota.sbatch_options import ScriptError, gres_gpus

    try:
        found, others = gres_gpus(args.gres)
    except ScriptError as exc:
        parser.error(str(exc))
    if others or found is None:
        parser.error(f"--gres: {args.gres!r}: rota schedules GPUs only (gpu:N or gpu:TYPE:N)")
    if args.gpus or args.gpu_type:
        parser.error("--gres: give it or --gpus/--gpu-type, not both")
    args.gpu_type, args.gpus = found


def job_fields(args: argparse.Namespace, image: str) -> dict[str, Any]:
    """The job file's fields grun's options give."""
    resources: dict[str, Any] = {"gpus": args.gpus}
    for key, value in (("gpu_type", args.gpu_type), ("cpus", args.cpus), ("memory", args.mem)):
        if value:
            resources[key] = value
    job: dict[str, Any] = {
        "name": args.job_name or "interactive",
        "image": image,
        "command": args.command or SHELL,
        "resources": resources,
    }
    for key, value in (
        ("time_limit", args.time),
        ("reservation", args.reservation),
        ("partition", args.partition),
        ("account", args.account),
        ("qos", args.qos),
        ("mail_type", args.mail_type),
        ("mail_user", args.mail_user),
    ):
        if value:
            job[key] = value
    if args.notify or args.notify_on:
        on = [w.strip() for w in args.notify_on.split(",") if w.strip()]
        job["notify"] = {"url": args.notify, "on": on}
    return job


def _grun(args: argparse.Namespace) -> int:
    import dataclasses

    from rota.cli.client import connect, current_user
    from rota.cli.errors import CliError
    from rota.cli.session import run_session, say
    from rota.cli.userconfig import ConfigError, default_image
    from rota.jobspec import SpecError, parse_job_file

    if args.command[:1] == ["--"]:
        args.command = args.command[1:]
    if args.attach:
        return _attach(args)
    try:
        image = args.image or default_image()
    except ConfigError as exc:
        raise CliError(str(exc), 2) from None
    if not image:
        raise CliError(
            "--image is required (or set ROTA_DEFAULT_IMAGE, or default_image: in "
            "~/.config/rota/config.yaml)",
            2,
        )
    use_tty = args.pty if args.pty is not None else not args.command and sys.stdin.isatty()
    try:
        spec = parse_job_file(job_fields(args, image))
    except SpecError as exc:
        raise CliError(str(exc), 2) from None
    if args.jupyter:
        from rota.cli.jupyter import jupyter_command, run_jupyter

        token, command = jupyter_command()
        spec = dataclasses.replace(spec, command=command, name=args.job_name or "jupyter")
        spec = dataclasses.replace(spec, interactive=True)
        from rota.cli.http_client import http_client

        with connect(args.scheduler, args.ca) as client:
            http = http_client(args.scheduler, args.ca)
            return run_jupyter(client, spec, token, args.port, http)
    spec = dataclasses.replace(spec, interactive=True, tty=use_tty)
    with connect(args.scheduler, args.ca) as client:
        reply = client.submit([(os.urandom(16).hex(), "session", spec)], current_user())
        job_id = reply.jobs[0].job_ids[0]
        waited: list[str] = []

        def on_wait(status: Any) -> None:
            if status.state == "PENDING" and (status.reason or not waited):
                why = f" ({status.reason})" if status.reason else ""
                say("grun", f"job {job_id} queued and waiting for resources{why}")
                waited.append(status.reason)

        started: list[bool] = []

        def on_start() -> None:
            started.append(True)
            if waited:
                say("grun", f"job {job_id} has been allocated resources")

        try:
            return run_session(
                client,
                {"job_id": job_id, "kind": "attach"},
                use_tty,
                on_wait,
                on_start,
                reconnect=max(args.reconnect, 0.0),
                prog="grun",
            )
        except KeyboardInterrupt:
            client.cancel_jobs([job_id], current_user())
            state = "running" if started else "pending"
            say("grun", f"cancelled {state} job {job_id}")
            return 130


def _attach(args: argparse.Namespace) -> int:
    """``grun --attach JOB``: the session's own terminal again (the kept output first)."""
    from rota.cli.client import connect
    from rota.cli.errors import CliError
    from rota.cli.session import run_session, say

    if args.command or args.jupyter:
        raise CliError("--attach takes a session's job id and no CMD or --jupyter", 2)
    defaults = build_parser().parse_args([])
    kept = ("attach", "pty", "reconnect", "scheduler", "ca", "command")
    given = [k for k, v in vars(args).items() if k not in kept and v != getattr(defaults, k)]
    if given:
        flags = ", ".join("--" + k.replace("_", "-") for k in given)
        raise CliError(f"--attach submits nothing: {flags} do not apply", 2)
    use_tty = args.pty if args.pty is not None else sys.stdin.isatty()
    job_id = args.attach

    def on_wait(status: Any) -> None:
        say(
            "grun",
            f"job {job_id} is {status.state}{f' ({status.reason})' if status.reason else ''}",
        )

    with connect(args.scheduler, args.ca) as client:
        try:
            return run_session(
                client,
                {"job_id": job_id, "kind": "attach", "replay": "tail"},
                use_tty,
                on_wait,
                reconnect=max(args.reconnect, 0.0),
                prog="grun",
            )
        except KeyboardInterrupt:  # pipes: the session runs on
            return 130


if __name__ == "__main__":
    sys.exit(main())
