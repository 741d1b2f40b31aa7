"""gsub: submit job files or ``#SBATCH`` batch scripts. All files are valid and submitted, or
none is (exit 2). Like sbatch, it takes sbatch options before the script (they win over its
``#SBATCH`` lines), arguments after it, or ``--wrap CMD``; options rota accepts without carrying
them out print one warning each (``--strict`` refuses them). ``--dry-run`` prints the job files
it would submit; ``--wait`` follows the jobs to their end and exits with their exit code."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from typing import TYPE_CHECKING, Any, NoReturn

from rota.cli.gsub_argv import Sources, split_argv

if TYPE_CHECKING:
    from rota.jobspec import JobSpec
    from rota.sbatch import BatchJob


def build_parser() -> argparse.ArgumentParser:
    from rota.cli.style import help_formatter

    p = argparse.ArgumentParser(
        prog="gsub",
        formatter_class=help_formatter,
        usage="gsub [OPTIONS] [SBATCH OPTIONS] (JOB.yaml... | SCRIPT [ARGS...] | --wrap CMD)",
        description="Submit rota job files (YAML) or #SBATCH batch scripts. Any sbatch option "
        "may come before a script (it wins over the script's #SBATCH lines); words after the "
        "script are its arguments.",
    )
    p.add_argument(
        "files",
        nargs="*",
        metavar="JOB.yaml|SCRIPT.sh",
        help="job files, or a batch script (#SBATCH, #ROTA image=...) and its arguments; "
        "- reads standard input",
    )
    p.add_argument("--wrap", metavar="CMD", help="submit the script '#!/bin/sh\\nCMD'")
    p.add_argument(
        "--strict",
        action="store_true",
        help="refuse sbatch options rota accepts but does not carry out (instead of warning)",
    )
    p.add_argument("--parsable", action="store_true", help="print only the job ids, one per line")
    p.add_argument(
        "-H", "--hold", action="store_true", help="submit held (release with gcontrol release)"
    )
    p.add_argument("-d", "--dependency", help="SLURM dependency, e.g. afterok:12:13")
    p.add_argument(
        "--reservation", help="run in this reservation (greserve list); overrides the file's"
    )
    p.add_argument(
        "-p",
        "--partition",
        help="run in this partition, or in any of a list (a,b; ginfo lists them); overrides "
        "the file's and the script's",
    )
    p.add_argument("--test-only", action="store_true", help="validate and say when it would start")
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print the job file(s) it would submit (YAML) and submit nothing",
    )
    p.add_argument(
        "-W",
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
    p.add_argument(
        "--open-mode",
        choices=("append", "truncate"),
        help="keep what the output files hold (append) or empty them (truncate) when an "
        "attempt starts; default: the scheduler's job_file_append",
    )
    p.add_argument("--notify", metavar="URL", help="POST a JSON webhook here when the job ends")
    p.add_argument(
        "--notify-on",
        metavar="LIST",
        help="which ends post: end,fail,timeout,cancel,idle (default all)",
    )
    p.add_argument("--scheduler", help="scheduler address HOST:PORT")
    p.add_argument("--ca", help="CA certificate to verify the scheduler with (or ROTA_CA)")
    return p


class Loaded:
    """One validated input: its name, the job-file mapping (as written) and the spec. (Plain
    classes here, not dataclasses: making one costs gsub ~3.6 M instructions at start.)"""

    __slots__ = ("job", "name", "spec")

    def __init__(self, name: str, job: dict[str, Any], spec: JobSpec) -> None:
        self.name = name
        self.job = job
        self.spec = spec


def load_jobs(
    files: list[str],
    hold: bool = False,
    dependency: str = "",
    *,
    script: Script | None = None,
    **flags: Any,
) -> list[Loaded]:
    """Read, translate (batch scripts) and validate every file, applying ``--hold``,
    ``--dependency`` and the job-file fields of ``flags`` (``output``, ``error``, ``notify``,
    ``reservation``); raise CliError(code 2) naming the file and the field or directive (every
    directive a script cannot use, one per line). ``script`` holds the sbatch options, script
    arguments and ``--wrap`` of the command line. Warnings go to standard error. Relative output
    patterns are made absolute from the current directory (as sbatch does), which is also sent as
    the spec's ``submit_dir`` (``SLURM_SUBMIT_DIR``)."""
    from rota.sbatch import is_batch_script, wrap_script

    script = script or Script()
    names = [*files, "--wrap"] if script.wrap is not None else files
    loaded = []
    submitted_from = _submitted_from()
    for name in names:
        text = wrap_script(script.wrap or "") if name == "--wrap" else script.sources.read(name)
        batch: BatchJob | None = None
        if name == "--wrap" or is_batch_script(name, text):
            batch = _translate(name, text, script)
            data: Any = batch.job
        else:
            data = _job_file(name, text, script)
        if isinstance(data, dict):
            if hold:
                data["hold"] = True
            if dependency:
                data["dependency"] = dependency
            data.update({k: v for k, v in flags.items() if v})
        spec = _spec(name, data, batch)
        submit_dir, submit_host = submitted_from
        spec = dataclasses.replace(spec, submit_dir=submit_dir, submit_host=submit_host)
        loaded.append(Loaded(name, data, spec))
    return loaded


def _submitted_from() -> tuple[str, str]:
    """Where gsub runs: the current directory and this host's name (``submit_dir``,
    ``submit_host``), each empty when it cannot be told or would not pass the scheduler's check."""
    from rota.validate import HOST_NAME

    try:
        here = os.getcwd()
    except OSError:  # the directory was removed under us
        here = ""
    host = os.uname().nodename  # gethostname(), without importing socket
    return here, host if HOST_NAME.match(host) else ""


class Script:
    """What the command line says about the batch script: sbatch options (they win over the
    script's), its arguments, ``--wrap CMD`` and ``--strict``."""

    __slots__ = ("args", "options", "sources", "strict", "wrap")

    def __init__(
        self,
        options: list[str] | None = None,
        args: list[str] | None = None,
        wrap: str | None = None,
        strict: bool = False,
        sources: Sources | None = None,
    ) -> None:
        self.options = options if options is not None else []
        self.args = args if args is not None else []
        self.wrap = wrap
        self.strict = strict
        self.sources = sources if sources is not None else Sources()


def _translate(name: str, text: str, script: Script) -> BatchJob:
    from rota.cli.errors import CliError
    from rota.cli.userconfig import ConfigError, default_image
    from rota.sbatch import ScriptError, read_script

    try:
        batch = read_script(
            name,
            text,
            default_image(),
            os.environ,
            os.getcwd(),
            options=script.options,
            args=script.args,
            strict=script.strict,
        )
    except (ScriptError, ConfigError) as exc:
        raise CliError("\n".join(f"{name}: {line}" for line in str(exc).splitlines()), 2) from None
    for warning in batch.warnings:
        print(f"gsub: warning: {name}: {warning}", file=sys.stderr)
    return batch


def _job_file(name: str, text: str, script: Script) -> Any:
    import yaml

    from rota.cli.errors import CliError
    from rota.yamlload import load as load_yaml

    if script.options:
        raise CliError(
            f"{name}: sbatch options ({' '.join(script.options)}) apply to batch scripts; "
            f"write them as fields of the job file",
            2,
        )
    try:
        return load_yaml(text)  # refuses an alias bomb before building it
    except yaml.YAMLError as exc:
        raise CliError(f"{name}: invalid YAML: {' '.join(str(exc).split())}", 2) from None


def _spec(name: str, data: Any, batch: BatchJob | None) -> JobSpec:
    from rota.cli.errors import CliError
    from rota.jobspec import SpecError, parse_job_file
    from rota.sbatch import absolute_outputs

    try:
        return parse_job_file(absolute_outputs(data, batch, os.getcwd()))
    except SpecError as exc:
        directive = batch.directive_for(exc.field) if batch else None
        where = f" (from {directive})" if directive else ""
        raise CliError(f"{name}: {exc}{where}", 2) from None


def _flags(args: argparse.Namespace) -> dict[str, Any]:
    """Job-file fields given as flags (they override the files')."""
    notify: Any = None
    if args.notify or args.notify_on:
        notify = {"url": args.notify or "", "on": (args.notify_on or "").split(",")}
        notify["on"] = [w.strip() for w in notify["on"] if w.strip()]
    return {
        "output": args.output,
        "error": args.error,
        "open_mode": args.open_mode,
        "notify": notify,
        "reservation": args.reservation,
        "partition": args.partition,
    }


def main(argv: list[str] | None = None) -> int:
    from rota.cli.errors import run_main

    return run_main(lambda: _run(sys.argv[1:] if argv is None else argv))


def _run(argv: list[str]) -> int:
    from rota.cli.errors import CliError
    from rota.sbatch import is_batch_script

    sources = Sources()
    line = split_argv(argv, lambda name: is_batch_script(name, sources.read(name)))
    args = build_parser().parse_args([*line.own, "--", *line.files])
    if args.wrap is not None and args.files:
        raise CliError("--wrap CMD takes no script or job file", 2)
    if args.wrap is None and not args.files:
        raise CliError("give job files, a batch script (and its arguments) or --wrap CMD", 2)
    script = Script(line.sbatch, line.args, args.wrap, args.strict, sources)
    return _dry_run(args, script) if args.dry_run else _submit(args, script)


def _load(args: argparse.Namespace, script: Script) -> list[Loaded]:
    dependency = _checked_dependency(args.dependency)
    return load_jobs(args.files, args.hold, dependency, script=script, **_flags(args))


def _dry_run(args: argparse.Namespace, script: Script) -> int:
    from rota.sbatch import dump_job

    jobs = _load(args, script)
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


def _submit(args: argparse.Namespace, script: Script) -> int:
    jobs = _load(args, script)
    items = [(os.urandom(16).hex(), j.name, j.spec) for j in jobs]  # the request ids
    submitted: list[str] = []
    for job, loaded in zip(_send(args, items), jobs, strict=False):
        for warning in job["warnings"]:  # what the scheduler accepted but will not do
            print(f"gsub: warning: {loaded.name}: {warning}", file=sys.stderr)
        if args.test_only:
            print(f"Job would {'start now' if not job['reason'] else 'wait: ' + job['reason']}")
            continue
        ids = list(job["job_ids"])
        if ids and "_" in ids[0]:  # an array: its tasks are ARRAYID_TASK
            ids = [ids[0].split("_", 1)[0]]
        for job_id in ids:
            print(job_id if args.parsable else f"Submitted job {job_id}", flush=True)
        submitted += ids
    if args.wait and not args.test_only:
        from rota.cli.client import connect
        from rota.cli.wait import follow

        with connect(args.scheduler, args.ca) as client:
            return follow(lambda: client.job_dicts(submitted), sys.stderr)
    return 0


def _send(args: argparse.Namespace, items: list[tuple[str, str, JobSpec]]) -> list[dict[str, Any]]:
    """Submit (request id, source, spec) items in one request: over the scheduler's HTTP API
    when it answers (no grpc to import), else over gRPC with the same request ids, which the
    scheduler stores once. One ``{job_ids, reason, warnings}`` per item."""
    from rota.cli.http_client import http_client

    fast = http_client(args.scheduler, args.ca)
    if fast is not None:
        from rota.wire import spec_fields

        sent = fast.submit(
            [{"client_request_id": i, "source": n, "spec": spec_fields(s)} for i, n, s in items],
            args.test_only,
        )
        if sent is not None:
            return sent
    from rota.cli.client import connect, current_user

    with connect(args.scheduler, args.ca) as client:
        response = client.submit(items, current_user(), test_only=args.test_only)
    return [
        {"job_ids": list(j.job_ids), "reason": j.reason, "warnings": list(j.warnings)}
        for j in response.jobs
    ]


def console() -> NoReturn:
    """The ``gsub`` console script: ``main``, ending without the interpreter's teardown."""
    from rota.cli.errors import exit_without_teardown

    exit_without_teardown(main)


if __name__ == "__main__":
    sys.exit(main())
