#!/usr/bin/env bash
# Runs every test: installs what the tests need (Debian packages, Go 1.26),
# then `make test` (gofmt, vet, go test -race, a bounded fuzz run, and the
# Python suites through real Jupyter clients).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh test
exec make test
