"""gsub: submit job files. All files are valid and submitted, or none is (exit 2)."""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from dataclasses import replace
from pathlib import Path


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="gsub", description="Submit rota job files (YAML).")
    p.add_argument("files", nargs="+", metavar="JOB.yaml", help="job files; - reads standard input")
    p.add_argument("--parsable", action="store_true", help="print only the job ids, one per line")
    p.add_argument(
        "--hold", action="store_true", help="submit held (release with gcontrol release)"
    )
    p.add_argument("-d", "--dependency", help="SLURM dependency, e.g. afterok:12:13")
    p.add_argument("--test-only", action="store_true", help="validate and say when it would start")
    p.add_argument("--scheduler", help="scheduler address HOST:PORT")
    p.add_argument("--ca", help="CA certificate to verify the scheduler with (or ROTA_CA)")
    return p


def load_specs(files: list[str]) -> list[tuple[str, object]]:
    """Read and validate every file; raise CliError(code 2) naming the file and field."""
    import yaml

    from rota.cli.client import CliError
    from rota.jobspec import SpecError, parse_job_file

    specs = []
    for name in files:
        try:
            text = sys.stdin.read() if name == "-" else Path(name).read_text()
        except OSError as exc:
            raise CliError(f"{name}: cannot read: {exc.strerror}", 2) from None
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise CliError(f"{name}: invalid YAML: {' '.join(str(exc).split())}", 2) from None
        try:
            specs.append((name, parse_job_file(data)))
        except SpecError as exc:
            raise CliError(f"{name}: {exc}", 2) from None
    return specs


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from rota.cli.client import run_main

    return run_main(lambda: _submit(args))


def _submit(args: argparse.Namespace) -> int:
    import grpc

    from rota.cli.client import CliError, connect, current_user
    from rota.jobspec import JobSpec, parse_dependency
    from rota.v1 import rota_pb2 as pb
    from rota.wire import spec_to_pb

    if args.dependency:
        try:
            parse_dependency(args.dependency)
        except ValueError as exc:
            raise CliError(f"--dependency: {exc}", 2) from None
    items = []
    for name, spec in load_specs(args.files):
        assert isinstance(spec, JobSpec)
        if args.hold:
            spec = replace(spec, hold=True)
        if args.dependency:
            spec = replace(spec, dependency=args.dependency)
        items.append(
            pb.SubmitItem(client_request_id=uuid.uuid4().hex, spec=spec_to_pb(spec), source=name)
        )
    request = pb.SubmitJobsRequest(items=items, user=current_user(), test_only=args.test_only)
    with connect(args.scheduler, args.ca) as client:
        # Retried with the same request ids: the scheduler returns the stored ids, never duplicates.
        for attempt in range(5):
            try:
                response = client.jobs.SubmitJobs(request, timeout=30)
                break
            except grpc.RpcError as exc:
                error = client.translate(exc)
                retryable = exc.code() in (
                    grpc.StatusCode.UNAVAILABLE,
                    grpc.StatusCode.DEADLINE_EXCEEDED,
                )
                if not retryable or attempt == 4:
                    raise error from None
                time.sleep(0.2 * 2**attempt)
    for job in response.jobs:
        if args.test_only:
            print(f"Job would {'start now' if not job.reason else 'wait: ' + job.reason}")
            continue
        ids = list(job.job_ids)
        if ids and "_" in ids[0]:  # an array: its tasks are ARRAYID_TASK
            ids = [ids[0].split("_", 1)[0]]
        for job_id in ids:
            print(job_id if args.parsable else f"Submitted job {job_id}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
