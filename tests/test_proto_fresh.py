"""The committed generated protobuf code is exactly what the pinned generator produces."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GENERATED = REPO / "proto" / "rota" / "v1"


def test_generated_code_is_fresh(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, str(REPO / "scripts" / "gen_proto.py"), str(tmp_path)], check=True
    )
    fresh = sorted((tmp_path / "rota" / "v1").glob("*_pb2*"))
    assert fresh, "the generator wrote nothing"
    for path in fresh:
        committed = GENERATED / path.name
        assert committed.exists(), f"{path.name} is generated but not committed"
        assert committed.read_bytes() == path.read_bytes(), (
            f"{path.name} is stale: run python scripts/gen_proto.py and commit"
        )
    assert {p.name for p in GENERATED.glob("*_pb2*")} == {p.name for p in fresh}
