#!/usr/bin/env bash
# Runs Go tests beside a CPU hog, as on a busy shared machine (a CI host
# with several builds beside it, a laptop compiling): what waits on a timer
# — a kernel's idle after its reply, a stalled client's write deadline — must
# still hold when the test's own threads get a fraction of a core.
#
#   scripts/underload.sh [-n LOOPS] [-t TIMEOUT] -run REGEX PKG...
#
# The packages' race test binaries are built first, without the hog; then
# LOOPS busy loops (default four per core) run at the tests' own priority
# while the binaries run the tests REGEX matches, all packages at once (as
# go test does), each bounded by TIMEOUT (default 5m). The loops stop when
# the tests end, however they end (a trap), and in any case after an hour
# (timeout(1)).
set -euo pipefail

loops=$((4 * $(nproc)))
limit=5m
run=""
while [ $# -gt 0 ]; do
  case $1 in
    -n) loops=$2; shift 2 ;;
    -t) limit=$2; shift 2 ;;
    -run) run=$2; shift 2 ;;
    --) shift; break ;;
    -*) echo "underload: unknown flag $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
if [ -z "$run" ] || [ $# -eq 0 ]; then
  echo "usage: scripts/underload.sh [-n LOOPS] [-t TIMEOUT] -run REGEX PKG..." >&2
  exit 2
fi

go=${GO:-go}
root=$(pwd)
bins=$(mktemp -d)
hog=()
stop() {
  if [ ${#hog[@]} -gt 0 ]; then
    kill "${hog[@]}" 2>/dev/null || true
    wait "${hog[@]}" 2>/dev/null || true
    hog=()
  fi
  rm -rf "$bins"
}
trap stop EXIT
trap 'exit 130' INT TERM

for pkg in "$@"; do
  "$go" test -race -c -o "$bins/$(echo "$pkg" | tr -c 'A-Za-z0-9\n' _).test" "$pkg"
done

for _ in $(seq "$loops"); do
  timeout 1h sh -c 'while :; do :; done' &
  hog+=($!)
done
echo "underload: $loops busy loops on $(nproc) cores beside the tests matching $run"

# The packages at once, as go test runs them; each one's output is printed
# whole when it ends.
pids=()
for pkg in "$@"; do
  name=$(echo "$pkg" | tr -c 'A-Za-z0-9\n' _)
  (
    start=$(date +%s)
    if (cd "$root/$pkg" && "$bins/$name.test" -test.run "$run" -test.count=1 -test.timeout "$limit") >"$bins/$name.out" 2>&1; then
      echo "ok   $pkg $(($(date +%s) - start))s (under load)" >>"$bins/$name.out"
    else
      echo "FAIL $pkg $(($(date +%s) - start))s (under load)" >>"$bins/$name.out"
      exit 1
    fi
  ) &
  pids+=($!)
done
failed=0
i=0
for pkg in "$@"; do
  wait "${pids[$i]}" || failed=1
  cat "$bins/$(echo "$pkg" | tr -c 'A-Za-z0-9\n' _).out"
  i=$((i + 1))
done
exit $failed
