#!/usr/bin/env bash
# Quick start: set up this Debian/Ubuntu machine, build the agentkernel wheel
# (its static binary and the JupyterLab sidebar), pip-install it with
# JupyterLab 4 and ipykernel 7 into a virtual environment
# ($AGENTKERNEL_VENV, default ~/.local/share/agentkernel/venv), install its
# kernelspecs there — "Agent" (prompt mode: cells are requests to the agent;
# the model from $AGENTKERNEL_MODEL and the usual API key variables) and
# "Agent (code)" (code mode) — and start JupyterLab on 127.0.0.1:8888.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh run
wheel="$(scripts/wheel.sh)"
venv="${AGENTKERNEL_VENV:-$HOME/.local/share/agentkernel/venv}"
if [ ! -x "$venv/bin/python" ]; then
  mkdir -p "$(dirname "$venv")"
  /usr/bin/python3 -m venv "$venv"
fi
echo "run: installing JupyterLab, ipykernel and $(basename "$wheel") into $venv" >&2
pip=("$venv/bin/python" -m pip install -q --disable-pip-version-check)
"${pip[@]}" "jupyterlab==4.6.6" "notebook==7.6.5" "ipykernel==7.4.0" matplotlib
"${pip[@]}" --force-reinstall --no-deps "$wheel" # this checkout's build, also at an unchanged version
model=()
if [ -n "${AGENTKERNEL_MODEL:-}" ]; then model=(--model "$AGENTKERNEL_MODEL"); fi
"$venv/bin/agentkernel" install --sys-prefix "${model[@]}"
extra=()
if [ "$(id -u)" -eq 0 ]; then extra+=(--allow-root); fi
echo "Starting JupyterLab: open the URL below and pick \"Agent\" (or \"Agent (code)\") in the launcher." >&2
if [ -z "${AGENTKERNEL_MODEL:-}" ]; then
  echo "No model configured yet: set AGENTKERNEL_MODEL (e.g. anthropic:claude-sonnet-4-5) and its API key, or use %agent model in a cell." >&2
fi
exec "$venv/bin/jupyter" lab --no-browser --ip=127.0.0.1 --port="${PORT:-8888}" "${extra[@]}" "$@"
