#!/usr/bin/env bash
# Browser tests of the web panel: installs what they need (playwright-core
# from npm, Debian's chromium) and runs them against a real prompt-mode
# kernel with the scripted model; then JupyterLab 4 and Notebook 7 (the PyPI
# stack's venv, scripts/modern-venv.sh) with the sidebar extension built
# from labextension/; last, JupyterLab with jupyter-collaboration (a venv of
# its own: scripts/modern-venv.sh collab). Screenshots: tests/artifacts/.
#   tests/browser/run.sh            (from anywhere)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
export PATH="/usr/local/go/bin:$PATH"

if [ ! -x /usr/bin/chromium ]; then
  echo "run.sh: installing Debian's chromium" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
if ! /usr/bin/python3 -c "import ipykernel" 2>/dev/null; then
  echo "run.sh: installing Debian's python3-ipykernel (the backing kernel)" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-ipykernel >/dev/null
fi
# The page the kernel embeds is the bundle of surface/webview/panel/src: it must be
# what those sources build (esbuild, pinned by surface/webview/panel/package-lock.json).
(cd "$repo/surface/webview/panel" && npm ci --no-audit --no-fund --loglevel=error && npm run --silent check)
cd "$here"
npm ci --no-audit --no-fund --loglevel=error
make -C "$repo" mcp-server >/dev/null
export HARNESS_MCP_SERVER="$repo/tests/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js"

bin="$(mktemp -d)/harness"
trap 'rm -rf "$(dirname "$bin")"' EXIT
(cd "$repo" && go build -o "$bin" ./tests/browser/harness)
mkdir -p "$repo/tests/artifacts"
HARNESS_BIN="$bin" node panel.test.mjs

# JupyterLab 4 and Notebook 7 with the sidebar and the notebook comm (labextension/ built with the
# venv's jupyter: the panel's page inlined, tsc, jupyter labextension build),
# then its inline completions and the settings view.
lab_python="$("$repo/scripts/modern-venv.sh")"
(cd "$repo/labextension" && npm ci --no-audit --no-fund --loglevel=error &&
  PATH="$(dirname "$lab_python"):$PATH" npm run --silent build >/dev/null)
(cd "$repo" && go build -o "$(dirname "$bin")/agentkernel" ./cmd/agentkernel &&
  go build -o "$(dirname "$bin")/scriptedmodel" ./scripts/scriptedmodel)
export LAB_PYTHON="$lab_python" AGENTKERNEL_BIN="$(dirname "$bin")/agentkernel" SCRIPTED_BIN="$(dirname "$bin")/scriptedmodel" \
  LAB_EXTENSION="$repo/python/labextension"
node lab.test.mjs
# The notebook as the agent's workspace: the notebook comm answered by the
# extension, in JupyterLab 4 and Notebook 7.
node notebook.test.mjs
# Inline completions and the settings view's keys (issue 36).
node complete.test.mjs
# The prompt box's @-mention list: df offered, picked and sent (issue 42).
node mention.test.mjs
# The first run with no model: the message's Open Settings, a base URL
# saved in the settings view that the next prompt uses (issue 41).
node settings.test.mjs
# An outside MCP client (npm's SDK) on the notebook open in JupyterLab, through
# %agent mcp serve (issue 35).
node mcpnotebook.test.mjs

# The agent's notebook edits under real-time collaboration: two pages on one
# notebook, with jupyter-collaboration 5.0 from PyPI (the same extension build);
# its document store (.jupyter_ystore.db) neither kept by 50 tool calls' checkpoints nor put back by a rewind.
LAB_PYTHON="$("$repo/scripts/modern-venv.sh" collab)" node collab.test.mjs
