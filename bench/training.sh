#!/usr/bin/env bash
# Training steps, tally against PyTorch 1.13 in the same run (issue 9's targets): the lecture's
# Cruncher and a small GPT, float32, AdamW, 2 threads each. Installs Debian's OpenBLAS first so
# that PyTorch's float32 matmuls do not run on the reference BLAS.
# Usage, from the repo root: bash bench/training.sh [build-dir] [steps]
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-build}"
steps="${2:-10}"
case "$build" in /*) ;; *) build="$repo/$build" ;; esac

if ! dpkg -s libopenblas0-pthread >/dev/null 2>&1; then
  apt-get install -y -q libopenblas0-pthread >/dev/null
fi
ninja -C "$build" -j1 train_step

export OMP_NUM_THREADS=2
for workload in cruncher gpt; do
  t=$("$build/bench/train_step" "$workload" "$steps")
  p=$(/usr/bin/python3 "$repo/bench/train_step.py" "$workload" "$steps")
  echo "$t"
  echo "$p"
  /usr/bin/python3 - "$t" "$p" <<'PY'
import json, sys
t, p = json.loads(sys.argv[1]), json.loads(sys.argv[2])
print(f"{t['workload']}: tally {t['steps_per_sec']:.3f} steps/s, torch {p['steps_per_sec']:.3f} steps/s "
      f"-> {t['steps_per_sec'] / p['steps_per_sec']:.2f}x; tally at {100 * t['flops_per_sec'] / t['fma_peak_flops']:.1f}% "
      f"of the measured float32 FMA peak ({t['fma_peak_flops'] / 1e9:.0f} GFLOP/s), torch at "
      f"{100 * t['flops_per_step'] * p['steps_per_sec'] / t['fma_peak_flops']:.1f}% (same FLOPs); "
      f"peak RSS tally {t['peak_rss_mib']:.0f} MiB, torch {p['peak_rss_mib']:.0f} MiB")
PY
done
