#!/usr/bin/env bash
# Builds agentkernel's wheels (python/: the package with the static binary,
# cross-compiled with CGO_ENABLED=0 GOOS/GOARCH) and prints their paths, in a
# cached build environment (python/requirements-build.txt, pinned; made by
# scripts/modern-venv.sh build). The JupyterLab extension is built once, for
# the first wheel; the others carry the same build.
#   scripts/wheel.sh                   → this machine's wheel, in dist/
#   scripts/wheel.sh --all             → every platform's wheel and the sdist
#   scripts/wheel.sh linux-aarch64 …   → those platforms' (linux-x86_64, linux-aarch64, macos-arm64,
#                                        macos-x86_64; sdist: the sdist, which only refuses to build)
#   scripts/wheel.sh --outdir DIR …    → into DIR instead of dist/
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export PATH="/usr/local/go/bin:$PATH"
all=(linux-x86_64 linux-aarch64 macos-arm64 macos-x86_64 sdist)
out="$repo/dist"
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --outdir) out="$2"; shift 2 ;;
    --all) targets+=("${all[@]}"); shift ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) [[ " ${all[*]} " == *" $1 "* ]] || { echo "wheel.sh: unknown platform $1 (${all[*]})" >&2; exit 2; }
       targets+=("$1"); shift ;;
  esac
done
[ ${#targets[@]} -gt 0 ] || targets=("") # this machine's (hatch_build.py chooses)
python="$("$repo/scripts/modern-venv.sh" build)"
export PATH="$(dirname "$python"):$PATH" # its jupyter builds the extension
mkdir -p "$out"
skip=() # the extension is built by the first wheel only
for t in "${targets[@]}"; do
  if [ "$t" = sdist ]; then
    cmd=(env SKIP_JUPYTER_BUILDER=1 "$python" -m build --no-isolation --sdist)
  else
    cmd=(env "${skip[@]}" AGENTKERNEL_WHEEL_PLATFORM="$t" "$python" -m build --no-isolation --wheel)
    skip=(SKIP_JUPYTER_BUILDER=1)
  fi
  log="$("${cmd[@]}" --outdir "$out" "$repo/python" 2>&1)" || { echo "$log" >&2; exit 1; }
  echo "$log" >&2
  made="$(sed -n 's/^Successfully built //p' <<<"$log" | tail -1)"
  [ -n "$made" ] && [ -f "$out/$made" ] || { echo "wheel.sh: no file built for ${t:-this machine}" >&2; exit 1; }
  echo "$out/$made"
done
