#!/usr/bin/env bash
# Builds the agentkernel wheel (python/: the package with the static binary)
# into dist/, in a throwaway build environment (hatchling from PyPI).
#   scripts/wheel.sh        → dist/agentkernel-VERSION-py3-none-manylinux_…whl
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export PATH="/usr/local/go/bin:$PATH"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 -m venv "$tmp/venv"
"$tmp/venv/bin/python" -m pip install -q --disable-pip-version-check build
mkdir -p "$repo/dist"
"$tmp/venv/bin/python" -m build --wheel --outdir "$repo/dist" "$repo/python" >&2
ls -t "$repo/dist"/agentkernel-*.whl | head -1
