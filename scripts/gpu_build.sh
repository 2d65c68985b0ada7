#!/usr/bin/env bash
# On a GPU machine with the CUDA toolkit, CMake and a C++20 compiler but no package registry
# (docs/cuda.md): unpack the Debian packages scripts/gpu_deps.sh fetched into a private prefix
# (.deps/prefix; nothing is installed system-wide) and build tally with CUDA into build-cuda/.
# Afterwards, `source .deps/env.sh` sets LD_LIBRARY_PATH for running the binaries.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
prefix=$root/.deps/prefix
if [ ! -d "$prefix/usr" ]; then
  ls .deps/debs/*.deb >/dev/null || { echo "gpu_build: no .deps/debs/*.deb: run scripts/gpu_deps.sh where apt-get works"; exit 1; }
  for deb in .deps/debs/*.deb; do dpkg -x "$deb" "$prefix"; done
fi
libdir=$prefix/usr/lib/x86_64-linux-gnu
# LD_LIBRARY_PATH to run the binaries; CMAKE_PREFIX_PATH for projects that find_package(tally) (and
# through it oneDNN and fmt), the install test among them.
cat > .deps/env.sh <<ENV
export LD_LIBRARY_PATH=$libdir\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}
export CMAKE_PREFIX_PATH=$prefix/usr\${CMAKE_PREFIX_PATH:+:\$CMAKE_PREFIX_PATH}
ENV
source .deps/env.sh
# The Python with PyTorch there (for the differential tests and benchmarks) is the first python3 on PATH.
python=$(command -v python3 || echo /usr/bin/python3)
cmake -S . -B build-cuda -G Ninja -DCMAKE_BUILD_TYPE=Release -DTALLY_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES="${TALLY_CUDA_ARCHITECTURES:-native}" \
  -DCMAKE_PREFIX_PATH="$prefix/usr" -DTALLY_TEST_PYTHON="$python" "$@"
cmake --build build-cuda -j "$(nproc)"
