"""gqueue: list jobs, SLURM squeue style (pending and running by default)."""

from __future__ import annotations

import argparse
import json
import sys


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="gqueue", description="Show rota jobs.")
    p.add_argument("-t", "--states", help="'all', or states/codes separated by commas (PD,R,CD...)")
    p.add_argument(
        "-j", "--jobs", help="job ids separated by commas (123 lists all tasks of array 123)"
    )
    p.add_argument("-u", "--user", help="only this user's jobs (commas for several)")
    p.add_argument("-A", "--account", help="only this account's jobs (commas for several)")
    p.add_argument("--json", action="store_true", help="print a JSON list of job objects")
    p.add_argument(
        "--start", action="store_true", help="show estimated start times of pending jobs"
    )
    p.add_argument(
        "--explain",
        metavar="JOBID",
        help="why a pending job waits: its priority factors, rank, reason and estimated start",
    )
    p.add_argument("--scheduler", help="scheduler address HOST:PORT")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from rota.cli.client import run_main

    if args.explain:
        from rota.cli.gqueue_explain import explain

        return run_main(lambda: explain(args.explain, args.scheduler, args.json))
    return run_main(lambda: _show(args))


def _split(text: str | None) -> list[str]:
    return [t.strip() for t in (text or "").split(",") if t.strip()]


def _show(args: argparse.Namespace) -> int:
    from rota.cli.client import CliError, connect
    from rota.cli.render import elapsed, iso, job_json, table
    from rota.states import parse_state
    from rota.v1 import rota_pb2 as pb

    request = pb.ListJobsRequest(
        ids=_split(args.jobs), users=_split(args.user), accounts=_split(args.account)
    )
    states = _split(args.states)
    if [s.lower() for s in states] == ["all"]:
        request.all_states = True
    elif states:
        try:
            request.states.extend(pb.JobState.Value(parse_state(s).value) for s in states)
        except ValueError as exc:
            raise CliError(f"-t: {exc}", 2) from None
    elif args.jobs:
        request.all_states = True  # naming a job shows it whatever its state, as squeue -j does
    jobs = []
    with connect(args.scheduler) as client:
        while True:  # the scheduler answers in pages
            page = client.call(client.jobs.ListJobs, request)
            jobs += page.jobs
            if not page.next_page_token:
                break
            request.page_token = page.next_page_token
    if args.json:
        print(json.dumps([job_json(j, pb.JobState.Name(j.state)) for j in jobs], indent=2))
        return 0
    if args.start:
        starts = [
            (j.id, j.user, j.name, j.state_code, iso(j.estimated_start) or "N/A", f"({j.reason})")
            for j in jobs
            if j.state == pb.PENDING
        ]
        print(
            table(
                ["JOBID", "USER", "NAME", "ST", "START_TIME", "(REASON)"], starts, right=["JOBID"]
            )
        )
        return 0
    rows: list[tuple[object, ...]] = []
    for j in jobs:
        where = ",".join(j.nodes) if j.state != pb.PENDING else f"({j.reason or 'None'})"
        if j.reason and j.state in (pb.CONFIGURING, pb.RUNNING):
            where += f" (WARN: {j.reason})"  # the latest warning: GPU idle or unhealthy
        elif j.reason and j.state == pb.COMPLETING:
            where += f" ({j.reason})"
        rows.append(
            (
                j.id,
                j.user,
                j.name[:20],
                j.state_code,
                elapsed(j.start_time, j.end_time),
                j.gpus,
                max(len(j.nodes), j.spec.nodes or 1),
                where,
            )
        )
    print(
        table(
            ["JOBID", "USER", "NAME", "ST", "TIME", "GPUS", "NODES", "NODELIST(REASON)"],
            rows,
            right=["JOBID", "TIME", "GPUS", "NODES"],
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
