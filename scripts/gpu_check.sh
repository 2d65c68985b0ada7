#!/usr/bin/env bash
# Issue 12's checks on a lent GPU machine, in one run (docs/cuda.md): the GPU tests, the lecture's
# GPU sections, tally against that machine's PyTorch, the whole suite, and a build from source
# with the machine's own compilers. Each phase runs under its own time limit, so one hang costs
# that phase alone, and writes its log to $LOGS (default gpu-logs/); this prints each phase's
# status and the end of its log. GPU_CHECK_SECONDS (default 540) is the whole run's budget: a
# phase's limit is cut to what is left of it, and a phase with under 20 s left is not started,
# so the run ends inside a lent machine's per-call limit with every finished phase's log.
#
# Binaries for the GPU checks: build-gpu/ if it is there (a shared-library CUDA build made on
# another machine by scripts/gpu_pack.sh and unpacked from .gpu/prebuilt.tar.xz, which saves the
# minutes nvcc takes), else the build from source below once it finishes.
set -uo pipefail
cd "$(dirname "$0")/.."
logs=${LOGS:-gpu-logs}
mkdir -p "$logs"
start=$SECONDS

budget=${GPU_CHECK_SECONDS:-540}
phase() {  # phase NAME LIMIT_S COMMAND...: run it, log it, report it, never stop the script
  local name=$1 limit=$2 t0=$SECONDS rc left
  shift 2
  left=$((budget - (SECONDS - start)))
  if [ "$left" -lt 20 ]; then echo "== $name: not started, ${left} s of the budget left"; return; fi
  [ "$limit" -gt "$left" ] && limit=$left
  echo "== $name (limit ${limit} s)"
  timeout --kill-after=5 "$limit" "$@" >"$logs/$name.log" 2>&1
  rc=$?
  echo "== $name: exit $rc after $((SECONDS - t0)) s (at $((SECONDS - start)) s)"
  tail -n "${TAIL_LINES:-12}" "$logs/$name.log"
}

{
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader
  nvcc --version | tail -n 1; g++ --version | head -n 1; cmake --version | head -n 1
  python3 -c 'import torch; print("torch", torch.__version__)'
} 2>&1
source scripts/gpu_env.sh || exit 1

# The prebuilt tree names the source folder it was configured in; where that folder is not this
# one, a link from there to here lets its absolute paths (tests, RPATH) resolve.
if [ -f .gpu/prebuilt.tar.xz ]; then
  tar -xJf .gpu/prebuilt.tar.xz
  src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' build-gpu/CMakeCache.txt)
  if [ "$src" != "$PWD" ] && [ ! -e "$src" ]; then mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src"; fi
fi

# The build from source, in the background while the prebuilt binaries run the GPU checks; the
# whole suite then runs on it.
if [ "${GPU_CHECK_BUILD:-1}" = 1 ]; then
  ( t0=$SECONDS
    TALLY_NINJA_ARGS="-k 0" bash scripts/gpu_build.sh -DTALLY_BUILD_BENCH=OFF
    echo "build from source: exit $? after $((SECONDS - t0)) s" ) >"$logs/build.log" 2>&1 &
  build_pid=$!
fi
bin=build-gpu
if [ ! -d build-gpu ]; then
  [ -n "${build_pid:-}" ] && wait "$build_pid"
  unset build_pid
  bin=build-cuda
fi

phase info 30 "$bin/tally" info
phase test_cuda "${LIMIT_TEST_CUDA:-150}" "$bin/tests/test_cuda" --gtest_color=no
phase lecture 60 "$bin/examples/lecture02"
benches() {  # against PyTorch, then the peak probe
  [ -x "$bin/bench/cuda_ops" ] || return 0
  phase bench "${LIMIT_BENCH:-150}" python3 bench/cuda/compare.py "$bin"
  phase peak 90 "$bin/tally" bench peak --device cuda
}
# While a build from source runs, the benchmarks fill the wait; else the suite goes first, as the
# likelier to find something to fix.
[ -n "${build_pid:-}" ] && benches

# The whole suite, two OpenMP threads a test as on the CI machine, on the build from source. The
# GPU machine has no Chromium and reaches no registry to install one: the report's browser test
# skips there. A prebuilt tree lacks the object files and this machine's CMake, which the tests
# that -E names read: they run only on a build made here.
suite=$bin
skip=""
if [ -n "${build_pid:-}" ]; then
  echo "== waiting for the build from source"
  timeout "${LIMIT_BUILD_WAIT:-300}" tail --pid="$build_pid" -f /dev/null
  tail -n 3 "$logs/build.log"
  if [ -x build-cuda/tests/test_cuda ] && grep -q "exit 0" "$logs/build.log"; then suite=build-cuda; fi
fi
[ "$suite" = build-gpu ] && skip="kernel_(pass|isa)_symbols|cpu_kernels_bad_env|install_consumer|io_inspect_bad"
OMP_NUM_THREADS=2 TALLY_ALLOW_SKIP_CHROMIUM=1 TAIL_LINES=40 phase ctest "${LIMIT_CTEST:-300}" \
  ctest --test-dir "$suite" -j "$(nproc)" --timeout 200 --output-on-failure ${skip:+-E "$skip"}
[ -z "${build_pid:-}" ] && benches
echo "== done after $((SECONDS - start)) s"
