"""Type-check the rota package as its modules import each other (``rota.scheduler...``).

Usage: python scripts/typecheck.py   (from any folder; mypy from the running Python)

The package is assembled from several top-level folders by setuptools' ``package-dir``
(pyproject.toml), which mypy cannot follow, so checking the folders by path leaves every
``rota.*`` import untyped (Any). This links each package's files into a temporary ``rota/``
tree, runs ``mypy -p rota`` there with the project's settings, and prints the errors with the
source paths. Exits with mypy's status.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def source_dirs() -> dict[str, Path]:
    """Package name -> the folder that holds its files, from pyproject.toml."""
    setup = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    mapped: dict[str, str] = setup["package-dir"]
    out = {}
    for package in setup["packages"]:
        parts = package.split(".")
        for i in range(len(parts), 0, -1):
            base = mapped.get(".".join(parts[:i]))
            if base is not None:
                out[package] = ROOT.joinpath(base, *parts[i:])
                break
    return out


def link_tree(target: Path, dirs: dict[str, Path]) -> dict[str, str]:
    """Link every package's modules under ``target``; returns tree path -> source path."""
    paths = {}
    for package, source in dirs.items():
        folder = target.joinpath(*package.split("."))
        folder.mkdir(parents=True, exist_ok=True)
        for file in sorted(source.iterdir()):
            if file.suffix in (".py", ".pyi") or file.name == "py.typed":
                (folder / file.name).symlink_to(file)
                tree = (folder / file.name).relative_to(target).as_posix()
                paths[tree] = file.relative_to(ROOT).as_posix()
    return paths


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="rota-typecheck-") as tmp:
        paths = link_tree(Path(tmp), source_dirs())
        config = str(ROOT / "pyproject.toml")
        done = subprocess.run(
            [sys.executable, "-m", "mypy", "--config-file", config, "-p", "rota"],
            cwd=tmp,
            capture_output=True,
            text=True,
        )
    for line in (done.stdout + done.stderr).splitlines():
        where, sep, rest = line.partition(":")
        print(f"{paths.get(where, where)}{sep}{rest}")
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
