"""``rota simulate``: its outputs and ``--config``, on tiny generated traces."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rota.scheduler.config import load_config, policy_config
from rota.scheduler.policy import make_policy
from rota.scheduler.sim import main, simulate
from rota.scheduler.sim.metrics import FIELDS, summarise
from rota.scheduler.sim.report import COLUMNS, JOB_COLUMNS
from rota.scheduler.sim.trace import TraceJob, derive_limits, read_trace
from tests.policy.test_simulator import generated_jobs, write_generic

CLUSTER = ["--nodes", "1", "--gpus-per-node", "8"]


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    path = tmp_path / "trace.csv"
    write_generic(path, generated_jobs(40))
    return path


def test_json_and_summary_csv_carry_the_same_figures(trace, tmp_path, capsys):
    out_json, out_csv, jobs_csv = (tmp_path / n for n in ("run.json", "runs.csv", "jobs.csv"))
    outputs = ["--json", str(out_json), "--csv", str(out_csv), "--jobs-csv", str(jobs_csv)]
    assert main([str(trace), *CLUSTER, "--policy", "fifo", "--seed", "5", *outputs]) == 0
    assert "avg_jct" in capsys.readouterr().out
    figures = json.loads(out_json.read_text())
    assert tuple(figures) == COLUMNS
    assert set(FIELDS) <= set(COLUMNS)
    header, row = list(csv.reader(out_csv.open()))
    assert tuple(header) == COLUMNS
    for name, cell in zip(header, row, strict=True):
        value = figures[name]
        if isinstance(value, str):
            assert cell == value
        elif value is None:
            assert cell == ""  # no --config
        else:
            assert float(cell) == value, name
    assert figures["policy"] == "fifo" and figures["seed"] == 5 and figures["jobs"] == 40
    assert figures["default_time_limit"] == 7 * 24 * 3600.0
    jobs = list(csv.DictReader(jobs_csv.open()))
    assert len(jobs) == 40 and tuple(jobs[0]) == JOB_COLUMNS

    assert main([str(trace), *CLUSTER, "--policy", "rota", "--csv", str(out_csv)]) == 0
    rows = list(csv.DictReader(out_csv.open()))
    assert [r["policy"] for r in rows] == ["fifo", "rota"]  # one row per run, one header


def test_summary_csv_refuses_a_file_of_another_kind(trace, tmp_path, capsys):
    jobs_csv = tmp_path / "jobs.csv"
    assert main([str(trace), *CLUSTER, "--jobs-csv", str(jobs_csv)]) == 0
    before = jobs_csv.read_text()
    assert main([str(trace), *CLUSTER, "--csv", str(jobs_csv)]) == 2
    assert "not a summary CSV" in capsys.readouterr().err
    assert jobs_csv.read_text() == before


def test_config_sets_the_policy_and_its_settings(trace, tmp_path):
    config = tmp_path / "rota.yaml"
    config.write_text(
        "scheduler:\n  policy: fifo-backfill\n  default_time_limit: 1m\n  backfill_depth: 2\n"
    )
    out = tmp_path / "run.json"
    assert main([str(trace), *CLUSTER, "--config", str(config), "--json", str(out)]) == 0
    figures = json.loads(out.read_text())
    assert figures["policy"] == "fifo-backfill" and figures["config"] == str(config)
    assert figures["default_time_limit"] == 60.0
    expected = summarise(
        simulate(
            derive_limits(read_trace(trace), 0),
            make_policy("fifo-backfill", policy_config(load_config(config))),
            nodes=1,
            gpus_per_node=8,
        )
    )
    assert {k: figures[k] for k in FIELDS} == expected

    plain = tmp_path / "plain.json"
    assert main([str(trace), *CLUSTER, "--policy", "fifo-backfill", "--json", str(plain)]) == 0
    assert json.loads(plain.read_text())["timeouts"] < figures["timeouts"]  # 7 days vs 1 minute

    args = [str(trace), *CLUSTER, "--config", str(config), "--policy", "rota", "--json", str(out)]
    assert main(args) == 0
    assert json.loads(out.read_text())["policy"] == "rota"  # the flag wins over the file


def test_a_config_without_a_default_limit_gets_the_daemons(tmp_path):
    config, out = tmp_path / "rota.yaml", tmp_path / "run.json"
    config.write_text("backfill_depth: 4\n")
    trace = tmp_path / "trace.csv"
    write_generic(trace, [TraceJob(1, 0.0, 100.0, 1, "u", "a")])
    assert main([str(trace), *CLUSTER, "--config", str(config), "--json", str(out)]) == 0
    assert json.loads(out.read_text())["default_time_limit"] == 24 * 3600.0


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("bogus_setting: 1\n", "bogus_setting"),
        ("weights: {agee: 2}\n", "agee"),
        ("policy: lottery\n", "lottery"),
        ("default_time_limit: 0\n", "default_time_limit"),
        ("backfill_depth: many\n", "backfill_depth"),
        ("weights: [\n", "line"),
        ("scheduler: 5\n", "settings must be a map"),
        ("- a list\n", "settings must be a map"),
        ("max_age: soon\n", "max_age"),
        (None, "No such file"),
    ],
)
def test_a_bad_config_is_named_and_nothing_runs(trace, tmp_path, capsys, text, named):
    config, out = tmp_path / "rota.yaml", tmp_path / "run.json"
    if text is not None:
        config.write_text(text)
    assert main([str(trace), *CLUSTER, "--config", str(config), "--json", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"rota simulate: --config {config}:" in err and named in err
    assert not out.exists()


def test_the_rota_command_gives_the_same_figures_whatever_the_hash_seed(trace, tmp_path):
    figures = []
    for hash_seed in ("1", "2"):
        out = tmp_path / f"run{hash_seed}.json"
        command = [sys.executable, "-m", "rota.cli.rota_main", "simulate", str(trace), *CLUSTER]
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        subprocess.run([*command, "--json", str(out)], check=True, env=env, capture_output=True)
        figures.append(
            {k: v for k, v in json.loads(out.read_text()).items() if k != "wall_seconds"}
        )
    assert figures[0] == figures[1]
