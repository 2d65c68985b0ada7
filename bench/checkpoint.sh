#!/usr/bin/env bash
# Checkpoint save and load of the small GPT against this disk's own bandwidth, in the same folder
# and the same run (issue 10): dd writes the same number of bytes with an fsync at the end (as a
# checkpoint save does) and reads them back. Both reads find the file in the page cache, as a
# load right after a save does; the writes both end on the disk. checkpoint_io also times the same
# save and load without checksums (issue 34), and the last line says what they cost.
# Usage, from the repo root: bash bench/checkpoint.sh [build-dir] [folder]
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-build}"
case "$build" in /*) ;; *) build="$repo/$build" ;; esac
dir="${2:-$build/checkpoint_bench}"
cmake -S "$repo" -B "$build" -DTALLY_BUILD_BENCH=ON >/dev/null  # a main-job build/ has no benchmarks
ninja -C "$build" -j1 checkpoint_io >/dev/null
mkdir -p "$dir"

t=$("$build/bench/checkpoint_io" "$dir/tally" "${REPEATS:-5}")
bytes=$(/usr/bin/python3 -c 'import json,sys; print(json.loads(sys.argv[1])["bytes"])' "$t")
mib=$(( (bytes + 1048575) / 1048576 ))
best_write=0
best_read=0
for _ in 1 2 3; do
  start=$(date +%s.%N)
  dd if=/dev/zero of="$dir/dd.bin" bs=1M count="$mib" conv=fsync status=none
  end=$(date +%s.%N)
  w=$(/usr/bin/python3 -c "print($mib * 1048576 / ($end - $start))")
  start=$(date +%s.%N)
  dd if="$dir/dd.bin" of=/dev/null bs=1M status=none
  end=$(date +%s.%N)
  r=$(/usr/bin/python3 -c "print($mib * 1048576 / ($end - $start))")
  best_write=$(/usr/bin/python3 -c "print(max($best_write, $w))")
  best_read=$(/usr/bin/python3 -c "print(max($best_read, $r))")
  rm -f "$dir/dd.bin"
done
rmdir "$dir" 2>/dev/null || true
echo "$t"
/usr/bin/python3 - "$t" "$best_write" "$best_read" <<'PY'
import json, sys
t, w, r = json.loads(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
print(f"checkpoint of {t['tensors']} tensors, {t['bytes'] / 2**20:.1f} MiB: "
      f"save {t['save_bytes_per_s'] / 2**20:.0f} MiB/s = {100 * t['save_bytes_per_s'] / w:.0f}% of dd's fsync'd write ({w / 2**20:.0f} MiB/s); "
      f"load {t['load_bytes_per_s'] / 2**20:.0f} MiB/s = {100 * t['load_bytes_per_s'] / r:.0f}% of dd's read ({r / 2**20:.0f} MiB/s)")
print(f"checksums (xxh3-64, written and verified), medians: save {1e3 * t['save_median_s']:.1f} ms against "
      f"{1e3 * t['save_unchecked_median_s']:.1f} ms without ({100 * t['save_checksum_cost']:+.1f}%); load {1e3 * t['load_median_s']:.1f} ms "
      f"against {1e3 * t['load_unchecked_median_s']:.1f} ms without ({100 * t['load_checksum_cost']:+.1f}%); "
      f"hashing alone {1e3 * t['hash_median_s']:.2f} ms ({t['bytes'] / t['hash_median_s'] / 1e9:.0f} GB/s) = "
      f"{100 * t['hash_median_s'] / t['save_unchecked_median_s']:.1f}% of a save without")
PY
