#!/usr/bin/env bash
# Set up a fresh Debian 12 machine for tally's main job and build it (Release, for this CPU:
# -march=native; -DTALLY_NATIVE=OFF for a portable build, AVX2 and AVX-512 kernels chosen at run
# time) into build/: the library, the `tally` command and the examples, with the CUDA device when a CUDA
# toolkit is installed (TALLY_CUDA=AUTO; docs/cuda.md). It installs only what those need, with
# apt-get (run as root); scripts/test.sh installs the tests' packages and builds the tests and
# benchmarks into the same build/. Safe to re-run: installs and builds are incremental.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  cmake ninja-build g++ pkg-config
  libdnnl-dev            # oneDNN: matmul kernels
  ocl-icd-opencl-dev     # Debian's oneDNN CMake package links OpenCL (a recommends, not a depends)
  nlohmann-json3-dev libcli11-dev libfmt-dev
  libxxhash-dev          # xxHash: checkpoint checksums (XXH3-64, tens of GB/s, 2^-64 to miss a flip)
  libjs-chart.js         # Chart.js: the report page's charts, inlined into the page
)
source scripts/install_missing.sh
install_missing setup "${packages[@]}"

# A new build/ is built for this CPU alone (-march=native: each kernel source compiled once, not
# three times, the main job's build a third shorter); scripts/test.sh configures it portable, as its
# runs of the smaller kernel sets need, and a build/ configured before keeps its choice, so that
# the two commands do not rebuild each other's. The tests and benchmarks are scripts/test.sh's too:
# a build that has them keeps them. Arguments go to CMake's configure step (-DTALLY_CUDA=OFF, say).
first=()
[ -f build/CMakeCache.txt ] || first=(-DTALLY_NATIVE=ON)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "${first[@]}" "$@"
cmake --build build -j "$(nproc)"
