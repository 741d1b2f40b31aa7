"""A throw-away PostgreSQL cluster on 127.0.0.1 for the store contract tests.

It uses the PostgreSQL binaries on PATH (or /usr/local/bin, /usr/lib/postgresql/*/bin). initdb
refuses root, so as root the server runs as the ``nobody`` user. Outside CI a machine without
PostgreSQL skips these tests; in CI (CI=true) that is a failure.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.cluster import free_port


def _pg_bin(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    for candidate in [
        "/usr/local/bin",
        *sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True),
    ]:
        path = Path(candidate) / name
        if path.exists():
            return str(path)
    return None


def _as_server_user(cmd: list[str]) -> list[str]:
    return ["runuser", "-u", "nobody", "--", *cmd] if os.geteuid() == 0 else cmd


@contextmanager
def running_postgres() -> Iterator[str]:
    """A fresh cluster's SQLAlchemy URL while the block runs (benchmarks use it too);
    FileNotFoundError when the binaries are missing."""
    initdb, pg_ctl = _pg_bin("initdb"), _pg_bin("pg_ctl")
    if not initdb or not pg_ctl:
        raise FileNotFoundError("PostgreSQL binaries (initdb, pg_ctl) not found")
    root = Path(tempfile.mkdtemp(prefix="rota-pg-"))
    if os.geteuid() == 0:
        shutil.chown(root, "nobody")
    data, port = root / "data", free_port()
    subprocess.run(
        _as_server_user([initdb, "-D", str(data), "-A", "trust", "-U", "rota"]),
        check=True,
        capture_output=True,
    )
    subprocess.run(
        _as_server_user(
            [
                pg_ctl,
                "-D",
                str(data),
                "-l",
                str(root / "log"),
                "-w",
                "-o",
                f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off",
                "start",
            ]
        ),
        check=True,
        capture_output=True,
    )
    try:
        yield f"postgresql+psycopg://rota@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(
            _as_server_user([pg_ctl, "-D", str(data), "-m", "immediate", "stop"]),
            capture_output=True,
        )
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    if not _pg_bin("initdb") or not _pg_bin("pg_ctl"):
        if os.environ.get("CI"):
            pytest.fail("PostgreSQL binaries not found in CI; .ci/run must install them")
        pytest.skip("PostgreSQL binaries not found (CI always runs these tests)")
    with running_postgres() as url:
        yield url
