#!/usr/bin/env bash
# Usage: scripts/venv.sh DIR PIP_INSTALL_ARGS...
# Make sure DIR is a Python (>= 3.11) virtual environment, then `pip install` into it. Stock
# Debian 12 / Ubuntu 24.04 refuse pip installs into the system Python (PEP 668, "externally
# managed"), so rota always installs into a venv. If the interpreter lacks venv support, the
# python3-venv package is installed with apt. PYTHON picks the interpreter (default python3).
set -euo pipefail
dir=$1; shift
py=${PYTHON:-python3}

if [ ! -x "$dir/bin/python" ]; then
  command -v "$py" >/dev/null || { echo "venv.sh: $py not found; install python3 (>= 3.11)" >&2; exit 1; }
  "$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || {
    echo "venv.sh: rota needs Python >= 3.11; $py is $("$py" -V 2>&1)" >&2; exit 1; }
  if ! "$py" -m venv "$dir" >/dev/null 2>&1; then
    rm -rf "$dir"
    echo "venv.sh: $py cannot create virtual environments; installing python3-venv" >&2
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-venv >/dev/null
    "$py" -m venv "$dir"
  fi
fi
# pip's and the build's chatter goes to a log that is shown only when the install fails.
log=$(mktemp); trap 'rm -f "$log"' EXIT
pip_install() { "$dir/bin/python" -m pip install "$@" >"$log" 2>&1 || { cat "$log" >&2; exit 1; }; }
# New enough to build rota (setuptools >= 68) also without build isolation (lint_imports.sh).
pip_install --upgrade pip "setuptools>=68" wheel
pip_install "$@"
