#!/usr/bin/env bash
# Quickstart on a fresh Debian/Ubuntu machine (run as root or with sudo rights):
# installs rota and what it needs, starts a one-machine cluster (scheduler on SQLite + a local
# agent with 2 simulated GPUs), submits examples/hello.yaml and shows it finish.
#
# rota goes into a virtual environment (the system Python refuses `pip install`, PEP 668):
# as root /opt/rota/venv with the commands linked into /usr/local/bin, otherwise
# ~/.local/share/rota/venv with the commands linked into ~/.local/bin. ROTA_VENV and ROTA_BIN
# choose other places; PYTHON the interpreter (default python3, >= 3.11).
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"

need=()
command -v dockerd >/dev/null || need+=(docker.io)
command -v busybox >/dev/null || need+=(busybox-static)
if [ ${#need[@]} -gt 0 ]; then
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}"
fi
if ! docker info >/dev/null 2>&1; then
  # No bridge network: this also works where private addresses are off limits.
  $SUDO sh -c 'nohup dockerd --bridge=none --iptables=false --ip-masq=false >/tmp/dockerd.log 2>&1 &'
  for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
  docker info >/dev/null 2>&1 || { echo "dockerd did not start; see /tmp/dockerd.log" >&2; exit 1; }
fi

if [ "$(id -u)" -eq 0 ]; then
  venv=${ROTA_VENV:-/opt/rota/venv}; bin=${ROTA_BIN:-/usr/local/bin}
else
  venv=${ROTA_VENV:-$HOME/.local/share/rota/venv}; bin=${ROTA_BIN:-$HOME/.local/bin}
fi
echo "Installing rota into the virtual environment $venv ..."
bash scripts/venv.sh "$venv" .
mkdir -p "$bin"
commands=$("$venv/bin/python" -c 'from importlib.metadata import distribution
print(" ".join(e.name for e in distribution("rota").entry_points if e.group == "console_scripts"))')
for cmd in $commands; do ln -sf "$venv/bin/$cmd" "$bin/$cmd"; done
echo "rota installed in $venv; commands linked into $bin: $commands"
case ":$PATH:" in
  *":$bin:"*) ;;
  *) echo "note: $bin is not on your PATH; add it, e.g. echo 'export PATH=\"$bin:\$PATH\"' >> ~/.bashrc"
     export PATH="$bin:$PATH" ;;
esac

cp "$(command -v busybox)" examples/hello-image/busybox
docker build -q -t rota-hello:latest examples/hello-image >/dev/null 2>/tmp/rota-build.log || { cat /tmp/rota-build.log >&2; exit 1; }

export ROTA_SCHEDULER=127.0.0.1:${ROTA_PORT:-9717} ROTA_HTTP=127.0.0.1:${ROTA_HTTP_PORT:-9718}
rota up --port "${ROTA_PORT:-9717}" --http-port "${ROTA_HTTP_PORT:-9718}" --simulate-gpus 2 >/tmp/rota-up.log 2>&1 &
up=$!
trap 'kill -INT $up 2>/dev/null; wait $up 2>/dev/null || true' EXIT
for _ in $(seq 60); do ginfo 2>/dev/null | grep -q IDLE && break; sleep 0.5; done
ginfo

job=$(gsub --parsable examples/hello.yaml)
echo "Submitted job $job"
for _ in $(seq 120); do
  state=$(gqueue -j "$job" --json | "$venv/bin/python" -c 'import json,sys; print(json.load(sys.stdin)[0]["state"])')
  case "$state" in COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY) break ;; esac
  sleep 0.5
done
gqueue -t all
echo "--- glogs $job"
glogs "$job"
[ "$state" = COMPLETED ]
