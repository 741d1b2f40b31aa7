"""CLI comfort: ``gqueue --format`` with squeue letters, array rows, ``--limit`` and the summary
line, ``--me``, colour only on a terminal, ``gsub --wait`` status, and shell completion."""

from __future__ import annotations

import getpass
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rota.cli.completion import script
from rota.cli.gqueue_format import collapse_arrays, compress, formatted, parse_format, summary
from rota.cli.wait import exit_code, follow, status_line
from tests.cluster import TEST_IMAGE, Cluster

NOW = 1_700_000_000.0


def _job(job_id: str, state: str = "PENDING", code: str = "PD", **kw: Any) -> dict[str, Any]:
    job = {
        "id": job_id,
        "name": "train",
        "user": "ann",
        "account": "vision",
        "state": state,
        "state_code": code,
        "reason": "Priority" if state == "PENDING" else "",
        "exit_code": None,
        "attempt": 1,
        "nodes": [],
        "gpus": 1,
        "gpu_ids": {},
        "submit_time": "2023-11-14T22:00:00Z",
        "start_time": None,
        "end_time": None,
        "time_limit": 3600,
        "num_nodes": 1,
        "estimated_start": None,
    }
    job.update(kw)
    return job


RUNNING = _job(
    "7",
    "RUNNING",
    "R",
    name="a-very-long-job-name",
    nodes=["gpu01", "gpu02"],
    num_nodes=2,
    start_time="2023-11-14T20:13:20Z",  # 2:00:00 before NOW
)


@pytest.mark.parametrize(
    ("fmt", "expected"),
    [
        (
            "%i %t %M %l %D %R",
            [
                "JOBID ST TIME TIME_LIMIT NODES NODELIST(REASON)",
                "7 R 2:00:00 1:00:00 2 gpu01,gpu02",
            ],
        ),
        ("%.6i|%8j|%u", [" JOBID|NAME    |USER", "     7|a-very-l|ann"]),
        ("%.2t %T 100%%", ["ST STATE 100%", " R RUNNING 100%"]),
        ("%a:%b %N", ["ACCOUNT:TRES_PER_NODE NODELIST", "vision:gres/gpu:1 gpu01,gpu02"]),
    ],
)
def test_format_letters_widths_and_cuts(fmt: str, expected: list[str]) -> None:
    assert formatted(parse_format(fmt), [RUNNING], NOW) == expected


def test_pending_job_shows_its_reason_and_an_unlimited_limit() -> None:
    job = _job("8", time_limit=0)
    assert (
        formatted(parse_format("%i %l %R %r"), [job], NOW)[1] == "8 UNLIMITED (Priority) Priority"
    )


@pytest.mark.parametrize("fmt", ["%i %z", "%.10", "%"])
def test_unknown_format_letter_is_named(fmt: str) -> None:
    with pytest.raises(ValueError, match="unknown field") as info:
        parse_format(fmt)
    assert "%i (JOBID)" in str(info.value)


def test_pending_array_tasks_share_a_row_per_reason() -> None:
    jobs = [
        RUNNING,
        *(_job(f"12_{i}") for i in (0, 1, 2, 5, 6)),
        _job("12_3", "RUNNING", "R", nodes=["gpu03"]),
        _job("12_7", reason="JobArrayTaskLimit"),
        _job("13_0"),
    ]
    ids = [j["id"] for j in collapse_arrays(jobs)]
    assert ids == ["7", "12_[0-2,5-6]", "12_3", "12_7", "13_0"]
    assert compress([9, 1, 2, 3, 7]) == "1-3,7,9"
    assert summary(jobs) == "9 jobs: 7 PD, 2 R"


def test_wait_status_and_exit_code() -> None:
    done = _job("5", "COMPLETED", "CD", exit_code=0)
    failed = _job("6_1", "FAILED", "F", exit_code=4)
    cancelled = _job("6_0", "CANCELLED", "CA")
    assert status_line([_job("5")]) == "job 5: PENDING (Priority)"
    assert status_line([done]) == "job 5: COMPLETED, exit code 0"
    assert status_line([failed, cancelled]) == "job 6 (2 tasks): 1 CA, 1 F"
    assert exit_code([done]) == 0
    assert exit_code([done, failed]) == 4
    assert exit_code([cancelled]) == 1  # ended without an exit code and not COMPLETED


def test_wait_prints_a_line_per_change_when_not_on_a_terminal() -> None:
    states = [
        [_job("5")],
        [_job("5")],
        [RUNNING | {"id": "5"}],
        [_job("5", "COMPLETED", "CD", exit_code=0)],
    ]
    out = io.StringIO()
    assert follow(lambda: states.pop(0), out, sleep=lambda _s: None) == 0
    assert out.getvalue().splitlines() == [
        "job 5: PENDING (Priority)",
        "job 5: RUNNING on gpu01,gpu02",
        "job 5: COMPLETED, exit code 0",
    ]


def _complete(shell_script: str, *words: str, path: str = "") -> list[str]:
    """Run the bash completion function for a command line; the last word is being typed."""
    driver = (
        'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); '
        '_rota_complete; printf "%s\\n" "${COMPREPLY[@]}"'
    )
    env = dict(os.environ, PATH=f"{path}:{os.environ['PATH']}" if path else os.environ["PATH"])
    result = subprocess.run(
        ["bash", "-c", driver, "bash", shell_script, *words],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=30,
    )
    return result.stdout.split()


def test_bash_completion_knows_subcommands_options_choices_and_job_ids(tmp_path: Path) -> None:
    path = tmp_path / "rota.bash"
    path.write_text(script("bash"))
    assert _complete(str(path), "gqueue", "--fo") == ["--format"]
    assert _complete(str(path), "gadmin", "node", "dr") == ["drain"]
    assert _complete(str(path), "rota", "completion", "") == ["-h", "--help", "bash", "zsh"]
    assert _complete(str(path), "rota", "agent", "--log-format", "") == ["text", "json"]
    assert "--wait" in _complete(str(path), "gsub", "--")
    # Job ids are the caller's own, from gqueue --me (a stand-in gqueue prints two).
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "gqueue"
    fake.write_text('#!/bin/sh\n[ "$*" = "--me --noheader -o %i" ] && printf "41\\n42_[3-9]\\n"\n')
    fake.chmod(0o755)
    assert _complete(str(path), "gcancel", "4", path=str(bin_dir)) == ["41", "42"]
    assert _complete(str(path), "gcontrol", "show", "job", "", path=str(bin_dir)) == ["41", "42"]


def test_zsh_completion_defines_the_same_words() -> None:
    text = script("zsh")
    assert "compdef _rota_complete rota gsub gqueue gcancel glogs ginfo gcontrol gadmin" in text
    assert "  'gadmin:node' '-h --help add drain resume remove list'" in text
    if shutil.which("zsh"):
        subprocess.run(["zsh", "-n", "-c", text], check=True, timeout=30)


def test_rota_completion_refuses_other_shells() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "rota.cli.rota_main", "completion", "fish"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2 and "fish" in result.stderr


@pytest.mark.docker
def test_gqueue_on_a_long_queue(cluster: Cluster) -> None:
    cluster.start_scheduler()
    cluster.start_agent("n1", gpus=1)
    array = cluster.submit(f'image: {TEST_IMAGE}\ncommand: ["true"]\narray: 0-79\nhold: true\n')
    other = cluster.submit(f'image: {TEST_IMAGE}\ncommand: ["true"]\nhold: true\n')

    rows = cluster.cli("gqueue", check=True).stdout.splitlines()
    assert rows[0].split()[0] == "JOBID" and len(rows) == 3  # one row for 80 pending tasks
    assert rows[1].split()[0] == f"{array}_[0-79]"
    assert "\x1b[" not in "".join(rows)  # no colour when not on a terminal

    every = cluster.cli("gqueue", "-r", check=True).stdout.splitlines()
    assert len(every) == 1 + 81 + 1 and every[-1] == "81 jobs: 81 PD"

    cut = cluster.cli("gqueue", "-r", "--limit", "5", check=True).stdout.splitlines()
    assert len(cut) == 1 + 5 + 1
    assert cut[-1] == "81 jobs: 81 PD (showing 5 of 81 rows; --limit)"

    mine = cluster.cli("gqueue", "--me", "--noheader", "-o", "%i %.2t %u", "-j", other, check=True)
    assert mine.stdout.splitlines() == [f"{other} PD {getpass.getuser()}"]
    assert cluster.cli("gqueue", "-u", "nobody-else", "--noheader", check=True).stdout == ""
    listed = json.loads(cluster.cli("gqueue", "--me", "--json", check=True).stdout)
    assert len(listed) == 81 and all(j["num_nodes"] == 1 for j in listed)

    bad = cluster.cli("gqueue", "-o", "%i %d")
    assert bad.returncode == 2 and "unknown field %d" in bad.stderr


def test_grun_help_names_the_escapes_and_the_terminal_default() -> None:
    """A user who reads only ``grun --help`` learns how to detach and when a terminal is given."""
    out = subprocess.run(
        [sys.executable, "-m", "rota.cli.grun", "--help"], capture_output=True, text=True
    ).stdout
    flat = " ".join(out.split())
    assert "~. detaches (the session runs on; grun --attach JOBID goes back)" in flat
    assert "give CMD a terminal (default: for the shell, or --attach, when stdin is one)" in flat


def test_forward_and_proxy_help_say_what_their_arguments_are() -> None:
    def helped(command: str) -> str:
        argv = [sys.executable, "-m", "rota.cli.rota_main", command, "--help"]
        return " ".join(subprocess.run(argv, capture_output=True, text=True).stdout.split())

    assert "the container's port REMOTE on 127.0.0.1:LOCAL (default: the same number" in helped(
        "forward"
    )
    assert "(an ssh ProxyCommand: rota proxy %h 22)" in helped("proxy")
