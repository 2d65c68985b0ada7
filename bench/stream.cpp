// STREAM-style DRAM bandwidth on all usable cores (bytes read + written; best of the repetitions).
// Usage: stream [MiB per array, default 256: large enough to miss the last-level cache]
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "tally/machine/cpu_info.h"
#include "tally/machine/peak_probe.h"

int main(int argc, char** argv) {
  namespace machine = tally::machine;
  const int64_t mib = argc > 1 ? std::atoll(argv[1]) : 256;
  const int threads = machine::cpu_info().usable_cores;
  const machine::StreamResult r = machine::measure_stream(mib << 20, threads, 5);
  std::printf("stream %lld MiB x 3 arrays, %d threads: read %.1f, copy %.1f, scale %.1f, add %.1f, triad %.1f GB/s\n",
              static_cast<long long>(mib), threads, r.read_bytes_per_sec / 1e9, r.copy_bytes_per_sec / 1e9,
              r.scale_bytes_per_sec / 1e9, r.add_bytes_per_sec / 1e9, r.triad_bytes_per_sec / 1e9);
  return 0;
}
