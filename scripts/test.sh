#!/usr/bin/env bash
# Run the whole test suite: the Release build (build/) with the CPU kernels it picks, again with
# each smaller kernel set forced (TALLY_CPU_KERNELS; Note [CPU kernel dispatch] in
# tally/kernels/cpu/dispatch.h), then a second configuration under AddressSanitizer +
# UndefinedBehaviorSanitizer (build-asan/), a third under ThreadSanitizer for the areas a backward
# pass touches (build-tsan/), then fuzzes the safetensors reader for a minute
# (tests/io/run_fuzz.sh, build-fuzz/). Expects scripts/setup.sh to have run. Exits non-zero
# if any run fails.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

# The packages the tests and benchmarks need and scripts/setup.sh (the main job's) does not install:
# GoogleTest and Google Benchmark; PyTorch and numpy, the differential tests' reference; clang and
# libFuzzer for the safetensors fuzzer (tests/io/run_fuzz.sh), headless Chromium for the report
# test (tests/report/check_report.py), Open MPI for data-parallel training (tests/dist/data_parallel.py).
test_packages=(libgtest-dev libgmock-dev libbenchmark-dev python3-torch python3-numpy
               clang libclang-rt-14-dev chromium openmpi-bin libopenmpi-dev)
source scripts/install_missing.sh
install_missing test "${test_packages[@]}"
# build/ was configured by scripts/setup.sh for the main job, before Open MPI was here: configure
# it again with the tests and benchmarks, so that they and the MPI backend (tally/dist/mpi) join,
# and portable (TALLY_NATIVE=OFF: every kernel set, for the forced runs below; a build/ that
# setup.sh made for this CPU alone is built again once).
cmake -S . -B build -DTALLY_BUILD_TESTS=ON -DTALLY_BUILD_BENCH=ON -DTALLY_NATIVE=OFF >/dev/null
cmake --build build -j "$jobs"

echo "== Release tests =="
ctest --test-dir build --output-on-failure -j "$jobs"

# The sets below the one this CPU picks (none in a -march=native build, which has one set).
kernels=$(build/tally info | sed -n 's/^  kernels  *//p')
case "$kernels" in
  "avx512 (chosen from CPU features)") smaller="avx2 baseline" ;;
  "avx2 (chosen from CPU features)") smaller="baseline" ;;
  *) smaller="" ;;
esac
# The forced runs leave out what does not depend on the kernel set and takes long (the install
# check, the symbol listings, the CLI's process-level tests) or compares with PyTorch at length
# (the layer and loss references, which the first run covers): the suite stays well under 15 minutes.
skip="install_consumer|kernel_pass_symbols|kernel_isa_symbols|LayersVsTorch|LossesVsTorch|Cuda|train_|report_|io_inspect|dist_"
for set in $smaller; do
  echo "== Release tests, TALLY_CPU_KERNELS=$set =="
  TALLY_CPU_KERNELS=$set ctest --test-dir build --output-on-failure -j "$jobs" -E "$skip"
done

echo "== AddressSanitizer + UndefinedBehaviorSanitizer tests =="
# CUDA stays out of this configuration: the sanitizers do not instrument device code, and the
# CUDA runtime and ASan disagree about the shadow memory (docs/cuda.md). Built for this CPU alone
# (TALLY_NATIVE): the run executes this CPU's kernel set only, so the other sets' passes would be
# compiled and never run; the dispatch between sets is what the Release runs above test.
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DTALLY_SANITIZE=ON -DTALLY_NATIVE=ON -DTALLY_BUILD_TESTS=ON -DTALLY_BUILD_BENCH=OFF \
  -DTALLY_CUDA=OFF
cmake --build build-asan -j "$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j "$jobs"

echo "== ThreadSanitizer tests (core, autograd, ops, nn) =="
# A third configuration for Note [Concurrent backward] (tally/core/autograd_meta.h): the library
# and the test binaries of the areas a backward pass touches, built for this CPU alone (one kernel
# set: what is shared between threads does not depend on it). libgomp is not instrumented, so
# OpenMP runs one thread per test thread and the threads ThreadSanitizer watches are the tests'.
tsan_areas=(core autograd ops nn)
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DTALLY_SANITIZE_THREAD=ON -DTALLY_NATIVE=ON -DTALLY_BUILD_TESTS=ON \
  -DTALLY_BUILD_BENCH=OFF -DTALLY_CUDA=OFF
cmake --build build-tsan -j "$jobs" --target "${tsan_areas[@]/#/test_}"
# Random.SameValuesWithOneThreadOrTwo sets two OpenMP threads itself: what libgomp synchronises is
# invisible to ThreadSanitizer, which reports the worker's reuse of the caller's stack as a race.
OMP_NUM_THREADS=1 TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
  ctest --test-dir build-tsan --output-on-failure -j "$jobs" -L "^($(IFS='|'; echo "${tsan_areas[*]}"))\$" \
  -E "^Random\.SameValuesWithOneThreadOrTwo\$"

echo "== safetensors reader fuzzer (60 s) =="
tests/io/run_fuzz.sh build-fuzz 60
