# Sourced by the GPU-machine scripts (docs/cuda.md): unpack the Debian packages that
# scripts/gpu_deps.sh fetched into a private prefix, .deps/prefix (nothing is installed
# system-wide), and export the paths to build against and run with them. Writes the same
# exports to .deps/env.sh for a shell to source later.
gpu_env_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
gpu_env_prefix=$gpu_env_root/.deps/prefix
if [ ! -d "$gpu_env_prefix/usr" ]; then
  if ! ls "$gpu_env_root"/.deps/debs/*.deb >/dev/null 2>&1; then
    echo "no .deps/debs/*.deb: run scripts/gpu_deps.sh where apt-get works" >&2
    return 1
  fi
  for deb in "$gpu_env_root"/.deps/debs/*.deb; do dpkg -x "$deb" "$gpu_env_prefix"; done
fi
# LD_LIBRARY_PATH to run the binaries; CMAKE_PREFIX_PATH for projects that find_package(tally)
# (and through it oneDNN and fmt), the install test among them.
cat > "$gpu_env_root/.deps/env.sh" <<ENV
export LD_LIBRARY_PATH=$gpu_env_prefix/usr/lib/x86_64-linux-gnu\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}
export CMAKE_PREFIX_PATH=$gpu_env_prefix/usr\${CMAKE_PREFIX_PATH:+:\$CMAKE_PREFIX_PATH}
ENV
source "$gpu_env_root/.deps/env.sh"
