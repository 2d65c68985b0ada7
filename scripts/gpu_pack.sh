#!/usr/bin/env bash
# Where nvcc is installed but no GPU is (a development machine): build tally for Hopper as a shared
# library into build-gpu/ and pack the binaries, without object files, into .gpu/prebuilt.tar.xz.
# scripts/gpu_check.sh unpacks it on a lent GPU machine, so that the GPU's minutes go to tests,
# not to nvcc. The GPU machine's python3 is the one with PyTorch, hence TALLY_TEST_PYTHON=python3.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DTALLY_CUDA=ON -DBUILD_SHARED_LIBS=ON \
  -DCMAKE_CUDA_ARCHITECTURES="${TALLY_CUDA_ARCHITECTURES:-90}" -DTALLY_TEST_PYTHON:STRING=python3 >/dev/null
cmake --build build-gpu
mkdir -p .gpu
tar -cf - --exclude="*.o" --exclude=.ninja_deps --exclude=.ninja_log build-gpu | xz -T0 >.gpu/prebuilt.tar.xz
ls -l .gpu/prebuilt.tar.xz
