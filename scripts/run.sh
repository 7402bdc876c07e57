#!/usr/bin/env bash
# Quick start: set up this Debian/Ubuntu machine, build agentkernel, install
# its kernelspec for this user and start Jupyter Notebook on 127.0.0.1:8888
# with "Agent (code)" in the kernel list.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh run
make build
bin/agentkernel install --user
extra=()
if [ "$(id -u)" -eq 0 ]; then extra+=(--allow-root); fi
echo "Starting Jupyter Notebook: open the URL below and pick New → \"Agent (code)\"." >&2
exec jupyter notebook --no-browser --ip=127.0.0.1 --port="${PORT:-8888}" "${extra[@]}" "$@"
