#!/usr/bin/env bash
# Decoding with a KV cache, tally against PyTorch 1.13 in the same run (bench/decode.cpp,
# bench/decode.py): decode tokens/s at batch 1 and 16 for the small GPT and GPT-2 small's shape,
# 2 threads each, and tally's batch-1 decode against the weights' bound (the measured read
# bandwidth over the weights' bytes: every step reads every weight once). Installs Debian's
# OpenBLAS first so that PyTorch's float32 matmuls do not run on the reference BLAS, and times
# PyTorch both with OpenBLAS's 2 threads (PyTorch's own at 1) and with PyTorch's 2 (OpenBLAS at 1),
# keeping the faster: two threading runtimes on 2 cores fight (a pitfall seen on these machines).
# Usage, from the repo root: bash bench/decode.sh [build-dir] [new-tokens]
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/torch_peer.sh"
tokens="${2:-64}"
peer_setup "${1:-build}" decode

export OMP_NUM_THREADS=2
for shape in small gpt2; do
  for batch in 1 16; do
    t=$("$build/bench/decode" "$shape" "$batch" "$tokens")
    p1=$(OPENBLAS_NUM_THREADS=2 TORCH_THREADS=1 /usr/bin/python3 "$repo/bench/decode.py" "$shape" "$batch" "$tokens")
    p2=$(OPENBLAS_NUM_THREADS=1 TORCH_THREADS=2 /usr/bin/python3 "$repo/bench/decode.py" "$shape" "$batch" "$tokens")
    /usr/bin/python3 - "$t" "$p1" "$p2" <<'PY'
import json, sys
t, p1, p2 = (json.loads(a) for a in sys.argv[1:])
p = max(p1, p2, key=lambda r: r["decode_tokens_per_sec"])
bound = t["read_bytes_per_sec"] / t["weight_bytes"] * t["batch"]
print(f"{t['shape']} batch {t['batch']}: tally {t['decode_tokens_per_sec']:.1f} tok/s, torch {p['decode_tokens_per_sec']:.1f} tok/s "
      f"(OpenBLAS threads: {p1['decode_tokens_per_sec']:.1f}, PyTorch's: {p2['decode_tokens_per_sec']:.1f}) "
      f"-> {t['decode_tokens_per_sec'] / p['decode_tokens_per_sec']:.2f}x; weights {t['weight_bytes'] / 2**20:.0f} MiB, "
      f"read bandwidth {t['read_bytes_per_sec'] / 1e9:.1f} GB/s -> bound {bound:.1f} tok/s: tally at "
      f"{100 * t['decode_tokens_per_sec'] / bound:.0f}%, torch at {100 * p['decode_tokens_per_sec'] / bound:.0f}%")
PY
  done
done
