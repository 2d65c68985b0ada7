#!/usr/bin/env bash
# On a GPU machine with the CUDA toolkit, CMake and a C++20 compiler but no package registry
# (docs/cuda.md): unpack the Debian packages scripts/gpu_deps.sh fetched into a private prefix
# and build tally with CUDA into build-cuda/. Afterwards, `source .deps/env.sh` sets
# LD_LIBRARY_PATH for running the binaries. Extra arguments go to CMake's configure step.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/gpu_env.sh
# The Python with PyTorch there (for the differential tests and benchmarks) is the first python3 on PATH.
python=$(command -v python3 || echo /usr/bin/python3)
# CMAKE_POLICY_VERSION_MINIMUM: CMake 4 refuses package config files written for CMake before
# 3.5, and some of Debian 12's are.
cmake -S . -B build-cuda -G Ninja -DCMAKE_BUILD_TYPE=Release -DTALLY_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES="${TALLY_CUDA_ARCHITECTURES:-native}" -DCMAKE_POLICY_VERSION_MINIMUM=3.5 \
  -DCMAKE_PREFIX_PATH="$PWD/.deps/prefix/usr" -DTALLY_TEST_PYTHON="$python" -DTALLY_BUILD_TESTS=ON -DTALLY_BUILD_BENCH=ON "$@"
cmake --build build-cuda -j "${TALLY_BUILD_JOBS:-$(nproc)}" ${TALLY_NINJA_ARGS:+-- $TALLY_NINJA_ARGS}
