# Sourced by the benchmarks that time PyTorch 1.13 beside tally: `peer_setup BUILD TARGET...` makes
# BUILD absolute (against the repository), installs Debian's OpenBLAS when it is missing (without
# it PyTorch's float32 matmuls run on the reference BLAS), turns the benchmarks on in BUILD and
# builds the targets, one job at a time.
# Sets `repo` and `build`.
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

peer_setup() {
  build="$1"
  shift
  case "$build" in /*) ;; *) build="$repo/$build" ;; esac
  if ! dpkg -s libopenblas0-pthread >/dev/null 2>&1; then
    apt-get install -y -q libopenblas0-pthread >/dev/null
  fi
  cmake -S "$repo" -B "$build" -DTALLY_BUILD_BENCH=ON >/dev/null  # a main-job build/ has no benchmarks
  ninja -C "$build" -j1 "$@"
}
