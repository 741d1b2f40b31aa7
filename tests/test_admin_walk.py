"""What an admin following docs/admin.md met on the way, as the commands they typed show it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.cluster import free_port


def _run(module: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ROTA_SCHEDULER": f"127.0.0.1:{free_port()}", "ROTA_TOKEN": "t"}
    return subprocess.run(
        [sys.executable, "-m", f"rota.cli.{module}", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=60,
    )


def test_gsub_refuses_an_unquoted_yaml_boolean_in_a_command(tmp_path: Path) -> None:
    """`command: [true]` ran the program "True" (exit 127); now gsub names the element."""
    (tmp_path / "job.yaml").write_text("image: busybox\ncommand: [true]\n")
    result = _run("gsub", "job.yaml", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "command[0]: got the boolean True; quote the word" in result.stderr
