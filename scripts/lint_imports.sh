#!/usr/bin/env bash
# Check the import-linter contracts (pyproject.toml) against a plain (non-editable) build, since
# the rota package is assembled from several top-level folders by setuptools' package-dir.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
target=$(mktemp -d)
trap 'rm -rf "$target"' EXIT
python -m pip install -q --no-deps --no-build-isolation --target "$target" "$here" >/dev/null
cd "$here"
PYTHONPATH="$target" lint-imports
