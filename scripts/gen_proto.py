"""Regenerate the committed protobuf/gRPC modules from proto/rota/v1/*.proto.

Usage: python scripts/gen_proto.py [OUT_DIR]   (default: proto/, in place)
The test suite runs it into a temporary directory and compares bytes with the committed files.
"""

from __future__ import annotations

import sys
from pathlib import Path

from grpc_tools import protoc

ROOT = Path(__file__).resolve().parent.parent
PROTO_DIR = ROOT / "proto"


def generate(out_dir: Path) -> list[Path]:
    """Write rota/v1/*_pb2.py, *_pb2.pyi and *_pb2_grpc.py under out_dir; return the sources."""
    sources = sorted((PROTO_DIR / "rota" / "v1").glob("*.proto"))
    out_dir.mkdir(parents=True, exist_ok=True)
    args = [
        "grpc_tools.protoc",
        f"-I{PROTO_DIR}",
        f"--python_out={out_dir}",
        f"--pyi_out={out_dir}",
        f"--grpc_python_out={out_dir}",
        *(str(s.relative_to(PROTO_DIR)) for s in sources),
    ]
    if protoc.main(args) != 0:
        raise SystemExit("protoc failed")
    return sources


if __name__ == "__main__":
    generate(Path(sys.argv[1]) if len(sys.argv) > 1 else PROTO_DIR)
