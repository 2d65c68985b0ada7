#!/usr/bin/env bash
# For a GPU machine that reaches no package registry (docs/cuda.md): fetch, on a Debian 12 machine
# that does, the .deb files of the libraries tally builds against, into .deps/debs/. Carry that
# folder to the GPU machine and run scripts/gpu_build.sh there.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .deps/debs
cd .deps/debs
apt-get download \
  libdnnl-dev libdnnl2 \
  libfmt-dev libfmt9 libcli11-dev nlohmann-json3-dev \
  libgtest-dev libgmock-dev libbenchmark-dev libbenchmark1debian libxxhash-dev libxxhash0 libjs-chart.js \
  ocl-icd-opencl-dev ocl-icd-libopencl1 opencl-c-headers opencl-clhpp-headers
ls -l
