"""gsub: submit job files or ``#SBATCH`` batch scripts. All files are valid and submitted, or
none is (exit 2). ``--dry-run`` prints the job files it would submit; ``--wait`` follows the jobs
to their end and exits with their exit code."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rota.jobspec import JobSpec


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="gsub", description="Submit rota job files (YAML) or #SBATCH batch scripts."
    )
    p.add_argument(
        "files",
        nargs="+",
        metavar="JOB.yaml|SCRIPT.sh",
        help="job files or batch scripts (#SBATCH, #ROTA image=...); - reads standard input",
    )
    p.add_argument("--parsable", action="store_true", help="print only the job ids, one per line")
    p.add_argument(
        "--hold", action="store_true", help="submit held (release with gcontrol release)"
    )
    p.add_argument("-d", "--dependency", help="SLURM dependency, e.g. afterok:12:13")
    p.add_argument(
        "--reservation", help="run in this reservation (greserve list); overrides the file's"
    )
    p.add_argument("--test-only", action="store_true", help="validate and say when it would start")
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print the job file(s) it would submit (YAML) and submit nothing",
    )
    p.add_argument(
        "--wait",
        action="store_true",
        help="follow the jobs until they end; exit with their (highest) exit code",
    )
    p.add_argument(
        "-o",
        "--output",
        metavar="PATTERN",
        help="also write the job's output to this file on the node, like sbatch "
        "(%%j id, %%A array id, %%a task, %%x name, %%u user, %%N node; relative to here)",
    )
    p.add_argument(
        "-e", "--error", metavar="PATTERN", help="write standard error to this file instead"
    )
    p.add_argument("--notify", metavar="URL", help="POST a JSON webhook here when the job ends")
    p.add_argument(
        "--notify-on",
        metavar="LIST",
        help="which ends post: end,fail,timeout,cancel (default all)",
    )
    p.add_argument("--scheduler", help="scheduler address HOST:PORT")
    p.add_argument("--ca", help="CA certificate to verify the scheduler with (or ROTA_CA)")
    return p


@dataclass
class Loaded:
    """One validated input: its name, the job-file mapping (as written) and the spec."""

    name: str
    job: dict[str, Any]
    spec: JobSpec


def load_jobs(
    files: list[str], hold: bool = False, dependency: str = "", **flags: Any
) -> list[Loaded]:
    """Read, translate (batch scripts) and validate every file, applying ``--hold``,
    ``--dependency`` and the job-file fields of ``flags`` (``output``, ``error``, ``notify``,
    ``reservation``); raise CliError(code 2) naming the file and the field or directive. Relative
    output patterns are made absolute from the current directory (as sbatch does), which is also
    sent as the spec's ``submit_dir`` (``SLURM_SUBMIT_DIR``)."""
    import yaml

    from rota.cli.errors import CliError
    from rota.cli.sbatch import BatchJob, ScriptError, is_batch_script, translate
    from rota.cli.userconfig import ConfigError, default_image
    from rota.jobspec import SpecError, parse_job_file
    from rota.yamlload import load as load_yaml

    loaded = []
    submit_dir, submit_host = _submitted_from()
    for name in files:
        try:
            text = sys.stdin.read() if name == "-" else Path(name).read_text()
        except OSError as exc:
            raise CliError(f"{name}: cannot read: {exc.strerror}", 2) from None
        batch: BatchJob | None = None
        if is_batch_script(name, text):
            try:
                batch = translate(text, default_image(), os.environ)
            except (ScriptError, ConfigError) as exc:
                raise CliError(f"{name}: {exc}", 2) from None
            data: Any = batch.job
        else:
            try:
                data = load_yaml(text)  # refuses an alias bomb before building it
            except yaml.YAMLError as exc:
                raise CliError(f"{name}: invalid YAML: {' '.join(str(exc).split())}", 2) from None
        if isinstance(data, dict):
            if hold:
                data["hold"] = True
            if dependency:
                data["dependency"] = dependency
            data.update({k: v for k, v in flags.items() if v})
        try:
            spec = parse_job_file(_absolute_outputs(data))
        except SpecError as exc:
            directive = batch.directive_for(exc.field) if batch else None
            where = f" (from {directive})" if directive else ""
            raise CliError(f"{name}: {exc}{where}", 2) from None
        spec = dataclasses.replace(spec, submit_dir=submit_dir, submit_host=submit_host)
        loaded.append(Loaded(name, data, spec))
    return loaded


def _submitted_from() -> tuple[str, str]:
    """Where gsub runs: the current directory and this host's name (``submit_dir``,
    ``submit_host``), each empty when it cannot be told or would not pass the scheduler's check."""
    import socket

    from rota.validate import HOST_NAME

    try:
        here = os.getcwd()
    except OSError:  # the directory was removed under us
        here = ""
    host = socket.gethostname()
    return here, host if HOST_NAME.match(host) else ""


def _absolute_outputs(data: Any) -> Any:
    """The job file with relative ``output``/``error`` patterns made absolute from here."""
    if not isinstance(data, dict):
        return data
    out = dict(data)
    for key in ("output", "error"):
        if isinstance(out.get(key), str) and out[key] and not out[key].startswith("/"):
            out[key] = os.path.join(os.getcwd(), out[key])
    return out


def _flags(args: argparse.Namespace) -> dict[str, Any]:
    """Job-file fields given as flags (they override the files')."""
    notify: Any = None
    if args.notify or args.notify_on:
        notify = {"url": args.notify or "", "on": (args.notify_on or "").split(",")}
        notify["on"] = [w.strip() for w in notify["on"] if w.strip()]
    return {
        "output": args.output,
        "error": args.error,
        "notify": notify,
        "reservation": args.reservation,
    }


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from rota.cli.errors import run_main

    return run_main(lambda: _dry_run(args) if args.dry_run else _submit(args))


def _dry_run(args: argparse.Namespace) -> int:
    from rota.cli.sbatch import dump_job

    jobs = load_jobs(args.files, args.hold, _checked_dependency(args.dependency), **_flags(args))
    print("---\n".join(dump_job(job.job) for job in jobs), end="")
    return 0


def _checked_dependency(text: str | None) -> str:
    from rota.cli.errors import CliError
    from rota.jobspec import parse_dependency

    if text:
        try:
            parse_dependency(text)
        except ValueError as exc:
            raise CliError(f"--dependency: {exc}", 2) from None
    return text or ""


def _submit(args: argparse.Namespace) -> int:
    from rota.cli.client import connect, current_user

    jobs = load_jobs(args.files, args.hold, _checked_dependency(args.dependency), **_flags(args))
    with connect(args.scheduler, args.ca) as client:
        response = client.submit(
            [(j.name, j.spec) for j in jobs], current_user(), test_only=args.test_only
        )
    submitted: list[str] = []
    for job in response.jobs:
        if args.test_only:
            print(f"Job would {'start now' if not job.reason else 'wait: ' + job.reason}")
            continue
        ids = list(job.job_ids)
        if ids and "_" in ids[0]:  # an array: its tasks are ARRAYID_TASK
            ids = [ids[0].split("_", 1)[0]]
        for job_id in ids:
            print(job_id if args.parsable else f"Submitted job {job_id}", flush=True)
        submitted += ids
    if args.wait and not args.test_only:
        from rota.cli.wait import follow

        with connect(args.scheduler, args.ca) as client:
            return follow(lambda: client.job_dicts(submitted), sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
