#!/usr/bin/env bash
# One command for the foundation benchmarks: build what compare.py runs (in the given build directory,
# one job at a time so as not to starve the other builds on a 2-core machine), then run tally against
# PyTorch. Usage, from the repo root: bash bench/run_all.sh [build-dir] [compare.py options...]
#   e.g. bash bench/run_all.sh build-bench --rounds 5 --markdown table.md
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-build-bench}"
shift || true
case "$build" in /*) ;; *) build="$repo/$build" ;; esac

if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTALLY_BUILD_BENCH=ON
fi
ninja -C "$build" -j1 tally_ops views

# Debian's interpreter: it has python3-torch; the python3 first on PATH may not.
exec /usr/bin/python3 "$repo/bench/compare.py" --build-dir "$build" "$@"
