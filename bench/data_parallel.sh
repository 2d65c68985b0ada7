#!/usr/bin/env bash
# Data parallelism's communication (issue 35), each figure against a peer in the same run:
#  1. tally's all-reduce against Open MPI's own MPI_Allreduce loop, 1–256 MiB (bench/mpi/allreduce.cpp);
#  2. the overlap's effect: `tally train` on 2 ranks with 1 MiB gradient buckets (sent during
#     backward) against one bucket as large as the model (sent after it), the median step time and
#     the exposed communication of each, alternating;
#  3. the link's α-β model: each run's measured communication time over the predicted.
# Usage, from the repo root: bash bench/data_parallel.sh [build-dir] [pairs]
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-build}"
case "$build" in /*) ;; *) build="$repo/$build" ;; esac
pairs="${2:-3}"
cmake -S "$repo" -B "$build" -DTALLY_BUILD_BENCH=ON >/dev/null  # a main-job build/ has no benchmarks
ninja -C "$build" -j1 allreduce tally_cli >/dev/null
mpirun=(mpirun --allow-run-as-root --mca btl self,vader -np 2)
work="$build/data_parallel_bench"
rm -rf "$work" && mkdir -p "$work"

echo "== all-reduce: tally against MPI_Allreduce, 2 ranks (bus bandwidth, GB/s) =="
"${mpirun[@]}" "$build/bench/allreduce" "${REPS:-11}" | /usr/bin/python3 -c '
import json, sys
print("%5s %8s %8s %10s" % ("MiB", "tally", "MPI", "tally/MPI"))
for line in sys.stdin:
    d = json.loads(line)
    print("%5d %8.2f %8.2f %10.3f" % (d["mib"], d["tally_bus_gb_s"], d["mpi_bus_gb_s"], d["tally_over_mpi_bandwidth"]))'

echo "== overlap: 2 ranks, 1 MiB buckets against one bucket =="
model=(--d-model 256 --num-layers 6 --num-heads 8 --batch-size 8 --context-length 128 --steps 20 --warmup-steps 2 --checkpoint-interval 1000)
for i in $(seq "$pairs"); do
  for mb in 1 1000; do
    out="$work/bucket${mb}_$i"
    "${mpirun[@]}" "$build/tally" train "${model[@]}" --bucket-mb "$mb" --out "$out" >/dev/null
  done
done
/usr/bin/python3 - "$work" "$pairs" <<'PY'
import json, statistics, sys
work, pairs = sys.argv[1], int(sys.argv[2])
def figures(mb, i):
    s = json.load(open(f"{work}/bucket{mb}_{i}/summary.json"))
    dp = s["data_parallel"]
    return s["step_time"]["measured_s"], dp["exposed_comm_s"], dp["comm_s"], dp["comm_predicted_s"], dp["buckets"]
print(f"{'pair':>4} {'step, 1 MiB':>12} {'step, one':>10} {'ratio':>6} {'exposed, 1 MiB':>15} {'exposed, one':>13} {'comm/predicted (1 MiB, one)':>28}")
ratios = []
for i in range(1, pairs + 1):
    a, b = figures(1, i), figures(1000, i)
    ratios.append(b[0] / a[0])
    print(f"{i:>4} {a[0]*1e3:>10.1f}ms {b[0]*1e3:>8.1f}ms {b[0]/a[0]:>6.3f} {a[1]*1e3:>13.2f}ms {b[1]*1e3:>11.2f}ms "
          f"{a[2]/a[3]:>13.2f} {b[2]/b[3]:>6.2f}   ({a[4]} and {b[4]} buckets)")
print(f"median step-time ratio (one bucket / 1 MiB buckets): {statistics.median(ratios):.3f}")
PY
