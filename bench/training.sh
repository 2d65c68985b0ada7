#!/usr/bin/env bash
# Training steps, tally against PyTorch 1.13 in the same run: the lecture's Cruncher and a small
# GPT, AdamW, 2 threads each, in float32 (issue 9's targets) and with the forward in bfloat16
# autocast (issue 11's: amp::AutocastGuard against torch.autocast("cpu", dtype=torch.bfloat16)).
# Installs Debian's OpenBLAS first so that PyTorch's float32 matmuls do not run on the reference
# BLAS. Usage, from the repo root: bash bench/training.sh [build-dir] [steps] [precisions]
# (precisions: "fp32 bf16" by default).
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/torch_peer.sh"
steps="${2:-10}"
precisions="${3:-fp32 bf16}"
peer_setup "${1:-build}" train_step

export OMP_NUM_THREADS=2
for workload in cruncher gpt; do
  results=()
  for precision in $precisions; do
    t=$("$build/bench/train_step" "$workload" "$steps" "$precision")
    p=$(/usr/bin/python3 "$repo/bench/train_step.py" "$workload" "$steps" "$precision")
    echo "$t"
    echo "$p"
    results+=("$t" "$p")
  done
  /usr/bin/python3 - "${results[@]}" <<'PY'
import json, sys
rows = [json.loads(a) for a in sys.argv[1:]]
tally = {r["precision"]: r for r in rows if r["framework"] == "tally"}
torch = {r["precision"]: r for r in rows if r["framework"] == "torch"}
for prec, t in tally.items():
    p = torch[prec]
    peak_key = "bf16_peak_flops" if prec == "bf16" and t["bf16_peak_flops"] > 0 else "fma_peak_flops"
    peak = t[peak_key]
    print(f"{t['workload']} {prec}: tally {t['steps_per_sec']:.3f} steps/s ({t['tokens_per_sec']:.0f} tokens/s), "
          f"torch {p['steps_per_sec']:.3f} steps/s ({p['tokens_per_sec']:.0f} tokens/s) -> {t['steps_per_sec'] / p['steps_per_sec']:.2f}x; "
          f"tally at {100 * t['flops_per_sec'] / peak:.1f}% of the measured {'bfloat16' if peak_key.startswith('bf16') else 'float32 FMA'} "
          f"peak ({peak / 1e9:.0f} GFLOP/s), torch at {100 * t['flops_per_step'] * p['steps_per_sec'] / peak:.1f}% (same FLOPs); "
          f"peak RSS tally {t['peak_rss_mib']:.0f} MiB, torch {p['peak_rss_mib']:.0f} MiB")
if "fp32" in tally and "bf16" in tally:
    print(f"{rows[0]['workload']}: tally bf16 / tally fp32 = {tally['bf16']['steps_per_sec'] / tally['fp32']['steps_per_sec']:.2f}x; "
          f"torch bf16 / torch fp32 = {torch['bf16']['steps_per_sec'] / torch['fp32']['steps_per_sec']:.2f}x")
PY
done
