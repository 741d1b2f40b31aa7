"""python -m bench.loadgen [options]: run from the repository root; prints the table and writes
the JSON report."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import yaml

from bench.loadgen.report import table
from bench.loadgen.run import Options, run


def _setting(text: str) -> tuple[str, Any]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), yaml.safe_load(value)


def parse(argv: list[str] | None) -> tuple[Options, Path]:
    d = Options()
    p = argparse.ArgumentParser(
        prog="python -m bench.loadgen",
        description="Simulated rota agents against the real scheduler, then a bare grpc.aio floor.",
    )
    p.add_argument("-n", "--nodes", type=int, default=d.nodes, help="simulated 8-GPU nodes")
    p.add_argument("--window", type=float, default=d.window, help="steady-state seconds measured")
    p.add_argument("--ramp", type=float, default=d.ramp, help="seconds over which nodes connect")
    p.add_argument("--settle", type=float, default=d.settle, help="seconds between ramp and window")
    p.add_argument("--workers", type=int, default=d.workers, help="load generator processes")
    p.add_argument("--jobs", type=int, default=d.jobs, help="1-GPU jobs submitted in the window")
    p.add_argument("--job-runtime", type=float, default=d.job_runtime, help="seconds a job runs")
    p.add_argument("--start-delay", type=float, default=d.start_delay, help="launch -> STARTED")
    p.add_argument("--submit-batch", type=int, default=d.submit_batch, help="jobs per SubmitJobs")
    p.add_argument("--stop-nodes", type=int, default=d.stop_nodes, help="nodes stopped mid-window")
    p.add_argument("--stop-mode", choices=["freeze", "close"], default=d.stop_mode)
    p.add_argument("--probe-interval", type=float, default=d.probe_interval)
    p.add_argument("--ginfo-runs", type=int, default=d.ginfo_runs)
    p.add_argument("--drain", type=float, default=d.drain, help="max seconds after the window")
    p.add_argument(
        "--set",
        dest="settings",
        action="append",
        type=_setting,
        default=[],
        metavar="KEY=VALUE",
        help="scheduler setting for the scheduler this run starts",
    )
    p.add_argument(
        "--scheduler",
        default="",
        help="HOST:PORT of a running scheduler to load (an admin's token in ROTA_TOKEN)",
    )
    p.add_argument("--scheduler-pid", type=int, default=0, help="its pid (CPU and RSS)")
    p.add_argument("--no-floor", dest="floor", action="store_false", help="skip the floor run")
    p.add_argument("--floor-window", type=float, default=0.0, help="default: --window")
    p.add_argument("--logs", default="", help="keep server logs and the database in this folder")
    p.add_argument(
        "--json", type=Path, help="report file (default: bench/results/loadgen-NODES.json)"
    )
    args = vars(p.parse_args(argv))
    out = args.pop("json") or Path("bench/results") / f"loadgen-{args['nodes']}.json"
    args["settings"] = dict(args["settings"])
    args["token"] = os.environ.get("ROTA_TOKEN", "")  # never a flag: ps would show it
    return Options(**args), out


def main(argv: list[str] | None = None) -> int:
    options, out = parse(argv)
    report = asyncio.run(run(options))
    print(table(report))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2))
    print(f"report written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
