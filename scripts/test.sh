#!/usr/bin/env bash
# Install the test dependencies and run the whole test suite (needs a running Docker engine,
# busybox-static, gcc and PostgreSQL binaries; .ci/run sets those up on a fresh machine).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q -e ".[test]"
python3 -m pytest -n "${ROTA_TEST_WORKERS:-3}" -q "$@"
