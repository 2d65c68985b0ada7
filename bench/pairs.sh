#!/usr/bin/env bash
# Interleaved pairs, tally then PyTorch 1.13, on one training workload: on a shared machine whose
# speed drifts by ±10% within minutes, a ratio is only fair between runs made back to back, and
# one pair is only a sample. Prints each pair's rate and ratio, then the median, the lowest and
# the highest ratio. Usage, from the repo root, after bench/training.sh has built train_step:
#   bash bench/pairs.sh [build-dir] [pairs] [workload] [precision] [steps]
# (defaults: build 8 gpt bf16 10). The rate compared is tokens/s (steps/s for the Cruncher's
# fixed batch gives the same ratio).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-build}"
pairs="${2:-8}"
workload="${3:-gpt}"
precision="${4:-bf16}"
steps="${5:-10}"
case "$build" in /*) ;; *) build="$repo/$build" ;; esac

export OMP_NUM_THREADS=2
results=()
for ((i = 0; i < pairs; i++)); do
  results+=("$("$build/bench/train_step" "$workload" "$steps" "$precision")")
  results+=("$(/usr/bin/python3 "$repo/bench/train_step.py" "$workload" "$steps" "$precision")")
done
/usr/bin/python3 - "${results[@]}" <<'PY'
import json, statistics, sys
rows = [json.loads(a) for a in sys.argv[1:]]
ratios = []
for t, p in zip(rows[0::2], rows[1::2]):
    ratios.append(t["tokens_per_sec"] / p["tokens_per_sec"])
    print(f"tally {t['tokens_per_sec']:,.0f} / torch {p['tokens_per_sec']:,.0f} tokens/s -> {ratios[-1]:.2f}x")
print(f"{rows[0]['workload']} {rows[0]['precision']}, {len(ratios)} pairs: median {statistics.median(ratios):.2f}x "
      f"(lowest {min(ratios):.2f}x, highest {max(ratios):.2f}x)")
PY
