"""gcontrol: per-job actions (hold, release, requeue) and ``show job ID`` with its history."""

from __future__ import annotations

import argparse
import sys

from rota.cli.subcommands import name_subcommands


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="gcontrol", description="Act on rota jobs.")
    p.add_argument("--scheduler", help="scheduler address HOST:PORT")
    p.add_argument("--ca", help="CA certificate to verify the scheduler with (or ROTA_CA)")
    sub = p.add_subparsers(dest="action", required=True)
    for action, text in (
        ("hold", "keep pending jobs from starting"),
        ("release", "let held jobs start"),
        ("requeue", "stop a running job and queue it again (or queue an ended job again)"),
    ):
        sub.add_parser(action, help=text).add_argument("ids", nargs="+", metavar="JOBID")
    show = sub.add_parser("show", help="show a record: gcontrol show job ID")
    show.add_argument("kind", choices=["job"])
    show.add_argument("id", metavar="JOBID")
    return p


def main(argv: list[str] | None = None) -> int:
    args = name_subcommands(build_parser()).parse_args(argv)
    from rota.cli.errors import run_main

    return run_main(lambda: _show(args) if args.action == "show" else _act(args))


def _act(args: argparse.Namespace) -> int:
    from rota.cli.client import connect, current_user

    with connect(args.scheduler, args.ca) as client:
        results = client.control_jobs(args.action, args.ids, current_user())
    failed = [r for r in results if not r.ok]
    for r in failed:
        print(f"gcontrol: error: {r.message}", file=sys.stderr)
    return 1 if failed else 0


def _show(args: argparse.Namespace) -> int:
    from rota.cli.client import connect, state_of
    from rota.jobview import iso
    from rota.units import format_duration, format_size

    with connect(args.scheduler, args.ca) as client:
        job = client.get_job(args.id)
    spec = job.spec
    fields = [
        ("JobId", job.id),
        ("JobName", job.name),
        ("UserId", job.user),
        ("Account", job.account),
        ("JobState", state_of(job).value),
        ("Reason", job.reason or "None"),
        ("ExitCode", job.exit_code if job.has_exit_code else "-"),
        ("Attempt", job.attempt),
        ("Image", spec.image),
        ("Command", " ".join(spec.command)),
        ("Gpus", f"{job.gpus} per node x {spec.nodes or 1} node(s)"),
        ("NodeList", ",".join(job.nodes) or "-"),
        (
            "GpuIds",
            " ".join(f"{n}:{','.join(map(str, g.indices))}" for n, g in job.gpu_ids.items()) or "-",
        ),
        ("Cpus", spec.resources.cpus or "-"),
        ("Memory", format_size(spec.resources.memory) if spec.resources.memory else "-"),
        ("TimeLimit", format_duration(job.time_limit)),
        ("SubmitTime", iso(job.submit_time)),
        ("StartTime", iso(job.start_time) or "-"),
        ("EndTime", iso(job.end_time) or "-"),
        ("Dependency", spec.dependency or "-"),
        ("ReqNodeList", spec.nodelist or "(null)"),
        ("ExcNodeList", spec.exclude or "(null)"),
        ("Features", spec.constraint or "(null)"),
        ("MailType", ",".join(spec.mail_type) or "NONE"),
        ("MailUser", spec.mail_user or ("(the job's user)" if spec.mail_type else "-")),
    ]
    width = max(len(k) for k, _ in fields)
    for key, value in fields:
        print(f"{key.rjust(width)}: {value}")
    print("Events:")
    for ev in job.events:
        change = (
            f"{ev.old_state or '-'} -> {ev.new_state}" if ev.kind == "state" else ev.kind.upper()
        )
        print(f"  {iso(ev.time)}  attempt {ev.attempt}  {change}  {ev.reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
