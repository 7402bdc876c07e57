#!/usr/bin/env bash
# Prints the python of a virtual environment holding the Jupyter stack of
# tests/python/requirements-NAME.txt (default modern, the PyPI stack:
# JupyterLab 4, Notebook 7, ipykernel 7, jupyter_client 8, jupyter_server 2;
# eg: Enterprise Gateway 3.3; jupyterai: Jupyter AI 3; aimagics: Jupyter AI's
# magics, for make bench; peer: collab with jupyter-mcp-server, for make
# bench-peer) or of
# python/requirements-NAME.txt (build: what builds the wheels), making it
# first when it is missing or its requirements changed. It lives under
# ${XDG_CACHE_HOME:-~/.cache}/agentkernel/, named by NAME and the
# requirements' hash.
#   scripts/modern-venv.sh            → /…/venv-modern-<hash>/bin/python
#   scripts/modern-venv.sh eg         → /…/venv-eg-<hash>/bin/python
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
name="${1:-modern}"
req="$repo/tests/python/requirements-$name.txt"
[ -f "$req" ] || req="$repo/python/requirements-$name.txt"
[ -f "$req" ] || { echo "modern-venv: no requirements-$name.txt in tests/python or python" >&2; exit 2; }
hash=$(sha256sum "$req" | cut -c1-12)
venv="${XDG_CACHE_HOME:-$HOME/.cache}/agentkernel/venv-$name-$hash"
if [ ! -x "$venv/bin/python" ] || [ ! -f "$venv/.complete" ]; then
  echo "modern-venv: installing the stack of $(basename "$req") into $venv" >&2
  rm -rf "$venv"
  mkdir -p "$(dirname "$venv")"
  /usr/bin/python3 -m venv "$venv" >&2
  "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$req" >&2
  touch "$venv/.complete"
fi
echo "$venv/bin/python"
