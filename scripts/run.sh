#!/usr/bin/env bash
# Quick start: set up this Debian/Ubuntu machine, build agentkernel, install
# its kernelspecs for this user — "Agent" (prompt mode: cells are requests
# to the agent; the model from $AGENTKERNEL_MODEL and the usual API key
# variables) and "Agent (code)" (code mode) — and start Jupyter Notebook on
# 127.0.0.1:8888.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh run
make build
model=()
if [ -n "${AGENTKERNEL_MODEL:-}" ]; then model=(--model "$AGENTKERNEL_MODEL"); fi
bin/agentkernel install --user --name agent --mode prompt "${model[@]}"
bin/agentkernel install --user --name agent-code --mode code --probe=false
extra=()
if [ "$(id -u)" -eq 0 ]; then extra+=(--allow-root); fi
echo "Starting Jupyter Notebook: open the URL below and pick New → \"Agent\" (or \"Agent (code)\")." >&2
if [ -z "${AGENTKERNEL_MODEL:-}" ]; then
  echo "No model configured yet: set AGENTKERNEL_MODEL (e.g. anthropic:claude-sonnet-4-5) and its API key, or use %agent model in a cell." >&2
fi
exec jupyter notebook --no-browser --ip=127.0.0.1 --port="${PORT:-8888}" "${extra[@]}" "$@"
