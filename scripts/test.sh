#!/usr/bin/env bash
# Install the test dependencies into a virtual environment (ROTA_VENV, default ./.venv; created
# if missing, since the system Python may refuse pip installs) and run the whole test suite
# with it. Needs a running Docker engine, busybox-static, gcc and PostgreSQL binaries; .ci/run
# sets those up on a fresh machine.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${ROTA_VENV:-.venv}
bash scripts/venv.sh "$venv" -e ".[test]"
"$venv/bin/python" -m pytest -n "${ROTA_TEST_WORKERS:-3}" -q "$@"
