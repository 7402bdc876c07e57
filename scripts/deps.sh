#!/usr/bin/env bash
# Installs what agentkernel needs on a Debian/Ubuntu machine and puts a Go
# >= 1.26 first on PATH. Source it: `. scripts/deps.sh run|test`.
#   run:  Jupyter Notebook, ipykernel, jupyter_client, python3-venv and npm
#         (scripts/run.sh builds the wheel and pip-installs JupyterLab)
#   test: the above plus everything the tests use (PostgreSQL's server
#         binaries among them: the tests start throwaway clusters of their own;
#         python3-venv for the PyPI stack's venv, scripts/modern-venv.sh;
#         qemu-user-static, which runs the Linux aarch64 wheel's binary)
# Debian packages are installed only when missing (apt-get update first).
# Go: /usr/local/go or a go on PATH if >= 1.26; otherwise Debian's golang-go
# fetches the go1.26 toolchain module from the Go module proxy.

set -euo pipefail

ak_need=(python3-ipykernel python3-jupyter-client jupyter-client jupyter-notebook make git ca-certificates python3-venv)
if [ "${1:-run}" = test ]; then
  ak_need+=(python3-jupyter-kernel-test jupyter-nbconvert python3-nbclient python3-nbformat
    jupyter-console python3-pytest python3-ipywidgets python3-matplotlib python3-cryptography procps chromium
    postgresql python3-venv qemu-user-static)
fi
command -v npm >/dev/null || ak_need+=(npm) # the JupyterLab extension is built with it

ak_sudo=""
if [ "$(id -u)" -ne 0 ]; then ak_sudo="sudo"; fi

ak_missing=()
for p in "${ak_need[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || ak_missing+=("$p")
done
if [ ${#ak_missing[@]} -gt 0 ]; then
  echo "deps: installing ${ak_missing[*]}" >&2
  $ak_sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $ak_sudo apt-get install -y -qq --no-install-recommends "${ak_missing[@]}" >/dev/null
fi

ak_go_ok() { # is "$1" a go >= 1.26?
  local v
  v=$("$1" env GOVERSION 2>/dev/null) || return 1
  v=${v#go}
  local major=${v%%.*} rest=${v#*.}
  local minor=${rest%%.*}
  [ "$major" -gt 1 ] || { [ "$major" -eq 1 ] && [ "${minor%%[!0-9]*}" -ge 26 ]; }
}

ak_go=""
for g in /usr/local/go/bin/go "$(command -v go 2>/dev/null || true)"; do
  if [ -n "$g" ] && [ -x "$g" ] && GOTOOLCHAIN=local ak_go_ok "$g"; then ak_go=$g; break; fi
done
if [ -z "$ak_go" ]; then
  tc=golang.org/toolchain@v0.0.1-go1.26.8.linux-$(dpkg --print-architecture)
  cache=${XDG_CACHE_HOME:-$HOME/.cache}/agentkernel/go
  if [ ! -x "$cache/$tc/bin/go" ]; then
    command -v go >/dev/null || { $ak_sudo apt-get update -qq; DEBIAN_FRONTEND=noninteractive $ak_sudo apt-get install -y -qq golang-go >/dev/null; }
    echo "deps: fetching Go 1.26 ($tc) from the Go module proxy" >&2
    (cd /tmp && GOTOOLCHAIN=local GOFLAGS=-modcacherw GOMODCACHE="$cache" go mod download "$tc")
    chmod -R u+w "$cache/$tc" && chmod +x "$cache/$tc/bin/"* "$cache/$tc/pkg/tool/"*/* 2>/dev/null || true
  fi
  ak_go=$cache/$tc/bin/go
fi
export PATH="$(dirname "$ak_go"):$PATH"
export GOTOOLCHAIN=local
echo "deps: $(go version)" >&2
